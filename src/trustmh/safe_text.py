"""Text a model or product wrote, made safe to write (issue 43): the one rule every role's reply goes through
before it reaches Inspect's log, the response cache, a session file or items.jsonl. Plain Python.

A reply is untrusted. A lone surrogate (`"\\ud800"`, valid JSON, not encodable as UTF-8) makes every writer
fail, and control characters (other than tab, newline and carriage return) have no place in a chat reply;
each is replaced by U+FFFD, the replacement character. A reply that holds U+FFFD is therefore damaged text:
it is kept as cleaned (so the transcript shows what came) and its sample counts as invalid, never scored on
text that is not what the model said (`unusable`). Non-string content (a list of parts, a number) becomes text
through `as_text`.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
# lone surrogates, C0 controls but tab/newline/CR, DEL and the C1 controls
_UNSAFE = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def safe_text(text: str) -> str:
    """`text` with every character no writer can take (see the module docstring) replaced by U+FFFD."""
    return _UNSAFE.sub(REPLACEMENT, text)


def unusable(text: str | None) -> bool:
    """Whether a reply was damaged on its way in (it holds U+FFFD): its sample counts as invalid."""
    return REPLACEMENT in (text or "")


def as_text(content: Any) -> str:
    """Reply content as safe text: a string as it is, a list of parts (`{"text": ...}` or strings) joined by
    newlines, anything else (a number, null, a table) as its JSON-ish `str`; always through `safe_text`."""
    if isinstance(content, str):
        return safe_text(content)
    if isinstance(content, list):
        parts = [p if isinstance(p, str) else p.get("text") if isinstance(p, dict) else None for p in content]
        return safe_text("\n".join(str(p) for p in parts if p is not None))
    return safe_text("" if content is None else str(content))


def safe_json(value: Any) -> Any:
    """A decoded JSON value with every string in it (keys too) made safe (`safe_text`)."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, dict):
        return {safe_json(k): safe_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe_json(v) for v in value]
    return value
