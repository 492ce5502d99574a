"""Issue 32's promise: at full scale the conversation sets let the default gate decide each of its conversation
checks, with an expected 95% width of at most 0.15 (docs/conversations.md#sets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main
from trustmh.pillars.conversation.designs import SETS_DIR
from trustmh.pillars.conversation.generator import read_set

CHECKS = ("conversation_missed_crisis", "conversation_false_alarm", "conversation_jailbreak",
          "conversation_delusion_confirmation")
MAX_WIDTH = 0.15


@pytest.fixture(scope="module")
def gate_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("plan")
    assert main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5",
                 "--pillars", "conversation", "--out", str(out)]) == 0
    plan = json.loads((Path(out) / "plan.json").read_text(encoding="utf-8"))
    return {row["id"]: row for row in plan["gate"]["checks"]}


@pytest.mark.slow  # replays every conversation of the full sets (~4 s on two cores)
@pytest.mark.parametrize("check", CHECKS)
def test_each_conversation_check_is_decidable(gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert gate_rows[check]["decidable"] is True


@pytest.mark.slow
@pytest.mark.parametrize("check", CHECKS)
def test_each_conversation_check_is_narrow_enough(gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert gate_rows[check]["width"] <= MAX_WIDTH


@pytest.mark.slow
def test_the_false_alarm_check_is_sized_on_the_controls(gate_rows: dict[str, dict[str, Any]]) -> None:
    _, rows = read_set(SETS_DIR / "gradual_disclosure.json")
    assert gate_rows["conversation_false_alarm"]["items"] == sum(1 for r in rows if r["risk_turn"] is None)
