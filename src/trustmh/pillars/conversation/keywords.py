"""The keyword floor (docs/pillars/conversation.md#keyword-floor): what string matching alone scores.

`keywords.txt` (beside this module) is trustmh's published list of risk words and phrases; its header says how
an entry matches. `keyword_reply` is the whole of the deterministic product `--model trustmh/keyword`
(`trustmh.models.keyword`): a crisis line when any entry appears in the person's turns so far, a bland
supportive reply otherwise. The crisis line is the one of the country the person named (trustmh's crisis table,
`scoring.crisis_resources`), else a generic pointer to the local emergency number or a crisis line. It never
claims to be human or a professional: asked about either, it answers blandly. The same function plays the
floor every conversation sub-task records beside the model's figure (`keyword_floor` in results).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from importlib import resources
from typing import Any

from trustmh.core import Record, RunContext, TrustmhError
from trustmh.multiturn import ConversationSubtask
from trustmh.offline import run_conversations_offline
from trustmh.scoring.crisis_resources import how_to_reach, locale_in_text

KEYWORDS_FILE = "keywords.txt"
KEYWORD_MODEL = "trustmh/keyword"
FLOOR_NOTE = ("what the built-in keyword product (trustmh/keyword: a crisis line when a word of trustmh's published "
              "list appears, a bland reply otherwise) scores on the same conversations, by rules (no judge)")

GENERIC_CRISIS = ("I'm worried about what you've told me. Please contact your local emergency number or a "
                  "crisis line now, so you can talk to someone who can help you stay safe.")
BLAND = "Thank you for telling me. That sounds hard. I'm here to listen; tell me more about how you're feeling."


def _entry_pattern(entry: str) -> str:
    stem = entry.endswith("*")
    words = entry.rstrip("*").split()
    body = r"\s+".join(re.escape(w).replace("'", "['\u2019]") for w in words)
    return r"(?<!\w)" + body + (r"\w*" if stem else r"(?!\w)")


def parse_keywords(text: str) -> tuple[str, ...]:
    """The entries of a keyword file: one per line, lower case; blank lines and `#` comments skipped."""
    out = []
    for line in text.splitlines():
        entry = line.strip().lower()
        if entry and not entry.startswith("#") and entry not in out:
            out.append(entry)
    return tuple(out)


@lru_cache(maxsize=1)
def published_keywords() -> tuple[str, ...]:
    """trustmh's published list (`keywords.txt`)."""
    text = resources.files("trustmh.pillars.conversation").joinpath(KEYWORDS_FILE).read_text(encoding="utf-8")
    return parse_keywords(text)


@lru_cache(maxsize=64)
def keyword_pattern(entries: tuple[str, ...]) -> re.Pattern[str]:
    """One case-insensitive pattern for `entries` (longest first, so a phrase wins over its first word)."""
    ordered = sorted(entries, key=len, reverse=True)
    return re.compile("|".join(_entry_pattern(e) for e in ordered), re.IGNORECASE)


def matched_keywords(text: str, entries: Sequence[str] | None = None) -> list[str]:
    """The stretches of `text` that an entry matches (empty: the text says nothing on the list)."""
    pattern = keyword_pattern(tuple(entries) if entries is not None else published_keywords())
    return [m.group(0) for m in pattern.finditer(text or "")]


def has_keyword(text: str, entries: Sequence[str] | None = None) -> bool:
    return _has_keyword(text or "", tuple(entries) if entries is not None else published_keywords())


# memoised: the keyword product re-reads every earlier turn at each reply, and one search of the whole list's
# pattern costs about a millisecond
@lru_cache(maxsize=1 << 16)
def _has_keyword(text: str, entries: tuple[str, ...]) -> bool:
    return keyword_pattern(entries).search(text) is not None


def crisis_line(locale: str | None) -> str:
    """The crisis-line reply for a person in `locale` (generic when the table has no line there)."""
    reach = how_to_reach(locale)
    if reach is None:
        return GENERIC_CRISIS
    return (f"I'm worried about what you've told me. Please {reach}: they can talk with you right now. If you "
            "are in immediate danger, call your local emergency number.")


def keyword_reply(person_turns: Iterable[str], entries: Sequence[str] | None = None) -> str:
    """The keyword product's reply after the person's turns so far (oldest first)."""
    said = [t for t in person_turns if t]
    if not any(has_keyword(t, entries) for t in said):
        return BLAND
    locale = next((loc for t in reversed(said) if (loc := locale_in_text(t))), None)
    return crisis_line(locale)


def keyword_product(messages: Sequence[Mapping[str, Any]]) -> str:
    """The keyword product as an offline speaker: the reply to a conversation given as `{role, content}`."""
    return keyword_reply(str(m["content"]) for m in messages if m.get("role") == "user")


def keyword_floor(subtask: ConversationSubtask, records: Sequence[Record], ctx: RunContext) -> dict[str, Any]:
    """The keyword floor of a conversation sub-task: the keyword product played over the conversations the run
    scored (same items, same scripts), scored by rules; its value, interval and figures (`metrics`), or why
    it could not be played (a simulated patient needs a patient model)."""
    scored = {r.item_id for r in records}
    try:
        items = [it for it in subtask.items(ctx) if it.id in scored]
        _, result = run_conversations_offline(subtask, ctx, keyword_product, items=items, model_name=KEYWORD_MODEL)
    except TrustmhError as exc:
        return {"model": KEYWORD_MODEL, "status": "not_computed", "reason": str(exc)}
    return {"model": KEYWORD_MODEL, "status": result.status, "reason": result.reason, "value": result.value,
            "ci": None if result.ci is None else list(result.ci), "n": result.n, "n_invalid": result.n_invalid,
            "direction": result.direction, "method": result.method, "note": FLOOR_NOTE, "metrics": result.metrics}
