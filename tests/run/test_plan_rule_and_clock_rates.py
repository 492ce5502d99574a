"""Issue 50: a regulator pack's checks read by a rule ask no judge evidence, in the plan or the gate (the crisis
table decides a referral, `break_reminder_rule` a break reminder: `Subtask.rule_rates`), and a check only clock
conversations can show is "not testable" in the plan when the endpoint sends no clock, as the gate will say it,
not "0 items < min_n" (`ProbeConversation.clock_rates`). Without replaying a set: the plan's rows from planned
units (run.outlook), the gate's from a judged result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from clock_endpoint import endpoint_file
from trustmh.catalogue import get_subtask
from trustmh.core import Item, JudgeInfo, RunContext
from trustmh.gate import load_policy
from trustmh.gate.evaluate import evaluate
from trustmh.models.endpoint import ENDPOINT_ENV
from trustmh.offline import run_conversations_offline
from trustmh.run.outlook import gate_outlook, planned_units
from trustmh.run.plan_figures import PlanSettings

REFERRAL, MINORS, DISCLOSURE = "conversation/crisis_referral", "conversation/minors", "conversation/ai_disclosure"
JUDGED = RunContext(seed=0, judge=JudgeInfo(model="anthropic/claude-sonnet-4-5", validated=False))


def _clocked(n: int) -> list[Item]:
    """Clock conversations: back after a three-hour mark (the last turn is due)."""
    return [Item(id=f"c{i}", prompt="", metadata={"locale": "US", "category": "clock", "n_turns": 3,
                                                   "clock": [0, 60, 3 * 3600 + 300]}) for i in range(n)]


def _plan_rows(policy: str, planned: dict[str, list[Item]]) -> dict[str, dict[str, Any]]:
    units: dict[str, int] = {}
    for sid, items in planned.items():
        units |= planned_units(sid, get_subtask(sid), items)[0]
    counts = {sid: len(items) for sid, items in planned.items()}
    outlook = gate_outlook(counts, counts, PlanSettings(policy=policy), JUDGED, units)
    return {row.id: row.to_json() for row in outlook.checks}


@pytest.fixture()
def no_clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, str(endpoint_file(tmp_path, clock=False)))


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENDPOINT_ENV, str(endpoint_file(tmp_path, clock=True)))


@pytest.mark.usefixtures("no_clock")
def test_a_jurisdiction_s_referral_is_decidable_by_its_rule_with_a_judge_and_no_certificate() -> None:
    rows = _plan_rows("ca-sb243", {REFERRAL: _clocked(120)})
    assert (rows["crisis_referral"]["decidable"], rows["crisis_referral"].get("labels_needed")) == (True, None)


@pytest.mark.usefixtures("no_clock")
def test_the_plan_says_the_referral_is_read_by_a_rule() -> None:
    rows = _plan_rows("ca-sb243", {REFERRAL: _clocked(120)})
    assert rows["crisis_referral"]["reason"].endswith("read by a rule (no judge evidence needed)")


@pytest.mark.usefixtures("no_clock")
def test_without_a_clock_the_break_reminder_is_not_testable_in_the_plan() -> None:
    row = _plan_rows("ca-sb243", {MINORS: _clocked(120)})["break_reminder"]
    assert (row["decidable"], row.get("not_testable")) == (False, True)


@pytest.mark.usefixtures("no_clock")
def test_the_plan_says_why_the_three_hour_notice_is_not_testable() -> None:
    row = _plan_rows("ny-gbl-art47", {DISCLOSURE: _clocked(120)})["three_hour_notice"]
    assert "{{elapsed_seconds}}" in row["reason"]


@pytest.mark.usefixtures("clock")
def test_with_a_clock_the_break_reminder_is_decidable_by_its_rule() -> None:
    row = _plan_rows("ca-sb243", {MINORS: _clocked(120)})["break_reminder"]
    assert (row["decidable"], row["items"], row.get("labels_needed")) == (True, 120, None)


@pytest.mark.usefixtures("clock")
def test_the_break_reminder_is_over_the_clock_conversations_alone() -> None:
    plain = [Item(id=f"p{i}", prompt="", metadata={"locale": "US", "n_turns": 3}) for i in range(7)]
    units, _ = planned_units(MINORS, get_subtask(MINORS), [*plain, *_clocked(4)])
    assert units[f"{MINORS}:break_reminder_missed_rate"] == 4


def _reminds(messages: list[dict]) -> str:
    return ("I'm an AI, not a human. You've been chatting for a while, so maybe take a break and talk to someone "
            "you trust, like a parent or teacher. If you're in danger, call or text 988.")


@pytest.fixture(scope="module")
def judged_minors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The minors probe with a clock, its result marked as a judge's (what a judged run records)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENDPOINT_ENV, str(endpoint_file(tmp_path_factory.mktemp("clock"), clock=True)))
        ctx = RunContext(mode="default", suite="trustmh", judge=JudgeInfo(model=None, validated=False), n_boot=100)
        _, result = run_conversations_offline(get_subtask(MINORS), ctx, _reminds)
    return {**result.to_json(), "method": "judge", "judge": {"model": "anthropic/claude-sonnet-4-5"}}


def test_a_judged_run_s_break_reminder_is_decided_with_no_certificate(judged_minors: dict[str, Any]) -> None:
    gate = evaluate({"subtasks": {MINORS: judged_minors}}, load_policy("ca-sb243"))  # type: ignore[arg-type]
    row = next(c for c in gate["checks"] if c["id"] == "break_reminder")
    assert (row["verdict"], row["judged"]) == ("pass", False)
