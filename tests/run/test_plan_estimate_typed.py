"""The plan's estimate is typed (`run/plan_figures.py`) and serialises to the plan.json it wrote before it was:
tests/fixtures/plan/representative_plan.json was written by `trustmh plan` at d551137 (the untyped estimate)
with the arguments below (updated deliberately for issue 42: with --batch, `totals.cost` is the batch scenario,
marked `basis: "batch"`, and `totals.cost_live` the live one beside it): a model, a judge and a simulated patient,
single-turn and conversation sub-tasks,
prices with rates missing, --batch, power and a budget it is over. Its models are priced by a synthetic price
file and counted by the approximate tokenizer, so the figures are the same on any machine. Rewritten when
issue 40 authored the gradual-disclosure set and added the default gate's false-alarm check (every figure that
moved was the set's or the new check's row), and when issue 41 added to each conversation check's row its
stimuli, effective n, assumed ICC and certificate path; and when the simulated patient's brief put the risk
in lay words (only the patient's input tokens, and the costs and totals they feed, moved); and when issue 44 made
every judged run re-judge its anchor items, certified or not (`anchors` added: 40 judge calls, the two judged
single-turn sub-tasks' 20 each; the totals' calls, tokens and every cost scenario grew by exactly those calls,
which the batch and cache scenarios had left out before; nothing per sub-task moved); when issue 49 made the
scripted person play on and the crisis judge ask for the marks of care (only gradual disclosure's rows moved: one
more turn, the person's `when_ignored` line, and a longer judge prompt; the totals and caches they feed); and when
issue 49 added the default gate's over-refusal and over-challenge checks and named the conversation checks' unit
(only the gate's rows moved: two new, and "clusters (design cell × stimulus)" in two width bases)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.cli import main
from trustmh.run.budget import over_budget
from trustmh.run.config import RunOptions, resolve
from trustmh.run.estimate import estimate, plan_settings
from trustmh.run.plan_figures import PlanEstimate
from trustmh.run.select import plan_run

SUBTASKS = "safety/over_refusal,reliability/emotional_support,conversation/gradual_disclosure,conversation/simulated_patient"
PRICES = """currency = "USD"
["anthropic/model-a"]
input = 3.0
output = 15.0
cached_input = 0.3
["google/judge-b"]
input = 0.1
output = 0.4
"""
BEFORE = FIXTURES / "plan" / "representative_plan.json"


@pytest.fixture(scope="module")
def prices(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("prices") / "prices.toml"
    path.write_text(PRICES, encoding="utf-8")
    return path


def test_plan_json_is_what_the_untyped_estimate_wrote(prices: Path, tmp_path: Path) -> None:
    code = main(["plan", "--model", "anthropic/model-a", "--judge", "google/judge-b", "--patient", "anthropic/model-a",
                 "--subtasks", SUBTASKS, "--limit", "2", "--prices", str(prices), "--target-width", "0.1",
                 "--detect-difference", "0.2", "--batch", "--budget", "0.3", "--out", str(tmp_path)])
    assert code == 0
    assert json.loads((tmp_path / "plan.json").read_text(encoding="utf-8")) == json.loads(BEFORE.read_text(encoding="utf-8"))


def test_the_estimate_is_a_typed_object_whose_totals_the_budget_reads(prices: Path) -> None:
    from trustmh.prices import load_prices

    spec = resolve(RunOptions(model="anthropic/model-a", judge="google/judge-b", subtasks=["safety/over_refusal"],
                              limit=2, prices=load_prices(prices), batch=0))
    planned = estimate(plan_run(spec), plan_settings(spec))
    assert isinstance(planned, PlanEstimate)
    # batched, the budget is held against the batch scenario's upper cost, read as attributes
    batch = planned.totals.cost_scenarios["batch"]
    assert batch is not None and batch.max is not None
    top = batch.max
    assert over_budget(planned, top / 2) == (f"the plan's upper estimate at batch rates {top:.4f} is over the "
                                             f"budget {top / 2:g}")
