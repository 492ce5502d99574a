"""`trustmh plan --batch`: with batch rates at half the live ones, a run that batches every call is planned at
half the live cost, and one whose conversation turns stay live (the default) at more; plan.json says which
roles are batched, a batched plan's headline cost (plan.json's `totals.cost`) is the batch one with the live one
beside it, and a batched run's budget check uses the batch rates."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main

MODEL, JUDGE = "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"
PRICES = f"""["{MODEL}"]
input = 0.2
output = 0.8
batch_input = 0.1
batch_output = 0.4

["{JUDGE}"]
input = 3.0
output = 15.0
batch_input = 1.5
batch_output = 7.5
"""


def plan(tmp_path: Path, *more: str) -> dict[str, Any]:
    prices = tmp_path / "prices.toml"
    prices.write_text(PRICES)
    out = tmp_path / "plan"
    assert main(["plan", "--model", MODEL, "--judge", JUDGE, "--suite", "starter", "--prices", str(prices),
                 "--out", str(out), *more]) == 0
    return json.loads((out / "plan.json").read_text())


def scenario(data: dict[str, Any], name: str) -> float:
    return float(data["totals"]["cost_scenarios"][name]["expected"])


def test_batching_every_call_at_half_rates_plans_half_the_live_cost(tmp_path: Path) -> None:
    data = plan(tmp_path, "--batch", "--batch-conversations")
    assert scenario(data, "batch") == pytest.approx(scenario(data, "live") / 2)


def test_live_conversation_turns_keep_the_batch_plan_above_half(tmp_path: Path) -> None:
    data = plan(tmp_path, "--batch")
    assert scenario(data, "live") / 2 < scenario(data, "batch") < scenario(data, "live")


def test_a_batched_plans_headline_cost_is_the_batch_scenario(tmp_path: Path) -> None:
    data = plan(tmp_path, "--batch")
    assert scenario(data, "batch") == pytest.approx(data["totals"]["cost"]["expected"])


def test_a_batched_plan_keeps_the_live_cost_beside_it(tmp_path: Path) -> None:
    data = plan(tmp_path, "--batch")
    assert scenario(data, "live") == pytest.approx(data["totals"]["cost_live"]["expected"])


def test_a_live_plans_headline_cost_is_the_live_scenario(tmp_path: Path) -> None:
    data = plan(tmp_path)
    assert (scenario(data, "live"), "cost_live" in data["totals"]) == (
        pytest.approx(data["totals"]["cost"]["expected"]), False)


def test_plan_json_says_which_roles_are_batched(tmp_path: Path) -> None:
    data = plan(tmp_path, "--batch")
    turns = data["subtasks"]["conversation/simulated_patient"]["roles"]
    assert {(r["role"], r["batched"]) for r in turns} == {("model", False), ("patient", False), ("judge", True)}


def test_without_batch_the_plan_still_prices_batch_beside_live(tmp_path: Path) -> None:
    data = plan(tmp_path)
    assert (data["batch"]["on"], scenario(data, "batch") < scenario(data, "live")) == (False, True)


def test_a_batched_run_is_bounded_at_the_batch_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    live = plan(tmp_path)
    budget = (live["totals"]["cost"]["max"] + live["totals"]["cost_scenarios"]["batch"]["max"]) / 2
    plan(tmp_path, "--batch", "--budget", f"{budget:.6f}")
    assert "would start" in capsys.readouterr().out.split("budget")[-1]


# issue 43.4: --batch N has an upper bound, and --batch-conversations means nothing without --batch
def test_batch_size_above_the_providers_limit_is_refused(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--model", MODEL, "--batch", "50001", "--out", str(tmp_path / "out")])
    assert "--batch must be at most 50000, got 50001" in capsys.readouterr().err


def test_batch_conversations_without_batch_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--subtasks", "harm_to_others", "--no-judge", "--batch-conversations",
                 "--out", str(tmp_path / "out"), "--display", "none"])
    assert (code, capsys.readouterr().err.strip().splitlines()[-1]) == (
        2, "trustmh: error: --batch-conversations works only with --batch (it batches conversation turns in a batch "
        "run); add --batch, or leave --batch-conversations out")
