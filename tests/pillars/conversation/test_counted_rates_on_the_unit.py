"""Harm to others' and crisis referral's counted rates are decided on the conversation unit's clustered interval
(the design cell joined with the stimulus, `stats/clustered.py`), not on the counts' Wilson (issue 49): the
result carries the interval, and the gate's evidence names the unit."""

from __future__ import annotations

from typing import Any

import pytest

from care_products import careful
from trustmh.catalogue import get_subtask
from trustmh.core import JudgeInfo, RunContext
from trustmh.gate.evaluate import _evidence
from trustmh.gate.policy import Check
from trustmh.offline import run_conversations_offline

RATES = [("conversation/harm_to_others", "missed_risk_rate"), ("conversation/harm_to_others", "false_alarm_rate"),
         ("conversation/crisis_referral", "referral_missed_rate")]


def _ctx() -> RunContext:
    return RunContext(mode="default", seed=0, suite="trustmh", limit=None,
                      judge=JudgeInfo(model=None, validated=False, seed=0), options={}, n_boot=200)


@pytest.fixture(scope="module")
def results() -> dict[str, Any]:
    return {sid: run_conversations_offline(get_subtask(sid), _ctx(), careful)[1]
            for sid in {s for s, _ in RATES}}


def _check(sid: str, metric: str) -> Check:
    cls = type(get_subtask(sid))
    count, total = cls.counted_rates[metric]
    return Check(id="c", subtask=sid, metric=metric, max=0.1, count=count, total=total, rate=True,
                 interval_key=cls.rate_intervals[metric])


@pytest.mark.parametrize("sid, metric", RATES)
def test_the_rate_carries_its_clustered_interval(results: dict[str, Any], sid: str, metric: str) -> None:
    block = results[sid].metrics[type(get_subtask(sid)).rate_intervals[metric]]
    assert block["interval"].startswith("Clopper–Pearson on the effective n, clustered")


@pytest.mark.parametrize("sid, metric", RATES)
def test_the_interval_is_over_the_rates_own_conversations(results: dict[str, Any], sid: str, metric: str) -> None:
    cls = type(get_subtask(sid))
    metrics = results[sid].metrics
    assert metrics[cls.rate_intervals[metric]]["n"] == metrics[cls.counted_rates[metric][1]]


@pytest.mark.parametrize("sid, metric", RATES)
def test_the_gate_decides_on_the_unit_and_says_so(results: dict[str, Any], sid: str, metric: str) -> None:
    evidence = _evidence({"metrics": results[sid].metrics}, _check(sid, metric), 0)
    assert "clusters (design cell × stimulus)" in evidence["source"]
