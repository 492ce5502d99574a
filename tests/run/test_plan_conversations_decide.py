"""Issue 41: `trustmh plan` tells the truth about the conversation checks. At full scale each is sized on its
stimuli (clusters, effective n at the assumed within-stimulus correlation, recorded), and it is called
decidable only when its expected width fits and a certificate of its judge can be used or (issue 50) the run's
own two-rater labels can correct it, with the number of labels stated (issue 32 sized the sets for a width of
0.15 on conversations counted as independent)."""

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
# the checks on a primary, planned on its stimuli (a counted rate such as false alarms is over the controls)
PRIMARY_CHECKS = ("conversation_missed_crisis", "conversation_jailbreak", "conversation_delusion_confirmation")
RATE_CHECKS = ("conversation_missed_crisis", "conversation_false_alarm", "conversation_jailbreak")
MAX_WIDTH = 0.15


@pytest.fixture(scope="module")
def gate_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("plan")
    assert main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5",
                 "--pillars", "conversation", "--icc", "0.3", "--out", str(out)]) == 0
    plan = json.loads((Path(out) / "plan.json").read_text(encoding="utf-8"))
    return {row["id"]: row for row in plan["gate"]["checks"]}


# Issue 50: without a certificate the checks on a primary are decidable by the run's own two-rater labels, the
# count stated; the false-alarm rate (over the controls, which the labels do not correct) still needs one, and
# the delusion mean is too wide at the largest spread its scale allows.
LABELLED_CHECKS = ("conversation_missed_crisis", "conversation_jailbreak")


@pytest.mark.slow  # replays every conversation of the full sets (~4 s on two cores)
@pytest.mark.parametrize("check", ("conversation_false_alarm", "conversation_delusion_confirmation"))
def test_a_check_labels_cannot_decide_is_not_decidable_without_a_certificate(gate_rows: dict[str, dict[str, Any]],
                                                                               check: str) -> None:
    assert gate_rows[check]["decidable"] is False


# Issue 49's design-cell unit (docs/statistics.md#the-unit): the sets now hold 40 risk cells (gradual disclosure,
# jailbreak) and 56 control cells, so at a correlation of 0.3 every rate check fits width 0.15 (at the plan's
# default 0.5 they are 0.16-0.18); the labels PPI needs for that width at round 1's level (issue 50's spending),
# on the clustered interval the gate reads, exceed the conversations the sets hold: the judge's own term is already
# 0.149 wide at 0.3, and labels decide these checks only at a correlation near 0 (96 labels at 0, 120 at 0.05,
# none at 0.1: docs/statistics.md#pilot-correlation). Strict, so more cells (or a pilot's measured correlation,
# tests/run/test_plan_pilot_correlation.py) flip these.
TOO_FEW_CELLS = pytest.mark.xfail(strict=True, reason="the labels PPI needs for width 0.15 at round 1's level exceed the "
                                                     "conversations the sets hold")


@pytest.mark.slow
@TOO_FEW_CELLS
@pytest.mark.parametrize("check", LABELLED_CHECKS)
def test_a_rate_check_needs_at_most_150_labels_at_agreement_0_8(gate_rows: dict[str, dict[str, Any]],
                                                               check: str) -> None:
    assert 0 < gate_rows[check]["labels_needed"] <= 150


@pytest.mark.slow
@pytest.mark.parametrize("check", RATE_CHECKS)
def test_each_rate_check_is_narrow_enough(gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert gate_rows[check]["width"] <= MAX_WIDTH


@pytest.mark.slow
def test_the_false_alarm_check_is_sized_on_the_controls(gate_rows: dict[str, dict[str, Any]]) -> None:
    _, rows = read_set(SETS_DIR / "gradual_disclosure.json")
    assert gate_rows["conversation_false_alarm"]["items"] == sum(1 for r in rows if r["risk_turn"] is None)


@pytest.mark.slow
@pytest.mark.parametrize("check", PRIMARY_CHECKS)
def test_each_conversation_check_records_its_stimuli_and_assumed_correlation(gate_rows: dict[str, dict[str, Any]],
                                                                              check: str) -> None:
    row = gate_rows[check]
    assert (row["clusters"] <= row["items"], row["effective_n"] <= row["items"], row["icc_assumed"]) == (True, True, 0.3)


@pytest.mark.slow
@TOO_FEW_CELLS
def test_a_rate_check_says_how_many_conversations_to_label(gate_rows: dict[str, dict[str, Any]]) -> None:
    reason = gate_rows["conversation_missed_crisis"]["reason"]
    assert reason.startswith("decidable with ") and "two-rater labels of this run" in reason


@pytest.mark.slow
@TOO_FEW_CELLS
def test_the_labels_line_points_to_a_conversation_review(gate_rows: dict[str, dict[str, Any]]) -> None:
    assert "trustmh review export RUN_DIR --for-gate POLICY" in gate_rows["conversation_missed_crisis"]["reason"]
