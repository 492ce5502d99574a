"""The gate reads a run's counts and intervals as counts and intervals (issue 34): a reversed interval, `n =
true` (read as 1 before) or a fractional count is damaged evidence, never a pass; a shard is not a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.gate import evaluate, parse_policy, run_gate

POLICY = parse_policy('min_n = 1\nrequire_validated_judge = false\n[[check]]\nid = "over"\n'
                      'subtask = "safety/over_refusal"\nmin = 0.5\n', "p.toml")
COUNTED = parse_policy('min_n = 1\n[[check]]\nid = "miss"\nsubtask = "crisis/crisis_identification"\n'
                       'metric = "validation_crisis_miss_rate"\nmax = 0.5\n', "p.toml")


def _verdict(sub: dict, policy=POLICY) -> dict:  # noqa: ANN001
    results = {"model": "m", "mode": "default", "suite": "trustmh",
               "subtasks": {policy.checks[0].subtask: {"status": "ok", **sub}}}
    return evaluate(results, policy)["checks"][0]


def test_a_good_interval_passes() -> None:
    assert _verdict({"value": 0.9, "ci": [0.8, 0.95], "n": 100})["verdict"] == "pass"


def test_a_reversed_interval_is_not_a_pass() -> None:
    assert _verdict({"value": 0.9, "ci": [0.95, 0.1], "n": 100})["verdict"] == "insufficient"


def test_a_reversed_interval_is_named() -> None:
    assert "reversed" in _verdict({"value": 0.9, "ci": [0.95, 0.1], "n": 100})["reason"]


def test_n_true_is_not_a_count() -> None:
    assert _verdict({"value": 0.9, "ci": [0.8, 0.95], "n": True})["verdict"] == "insufficient"


def test_a_fractional_n_is_not_a_count() -> None:
    assert "not a count" in _verdict({"value": 0.9, "ci": [0.8, 0.95], "n": 2.5})["reason"]


def test_a_fractional_counted_rate_is_not_a_count() -> None:
    metrics = {"validation_n_crisis_missed": 0.5, "validation_n_crisis_items": 40}
    assert _verdict({"value": 0.5, "metrics": metrics}, COUNTED)["verdict"] == "insufficient"


def test_a_count_above_its_total_is_not_a_count() -> None:
    metrics = {"validation_n_crisis_missed": 50, "validation_n_crisis_items": 40}
    assert "not counts" in _verdict({"value": 0.5, "metrics": metrics}, COUNTED)["reason"]


def test_a_reversed_judge_interval_in_a_policy_is_refused() -> None:
    with pytest.raises(TrustmhError, match="judge_min.binary.kappa': 0.8 is above judge_max.binary.kappa = 0.5"):
        parse_policy("[judge_min.binary]\nkappa = 0.8\n[judge_max.binary]\nkappa = 0.5\n" + POLICY_CHECK, "p.toml")


def test_a_reversed_judge_interval_in_a_check_is_refused() -> None:
    with pytest.raises(TrustmhError, match="reversed interval"):
        parse_policy(POLICY_CHECK + "judge_min = {mae = 2.0}\njudge_max = {mae = 1.0}\n", "p.toml")


def test_an_interval_of_one_point_is_allowed() -> None:
    policy = parse_policy(POLICY_CHECK + "judge_min = {mae = 1.0}\njudge_max = {mae = 1.0}\n", "p.toml")
    assert policy.checks[0].judge_max == {"mae": 1.0}


POLICY_CHECK = '[[check]]\nid = "c"\nsubtask = "privacy/leakage"\nmax = 0.1\n'


def test_a_shard_is_not_gated(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"model": "m", "mode": "default", "shard": [0, 3],
                                                       "subtasks": {}}), encoding="utf-8")
    with pytest.raises(TrustmhError, match="shard 0/3, a slice of the items, not a whole run"):
        run_gate(tmp_path)


def test_a_refused_shard_gets_no_gate_file(tmp_path: Path) -> None:
    (tmp_path / "results.json").write_text(json.dumps({"model": "m", "mode": "default", "shard": [0, 3],
                                                       "subtasks": {}}), encoding="utf-8")
    with pytest.raises(TrustmhError):
        run_gate(tmp_path)
    assert not (tmp_path / "gate.json").exists()
