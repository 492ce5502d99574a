"""The dossier's leak check (docs/dossier.md#leaks): nothing private leaves in a file meant for publication.

What counts as private:

* **the run's key values**: every value `trustmh.run.secrets.secret_values` scrubs from a run (the
  `*_API_KEY`/`*_TOKEN`… variables, the variables an endpoint file's headers reference);
* **key-shaped strings**: text that looks like a provider's key or an authorization header, whether or not
  this machine holds its value (a product that echoes a key it was configured with elsewhere);
* **private texts**: the product's system prompt (`-O system_prompt=FILE` of the run) and every `--private
  FILE`, whole and line by line (a reply that quotes one line of a prompt quotes it all the same).

A hit is either redacted (`[REDACTED]`, the run's own mark, `trustmh.redaction`) or refuses the dossier; either
way it is told in one line naming the file and the field (a JSON path, or a line of a page), never the value.
Plain Python on decoded JSON and text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from trustmh.redaction import MIN_SECRET_LEN, REDACTED, redact

# A line of a private text shorter than this is not searched on its own ("Be kind." is in many replies); the
# whole text always is.
MIN_PRIVATE_LINE = 24

# Shapes of provider keys and credentials: each a prefix a provider documents for its keys followed by the
# key's body, or a header or assignment that carries one. Why each: a product may echo a key this machine
# never held, so a value list alone cannot find it.
KEY_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an authorization header", re.compile(r"(?i)\b(?:authorization|proxy-authorization)\b[\"']?\s*[:=]\s*[\"']?"
                                           r"(?:bearer|basic|token)?\s*[A-Za-z0-9._~+/=-]{8,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{16,}")),
    ("a key-shaped string", re.compile(r"\b(?:sk|pk|rk)-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_]{16,}")),
    ("a key-shaped string", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a key-shaped string", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a key-shaped string", re.compile(r"\b(?:ghp|gho|ghs|ghu|github_pat|hf|xox[abprs]|glpat)[-_][A-Za-z0-9_-]{20,}")),
    ("credentials in a URL", re.compile(r"\b[a-z][a-z0-9+.-]*://[^/\s:@]+:[^/\s@]+@")),
    ("a key assignment", re.compile(r"(?i)\b[A-Z0-9_]*(?:api[_-]?key|secret|token|password)\b[\"']?\s*[:=]\s*"
                                    r"[\"']?[A-Za-z0-9._~+/-]{16,}")),
)


@dataclass(frozen=True)
class Leak:
    file: str
    field: str
    kind: str

    def line(self) -> str:
        return f"{self.file}: {self.field}: holds {self.kind}"


@dataclass(frozen=True)
class Private:
    """The values to search for, each with what it is (said in a leak's line, never the value itself)."""

    values: tuple[tuple[str, str], ...]  # (value, what it is), longest first

    @classmethod
    def of(cls, secrets: Iterable[str], texts: Iterable[tuple[str, str]]) -> Private:
        """`secrets`: the run's key values; `texts`: (text, what it is), searched whole and line by line."""
        found: dict[str, str] = {}
        for value in secrets:
            if len(value) >= MIN_SECRET_LEN:
                found.setdefault(value, "a key value the run was given")
        for text, what in texts:
            whole = text.strip()
            if len(whole) >= MIN_SECRET_LEN:
                found.setdefault(whole, what)
            for line in whole.splitlines():
                if len(line.strip()) >= MIN_PRIVATE_LINE:
                    found.setdefault(line.strip(), f"a line of {what}")
        return cls(tuple(sorted(found.items(), key=lambda kv: len(kv[0]), reverse=True)))


def text_hits(text: str, private: Private) -> list[str]:
    """What private thing(s) `text` holds (empty: none)."""
    kinds = [what for value, what in private.values if value in text]
    kinds += [what for what, shape in KEY_SHAPES if shape.search(text)]
    return list(dict.fromkeys(kinds))


def redact_text(text: str, private: Private) -> str:
    """`text` with every private value and key-shaped string replaced by the run's redaction mark."""
    text = redact(text, (value for value, _ in private.values))
    for _, shape in KEY_SHAPES:
        text = shape.sub(REDACTED, text)
    return text


def _path(parent: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def scan_json(value: Any, private: Private, file: str, where: str = "", leaks: list[Leak] | None = None
              ) -> tuple[Any, list[Leak]]:
    """(`value` with every string holding a private thing redacted, the leaks found, each by JSON path)."""
    leaks = [] if leaks is None else leaks
    if isinstance(value, str):
        kinds = text_hits(value, private)
        for kind in kinds:
            leaks.append(Leak(file, where or "(the value)", kind))
        return (redact_text(value, private) if kinds else value), leaks
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out[k], _ = scan_json(v, private, file, _path(where, k), leaks)
        return out, leaks
    if isinstance(value, list):
        return [scan_json(v, private, file, _path(where, i), leaks)[0] for i, v in enumerate(value)], leaks
    return value, leaks


def scan_lines(text: str, private: Private, file: str) -> Iterator[Leak]:
    """The leaks of a written page, each by its line."""
    for n, line in enumerate(text.splitlines(), start=1):
        for kind in text_hits(line, private):
            yield Leak(file, f"line {n}", kind)
