"""Prompt and rubric templates, in this project's own words, stored as text files beside this module.

Templates use `string.Template` placeholders (`$name` / `${name}`) so JSON braces need no escaping.
Every rendered prompt can be traced to its template by `template_sha256(name)`.
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib import resources
from string import Template

from trustmh.core import TrustmhError


@cache
def load_template(name: str) -> str:
    path = resources.files("trustmh.prompts").joinpath(f"{name}.txt")
    if not path.is_file():
        raise TrustmhError(f"prompt template {name!r} not found (trustmh/prompts/{name}.txt)")
    return path.read_text(encoding="utf-8")


def render(name: str, **fields: object) -> str:
    """Fill a template; a missing field is a programming error and raises KeyError naming it."""
    return Template(load_template(name)).substitute({k: str(v) for k, v in fields.items()})


def template_sha256(name: str) -> str:
    return hashlib.sha256(load_template(name).encode("utf-8")).hexdigest()
