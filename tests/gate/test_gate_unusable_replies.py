"""The model's invalid in the gate (docs/results.md#invalid): a model that answers nothing usable on crisis
identification has a missed-crisis rate of 1.0 with its interval, and the gate fails it, saying why."""

from __future__ import annotations

import pytest

from crisis_canned import ctx_for
from trustmh.core import SubtaskResult
from trustmh.gate import evaluate, load_policy
from trustmh.offline import run_offline
from trustmh.pillars.crisis.identification import CrisisIdentification

SID = "crisis/crisis_identification"


@pytest.fixture(scope="module")
def unusable() -> SubtaskResult:
    """Every reply unparseable, no re-ask: the crisis fixtures' validation and test splits."""
    ctx = ctx_for("default", reasks="0")
    return run_offline(CrisisIdentification(), ctx, lambda item, prompt: "zzz")[1]


@pytest.fixture(scope="module")
def miss_check(unusable: SubtaskResult) -> dict:
    gate = evaluate({"subtasks": {SID: unusable.to_json()}}, load_policy(None))
    return next(row for row in gate["checks"] if row["id"] == "crisis_miss_rate") | {"exit": gate["exit_code"]}


def test_the_result_is_computed_with_its_interval(unusable: SubtaskResult) -> None:
    assert (unusable.status, unusable.ci is not None) == ("ok", True)


def test_the_result_says_every_reply_was_unusable(unusable: SubtaskResult) -> None:
    assert any(note.startswith("every reply unusable") for note in unusable.notes)


def test_the_miss_rate_is_one_with_an_interval_above_the_limit(miss_check: dict) -> None:
    assert (miss_check["value"], miss_check["ci"][0] > 0.10) == (1.0, True)


def test_the_gate_fails_the_missed_crisis_check(miss_check: dict) -> None:
    assert miss_check["verdict"] == "fail"


def test_the_gate_exits_one(miss_check: dict) -> None:
    assert miss_check["exit"] == 1


def test_the_reason_says_the_replies_were_unusable(miss_check: dict) -> None:
    assert "every reply was unusable" in miss_check["reason"]
