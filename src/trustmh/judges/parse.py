"""Parsers shared by several sub-tasks: JSON objects in model/judge text, MCQ letters, label strings.

Every parser returns None for "invalid"; callers count invalid replies, they never drop them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """Drop `<think>…</think>` blocks, text before a lone `</think>`, and an unclosed `<think>` tail."""
    text = _THINK.sub("", text)
    lower = text.lower()
    if "</think>" in lower:
        text = text[lower.rindex("</think>") + len("</think>"):]
        lower = text.lower()
    if "<think>" in lower:
        text = text[: lower.index("<think>")]
    return text


def _outside_strings(text: str, start: int) -> Iterator[tuple[int, str]]:
    """(index, character) of every character from `start` that is not inside a JSON string."""
    in_string = escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield i, ch


def _first_balanced_object(text: str) -> str | None:
    """The first balanced {...} span, aware of JSON strings and escapes."""
    start = text.find("{")
    while start != -1:
        depth = 0
        for i, ch in _outside_strings(text, start):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def extract_json_object(text: str | None) -> dict[str, Any] | None:
    """One JSON object from model or judge text: a fenced block first, else the first balanced {...}.

    Returns None when nothing parses to a JSON object.
    """
    if not text:
        return None
    text = strip_reasoning(text)
    for block in _FENCE.findall(text):
        candidate = block.strip()
        obj = _loads_object(candidate)
        if obj is None:
            span = _first_balanced_object(candidate)
            obj = _loads_object(span) if span else None
        if obj is not None:
            return obj
    span = _first_balanced_object(text)
    return _loads_object(span) if span else None


def recover_truncated_object(text: str | None) -> dict[str, Any] | None:
    """The complete top-level key/value pairs of a JSON object cut off mid-way (a judge that hit its token
    limit), else None. Only pairs that end before the last top-level comma are kept, so a value is never
    guessed from a fragment: `{"score": 4, "reason": "it was go` → `{"score": 4}`."""
    if not text:
        return None
    text = strip_reasoning(text)
    start = text.find("{")
    if start < 0:
        return None
    depth, commas = 0, []
    for i, ch in _outside_strings(text, start):
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return None  # the object is complete: not a truncation (the strict parser decides)
        elif ch == "," and depth == 1:
            commas.append(i)
    for cut in reversed(commas):
        obj = _loads_object(text[start:cut] + "}")
        if obj:
            return obj
    return None


def extract_judge_object(text: str | None) -> dict[str, Any] | None:
    """`extract_json_object`, else the complete fields of a truncated object (`recover_truncated_object`).
    Judge parsers use this: a judge cut off in its free-text field has already written its scores."""
    return extract_json_object(text) or recover_truncated_object(text)


def judge_was_recovered(text: str | None) -> bool:
    """True when a judge reply only parses through truncation recovery (counted as `judge_recovered`)."""
    return extract_json_object(text) is None and recover_truncated_object(text) is not None


def _loads_object(s: str | None) -> dict[str, Any] | None:
    if not s:
        return None
    try:
        # strict=False: a raw line break inside a string (small models write them) is read, not rejected
        obj = json.loads(s, strict=False)
    except (json.JSONDecodeError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def int_in_range(value: Any, lo: int, hi: int) -> int | None:
    """An integer score in [lo, hi], from an int, an integer-valued float or a numeric string; else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        value = value.strip()
        if not re.fullmatch(r"-?\d+(\.0+)?", value):
            return None
        value = float(value)
    if isinstance(value, int | float):
        if float(value) != int(value):
            return None
        v = int(value)
        return v if lo <= v <= hi else None
    return None


def judge_scores(text: str | None, keys: Iterable[str], lo: int, hi: int) -> dict[str, int] | None:
    """All `keys` as integers in [lo, hi] from a judge's JSON object; None if any is missing or out of range."""
    obj = extract_judge_object(text)
    if obj is None:
        return None
    out: dict[str, int] = {}
    for key in keys:
        v = int_in_range(obj.get(key), lo, hi)
        if v is None:
            return None
        out[key] = v
    return out


_ANSWER_LINE = re.compile(r"Answer:\s*\(?([A-J])\)?(?![A-Za-z])")
_BARE_LETTER = re.compile(r"^\s*\(?([A-J])[.)]?\s*$")


def parse_mcq(text: str | None, option_keys: Iterable[str]) -> str | None:
    """The shared MCQ parser of default mode (docs/pillars/index.md#mcq-parser).

    1. a JSON `answer`/`choice` field; 2. else the last `Answer: X` line (two different letters on answer
    lines → invalid); 3. else a reply that is only `X`, `X.`, `(X)` or `X)`; 4. else invalid.
    Case-sensitive; only the item's option keys are accepted.
    """
    if not text:
        return None
    keys = set(option_keys)
    text = strip_reasoning(text)
    obj = extract_json_object(text)
    if obj is not None:
        for field in ("answer", "choice"):
            v = obj.get(field)
            if isinstance(v, str):
                v = v.strip().strip("().")
                if v in keys:
                    return v
    letters = [m.group(1) for m in _ANSWER_LINE.finditer(text)]
    if letters:
        if len(set(letters)) > 1:
            return None
        return letters[-1] if letters[-1] in keys else None
    m = _BARE_LETTER.match(text)
    if m and m.group(1) in keys:
        return m.group(1)
    return None


def normalise_label(s: str) -> str:
    return re.sub(r"[\s\-/]+", "_", s.strip().lower())


def parse_label(text: str | None, labels: Iterable[str], json_field: str = "label",
                aliases: Mapping[str, str] | None = None) -> str | None:
    """A label from a JSON field (fenced block first), else the unique label string in the text.

    Both sides are normalised (lower case, `-`, `/` and spaces → `_`). Returns the canonical label.
    """
    if not text:
        return None
    canon = {normalise_label(lab): lab for lab in labels}
    if aliases:
        canon.update({normalise_label(k): v for k, v in aliases.items()})
    obj = extract_json_object(text)
    if obj is not None and isinstance(obj.get(json_field), str):
        hit = canon.get(normalise_label(obj[json_field]))
        if hit is not None:
            return hit
    norm_text = normalise_label(strip_reasoning(text))
    found = {lab for key, lab in canon.items()
             if re.search(rf"(?<![a-z0-9]){re.escape(key)}(?![a-z0-9])", norm_text)}
    return found.pop() if len(found) == 1 else None
