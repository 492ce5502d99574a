"""Prompt and rubric templates, in this project's own words, stored as text files.

Each pillar keeps its templates in `trustmh/pillars/<pillar>/prompts/`; templates shared by several
pillars (the support judge) live in `trustmh/scoring/prompts/`. Template names are unique across the
package, so a sub-task asks for a template by name and this module finds its file.

Templates use `string.Template` placeholders (`$name` / `${name}`) so JSON braces need no escaping.
Every rendered prompt can be traced to its template by `template_sha256(name)`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from importlib.abc import Traversable
from string import Template

from trustmh.core import TrustmhError


@cache
def _index() -> dict[str, Traversable]:
    """Template name → file, over every prompts/ folder of the package (read once per process)."""
    root = resources.files("trustmh")
    folders = [root / "scoring" / "prompts"]
    folders += [pillar / "prompts" for pillar in sorted((root / "pillars").iterdir(), key=lambda p: p.name)
                if pillar.is_dir()]
    index: dict[str, Traversable] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            if path.name.endswith(".txt"):
                name = path.name[: -len(".txt")]
                if name in index:
                    raise TrustmhError(f"prompt template {name!r} is defined twice")
                index[name] = path
    return index


@cache
def load_template(name: str) -> str:
    path = _index().get(name)
    if path is None:
        raise TrustmhError(f"prompt template {name!r} not found (trustmh/pillars/<pillar>/prompts/{name}.txt)")
    return path.read_text(encoding="utf-8")


def render(name: str, **fields: object) -> str:
    """Fill a template; a missing field is a programming error and raises KeyError naming it."""
    return Template(load_template(name)).substitute({k: str(v) for k, v in fields.items()})


def template_sha256(name: str) -> str:
    return hashlib.sha256(load_template(name).encode("utf-8")).hexdigest()
