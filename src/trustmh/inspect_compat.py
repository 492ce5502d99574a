"""The one place trustmh touches Inspect's private API (`inspect_ai._util`), pinned with Inspect's version.

Each function says what it needs and falls back to something safe where Inspect moves the thing it
wraps. An Inspect upgrade is checked here first (and by the golden-log test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def fs_options(url: str) -> dict[str, Any]:
    """The fsspec options Inspect uses for `url` (so trustmh's run files and Inspect's logs agree)."""
    try:
        from inspect_ai._util.file import default_fs_options
    except ImportError:  # pragma: no cover  a moved helper must not make storage unusable
        return {"use_listings_cache": False}
    return dict(default_fs_options(url))


def trace_dir() -> Path | None:
    """Where Inspect writes its trace logs, or None where that cannot be known."""
    try:
        from inspect_ai._util.trace import inspect_trace_dir
    except ImportError:  # pragma: no cover
        return None
    return Path(inspect_trace_dir())


def model_provider_known(provider: str) -> bool:
    """Whether Inspect's registry holds a model API of this name (e.g. "openai", "gguf")."""
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    return bool(registry_find(lambda info: info.type == "modelapi" and registry_unqualified_name(info) == provider))


def prerequisite_error(message: str) -> Exception:
    """An exception Inspect prints as its message alone (one clear line, no traceback)."""
    from inspect_ai._util.error import PrerequisiteError

    return PrerequisiteError(message)
