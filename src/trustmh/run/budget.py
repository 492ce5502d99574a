"""The run's budget (`trustmh run --budget`, docs/cost.md). Plain Python, no Inspect.

Before the run: refuse to start when the plan's upper estimate is over the budget or cannot be bounded
(unless --force). During the run: a `Budget` object counts the cost of every finished call (`charge`) and no
new sample starts once it is reached (`check`). After: what was spent is kept in `spend.json`, so the same
command with a higher budget continues and bounds the whole run, and a run stopped at its budget exits with
BUDGET_EXIT.

The Inspect glue reaches the budget of the evaluation it runs in through `active_budget()`: a context
variable set by `metering(budget)` around one evaluation (two evaluations in one process never share one).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError, notice
from trustmh.prices import Price, cost_of_counts
from trustmh.storage import Url, write_text_atomic

# The exit code of a run stopped because its counted cost reached the budget.
BUDGET_EXIT = 3
SPEND_FILE = "spend.json"


class BudgetReached(Exception):
    """Raised when a sample would start after the run's counted cost reached its budget."""


@dataclass
class Budget:
    """The counted cost of a run against its spending limit (in the price file's currency)."""

    amount: float
    prices: dict[str, Price]
    spent: float = 0.0  # including what earlier invocations of the same run spent
    unpriced: set[str] = field(default_factory=set)  # models the price file does not list: counted as 0

    def charge(self, model: str, counts: dict[str, int]) -> None:
        """Count one finished call (not one the response cache answered): its tokens as
        `trustmh.results.usage.count_call` counts them (live, batched, cached, cache writes), each at its rate."""
        value = cost_of_counts(self.prices.get(model), counts)
        if value is None:
            self.unpriced.add(model)
        else:
            self.spent += value

    @property
    def reached(self) -> bool:
        return self.spent >= self.amount

    def check(self) -> None:
        """Called before a sample makes its first call: no new sample once the budget is reached."""
        if self.reached:
            raise BudgetReached(f"budget reached: {self.spent:.4f} of {self.amount:g} spent; no new sample started")

    def to_json(self) -> dict[str, Any]:
        return {"spent": self.spent, "unpriced": sorted(self.unpriced)}


_ACTIVE: ContextVar[Budget | None] = ContextVar("trustmh_budget", default=None)


@contextmanager
def metering(budget: Budget | None) -> Iterator[None]:
    """`budget` is the active one for the evaluation run inside (None: no budget)."""
    token = _ACTIVE.set(budget)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def active_budget() -> Budget | None:
    """The budget of the evaluation this call runs in, if it has one."""
    return _ACTIVE.get()


def needs_prices(request: Any) -> None:
    """--budget without a price file cannot be counted: said before the plan is built."""
    if request.budget is not None and not request.prices:
        raise TrustmhError("--budget needs --prices FILE (the cost of each model's tokens)")


def over_budget(planned: dict[str, Any], amount: float) -> str | None:
    """Why a run of this plan (plan.json) would refuse to start under `amount`; None when it would start."""
    planned_cost = planned["totals"]["cost"]
    if planned_cost["price_unknown"]:
        return f"price unknown for {', '.join(planned_cost['price_unknown'])}: the run's cost cannot be bounded"
    top, what = planned_cost["max"], "the plan's upper estimate"
    if (planned.get("batch") or {}).get("on"):  # a batched run is bounded at the batch rates
        top, what = planned["totals"]["cost_scenarios"]["batch"]["max"], "the plan's upper estimate at batch rates"
    if top > amount:
        return f"{what} {top:.4f} is over the budget {amount:g}"
    return None


def check_before(planned: dict[str, Any], amount: float | None, force: bool) -> None:
    """Refuse to start a run whose planned upper cost is over --budget (or cannot be bounded), unless --force."""
    if amount is None:
        return
    why = over_budget(planned, amount)
    if why is None:
        return
    if force:
        notice(f"{why}; starting anyway (--force); the budget still stops the run")
        return
    raise TrustmhError(f"{why} (see `trustmh plan`; --force starts anyway and stops at the budget)")


def spent_before(out: Path | Url) -> float:
    """What earlier invocations of this run spent (`spend.json`), so a budget bounds the whole run."""
    try:
        return float(json.loads((out / SPEND_FILE).read_text(encoding="utf-8"))["spent"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def open_budget(amount: float | None, prices: dict[str, Price], out: Path | Url) -> Budget | None:
    """The run's Budget, counting from what earlier invocations of it spent; None without --budget."""
    if amount is None:
        return None
    budget = Budget(amount=amount, prices=dict(prices), spent=spent_before(out))
    if budget.reached:
        notice(f"{budget.spent:.4f} already spent of the budget {amount:g}: no sample will start")
    return budget


def settle(budget: Budget, out: Path | Url, unfinished: int) -> dict[str, Any]:
    """After the evaluation: keep what was spent (`spend.json`) and say whether the budget stopped the run
    (results.json's `budget` block)."""
    write_text_atomic(out / SPEND_FILE, json.dumps(budget.to_json(), indent=2) + "\n")
    if budget.reached and unfinished:
        return {"amount": budget.amount, "spent": budget.spent, "stopped": True, "unfinished_samples": unfinished,
                "notice": f"stopped at the budget: {unfinished} sample(s) not run; the same command with a "
                          "higher --budget continues without paying again for anything finished"}
    return {"amount": budget.amount, "spent": budget.spent, "stopped": False}
