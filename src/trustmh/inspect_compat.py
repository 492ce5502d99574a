"""The one place trustmh touches Inspect's private API (`inspect_ai._util`), pinned with Inspect's version.

Each function says what it needs and falls back to something safe where Inspect moves the thing it
wraps. An Inspect upgrade is checked here first (and by the golden-log test).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def cache_urls_moved(moved: dict[str, str]) -> Iterator[None]:
    """While the block runs, Inspect's response cache keys a call to NEW_URL as if it went to OLD_URL, for
    each `moved[NEW_URL] = OLD_URL` (`run --endpoint-moved`: the user says the same model answers at the new
    address). Inspect puts the provider's base URL into every cache key (`inspect_ai.model._cache`), so
    without this a moved endpoint finds none of its cached replies. URLs compare without a trailing `/`."""
    if not moved:
        yield
        return
    from inspect_ai.model import _cache

    original = _cache._cache_key
    table = {new.rstrip("/"): old.rstrip("/") for new, old in moved.items()}

    def keyed(entry: Any) -> str:
        old = table.get(str(entry.base_url or "").rstrip("/"))
        if old is None:
            return original(entry)
        new, entry.base_url = entry.base_url, old
        try:
            return original(entry)
        finally:
            entry.base_url = new

    _cache._cache_key = keyed
    try:
        yield
    finally:
        _cache._cache_key = original
