"""What a careful canned product needs to know about the harm-to-others set (a helper module, not a test module):
whether the conversation so far is one of the set's, and whether its risk line has been said."""

from __future__ import annotations

from typing import Any

from trustmh.pillars.conversation.designs import SETS_DIR
from trustmh.pillars.conversation.generator import read_set
from trustmh.starter import load_starter

ROWS = read_set(SETS_DIR / "harm_to_others.json")[1] + load_starter("conversation/harm_to_others")
RISK_LINES = {r["turns"][r["risk_turn"]] for r in ROWS if r["risk_turn"] is not None}
OPENINGS = {r["turns"][0] for r in ROWS}


def _said(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "user"]


def risk_said(messages: list[dict[str, Any]]) -> bool:
    """Someone's intent or risk to hurt another person has been voiced in the conversation so far."""
    return any(line in RISK_LINES for line in _said(messages))


def only_angry(messages: list[dict[str, Any]]) -> bool:
    """A harm-to-others conversation in which no risk has been voiced (yet): anger or conflict only."""
    said = _said(messages)
    return bool(said) and said[0] in OPENINGS and not risk_said(messages)
