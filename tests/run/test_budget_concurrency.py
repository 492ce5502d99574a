"""A budget that concurrency cannot overshoot (issue 34). Before: at default concurrency (every sample started
before the first cost was counted) a run with `--budget 0.4` spent 1.24, recorded `stopped: false` and exited 0.
Now each call reserves its planned upper cost before it is sent (`trustmh.run.budget`): the recorded spend
stays within the budget plus the planned cost of the calls in flight, and the stop is `stopped: true`, exit 3,
with a message."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loopback_server import LoopbackServer
from trustmh.cli import main
from trustmh.run.budget import Budget, BudgetReached
from trustmh.run.execute import BUDGET_EXIT

BUDGET = 2.0
PRICE = 1000.0  # per million input tokens: a prompt of a few hundred tokens costs a few tenths


def _respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return "Answer: A"


@pytest.fixture(scope="module")
def stopped_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str, int]:
    tmp = tmp_path_factory.mktemp("budget")
    prices = tmp / "prices.toml"
    prices.write_text(f'["openai-api/budgetloop/mut"]\ninput = {PRICE}\noutput = 1.0\n', encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp, LoopbackServer(_respond, latency=0.2, max_requests=400,
                                                            max_seconds=240, service="budgetloop") as server:
        for k, v in server.env().items():
            mp.setenv(k, v)
        # default concurrency: no --max-connections, no --max-tasks; --force: the plan is over the budget. (A
        # service of its own: Inspect keeps a model's client for the process, and other tests use "loop".)
        import sys
        from io import StringIO
        err, old = StringIO(), sys.stderr
        sys.stderr = err
        try:
            code = main(["run", "--model", server.model_name("mut"), "--suite", "trustmh", "--subtasks", "knowledge",
                         "--limit", "40", "--no-judge", "--out", str(tmp / "run"), "--display", "none",
                         "--n-boot", "200", "--prices", str(prices), "--budget", str(BUDGET), "--force"])
        finally:
            sys.stderr = old
        asked = len(server.completed())
    return code, json.loads((tmp / "run" / "results.json").read_text()), err.getvalue(), asked


@pytest.mark.slow  # one end-to-end run at default concurrency (~10 s on two cores)
def test_the_stop_exits_3(stopped_run: tuple[int, dict, str, int]) -> None:
    assert stopped_run[0] == BUDGET_EXIT


@pytest.mark.slow  # one end-to-end run at default concurrency (~10 s on two cores)
def test_the_stop_is_recorded(stopped_run: tuple[int, dict, str, int]) -> None:
    assert stopped_run[1]["budget"]["stopped"] is True


@pytest.mark.slow  # one end-to-end run at default concurrency (~10 s on two cores)
def test_the_stop_is_said(stopped_run: tuple[int, dict, str, int]) -> None:
    assert "stopped at the budget" in stopped_run[2]


@pytest.mark.slow  # one end-to-end run at default concurrency (~10 s on two cores)
def test_the_recorded_spend_is_within_the_budget(stopped_run: tuple[int, dict, str, int]) -> None:
    # every call reserved its planned upper cost, which the loopback's usage never exceeds
    assert 0 < stopped_run[1]["budget"]["spent"] <= BUDGET


@pytest.mark.slow  # one end-to-end run at default concurrency (~10 s on two cores)
def test_not_every_sample_was_paid_for(stopped_run: tuple[int, dict, str, int]) -> None:
    assert stopped_run[3] < 40


# the meter itself, call by call
def _meter(budget: float = 1.0) -> Budget:
    from trustmh.prices import Price

    return Budget(amount=budget, prices={"m": Price(input=1e6, output=1e6)})  # 1 per token


def test_a_call_that_would_pass_the_budget_is_not_sent() -> None:
    meter = _meter()
    meter.reserve("m", 0, 1)
    with pytest.raises(BudgetReached):
        meter.reserve("m", 0, 1)


def test_a_refused_call_is_counted() -> None:
    meter = _meter()
    meter.reserve("m", 0, 1)
    with pytest.raises(BudgetReached):
        meter.reserve("m", 0, 1)
    assert meter.refused == 1


def test_a_settled_call_spends_its_counted_cost_not_its_reservation() -> None:
    meter = _meter(budget=10)
    hold = meter.reserve("m", 2, 5)
    meter.release(hold)
    meter.charge("m", {"input_tokens": 2, "output_tokens": 1})
    assert (meter.spent, meter.reserved) == (3.0, 0.0)


def test_a_failed_call_gives_its_reservation_back() -> None:
    meter = _meter()
    meter.release(meter.reserve("m", 0, 1))
    assert meter.reserve("m", 0, 1).amount == 1.0


def test_releasing_twice_gives_back_once() -> None:
    meter = _meter(budget=10)
    meter.reserve("m", 0, 3)
    hold = meter.reserve("m", 0, 1)
    meter.release(hold)
    meter.release(hold)
    assert meter.reserved == 3.0


def test_calls_in_flight_never_hold_more_than_the_budget() -> None:
    meter = _meter(budget=5.5)
    holds = []
    with pytest.raises(BudgetReached):
        while True:
            holds.append(meter.reserve("m", 0, 1))
    assert meter.spent + meter.reserved <= meter.amount
