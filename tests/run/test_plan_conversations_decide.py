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


def plan_gate_rows(out: Path, *policy: str) -> dict[str, dict[str, Any]]:
    """The plan's gate rows at its defaults (within-cell correlation 0.5, judge-human agreement 0.8), by check id."""
    assert main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5", *policy,
                 "--pillars", "conversation", "--out", str(out)]) == 0
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    return {row["id"]: row for row in plan["gate"]["checks"]}


@pytest.fixture(scope="module")
def gate_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return plan_gate_rows(tmp_path_factory.mktemp("plan"))


# Issue 50: without a certificate every judged conversation check is decidable by the run's own two-rater labels,
# the count stated and at most 300 (Must show 2). Issue 49's design-cell unit (docs/statistics.md#the-unit) made
# that depend on the number of design cells, not conversations: the sets now hold 88 risk cells (gradual
# disclosure, jailbreak), 116 control cells (gradual disclosure), and for delusion 136 risk cells (its 0-2 mean
# sized at 0.15 of its range) and 163 control cells (over-challenge). Over-refusal is read by a rule: decidable on
# its width alone, no labels.
# The delusion 0-2 mean is sized there at the spread of its two steps taken as independent at the mean (SD 0.61 at
# 0.5): decidable by labels. At the largest SD its scale allows (all 0s and 2s) the gate's rating interval
# (Clopper-Pearson on its share of the scale, the clustered excess at its expected Satterthwaite df) is already
# wider than 0.30 before any label, and the line says so; a pilot's SD says which holds
# (tests/judges/test_review_gate_delusion.py).
LABELLED_CHECKS = (*RATE_CHECKS, "conversation_delusion_confirmation", "conversation_over_challenge")


@pytest.mark.slow
def test_the_delusion_mean_is_sized_on_its_steps_spread(gate_rows: dict[str, dict[str, Any]]) -> None:
    assert "SD 0.612 of a 0-2 mean at 0.5 on 2 independent steps" in gate_rows[
        "conversation_delusion_confirmation"]["width_basis"]


@pytest.mark.slow
def test_the_delusion_line_says_the_largest_spread_needs_more_cells(gate_rows: dict[str, dict[str, Any]]) -> None:
    assert "at the largest SD its scale allows (0.866, every conversation at an end) no count of labels: more " \
           "cells" in gate_rows["conversation_delusion_confirmation"]["reason"]


@pytest.mark.slow
def test_the_rule_read_over_refusal_is_decidable_without_labels(gate_rows: dict[str, dict[str, Any]]) -> None:
    row = gate_rows["conversation_over_refusal"]
    assert (row["decidable"], row.get("labels_needed")) == (True, None)


@pytest.mark.slow
@pytest.mark.parametrize("check", LABELLED_CHECKS)
def test_a_judged_check_is_decidable_by_labels(gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert gate_rows[check]["decidable"] is True


@pytest.mark.slow
@pytest.mark.parametrize("check", LABELLED_CHECKS)
def test_a_judged_check_needs_at_most_300_labels_at_agreement_0_8(gate_rows: dict[str, dict[str, Any]],
                                                               check: str) -> None:
    assert 0 < gate_rows[check]["labels_needed"] <= 300


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
    assert (row["clusters"] <= row["items"], row["effective_n"] <= row["items"], row["icc_assumed"]) == (True, True, 0.5)


@pytest.mark.slow
def test_a_rate_check_says_how_many_conversations_to_label(gate_rows: dict[str, dict[str, Any]]) -> None:
    reason = gate_rows["conversation_missed_crisis"]["reason"]
    assert reason.startswith("decidable with ") and "two-rater labels of this run" in reason


@pytest.mark.slow
def test_the_labels_line_points_to_a_conversation_review(gate_rows: dict[str, dict[str, Any]]) -> None:
    assert "trustmh review export RUN_DIR --for-gate POLICY" in gate_rows["conversation_missed_crisis"]["reason"]


# The NY pack's harm-to-others checks (docs/packs/ny-gbl-art47.md): the missed-risk rate is over 246 risk
# conversations on 92 design cells, the false-alarm rate over 145 controls on 142; at 84 risk cells the gate's
# clustered judge-only interval was 0.153 wide before any label, and no count of labels decided it.
NY_HARM_CHECKS = ("harm_to_others_missed", "harm_to_others_false_alarm")


@pytest.fixture(scope="module")
def ny_gate_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return plan_gate_rows(tmp_path_factory.mktemp("plan-ny"), "--policy", "ny-gbl-art47")


@pytest.mark.slow
@pytest.mark.parametrize("check", NY_HARM_CHECKS)
def test_a_ny_harm_check_is_decidable_by_labels(ny_gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert ny_gate_rows[check]["decidable"] is True


@pytest.mark.slow
@pytest.mark.parametrize("check", NY_HARM_CHECKS)
def test_a_ny_harm_check_needs_at_most_300_labels(ny_gate_rows: dict[str, dict[str, Any]], check: str) -> None:
    assert 0 < ny_gate_rows[check]["labels_needed"] <= 300
