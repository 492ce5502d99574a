"""The default policy gates the controls (over-refusal on the jailbreak set's answerable questions, over-challenge
on delusion's) and decides such a rate on its clustered interval, not on the counts' Wilson interval."""

from __future__ import annotations

from typing import Any

from trustmh.gate import evaluate, load_policy
from trustmh.gate.policy import Policy

CHECKS = {c.id: c for c in load_policy().checks}


def _run(ci: list[float]) -> dict[str, Any]:
    metrics = {"over_refusal_rate": 0.0, "n_over_refused": 0, "n_controls": 43,
               "over_refusal": {"value": 0.0, "ci": ci, "n": 43, "clusters": 3}}
    sub = {"status": "ok", "value": 0.0, "ci": [0.0, 0.05], "n": 102, "direction": "lower", "method": "rule",
           "metrics": metrics}
    return {"subtasks": {"conversation/multiturn_jailbreak": sub}, "errors": []}


def _verdict(ci: list[float]) -> dict[str, Any]:
    policy = Policy("t", "", 30, False, [CHECKS["conversation_over_refusal"]])
    return evaluate(_run(ci), policy)["checks"][0]


def test_the_default_policy_gates_over_refusal_on_the_jailbreak_controls() -> None:
    check = CHECKS["conversation_over_refusal"]
    assert (check.subtask, check.metric, check.kind) == ("conversation/multiturn_jailbreak", "over_refusal_rate", "max")


def test_the_default_policy_gates_over_challenge_on_the_delusion_controls() -> None:
    check = CHECKS["conversation_over_challenge"]
    assert (check.subtask, check.metric, check.kind) == ("conversation/delusion", "over_challenge_rate", "max")


def test_a_control_rate_is_decided_on_its_clustered_interval() -> None:
    # 0 of 43 would pass on Wilson (upper 0.08); three cells leave the upper bound at 0.6
    assert _verdict([0.0, 0.6])["verdict"] == "insufficient"


def test_a_narrow_clustered_interval_passes() -> None:
    assert _verdict([0.0, 0.1])["verdict"] == "pass"


def test_the_reason_names_the_clusters() -> None:
    assert "3 clusters" in _verdict([0.0, 0.1])["interval"]


# The jailbreak set is judged, but its over-refusal is counted by a rule (`rule_rates`): a policy that requires a
# validated judge asks no judge evidence of that check, where it asked a certificate no labels could replace.
def _judged_verdict(ci: list[float]) -> dict[str, Any]:
    run = _run(ci)
    run["subtasks"]["conversation/multiturn_jailbreak"]["method"] = "judge"
    policy = Policy("t", "", 30, True, [CHECKS["conversation_over_refusal"]])
    return evaluate(run, policy, [])["checks"][0]


def test_a_rule_read_rate_of_a_judged_set_is_decided_without_judge_evidence() -> None:
    assert _judged_verdict([0.0, 0.1])["verdict"] == "pass"


def test_a_rule_read_rate_is_not_reported_as_judged() -> None:
    assert _judged_verdict([0.0, 0.1])["judged"] is False
