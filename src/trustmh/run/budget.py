"""The run's budget (`trustmh run --budget`, docs/cost.md#budget). Plain Python, no Inspect.

Before the run: refuse to start when the plan's upper estimate is over the budget or cannot be bounded
(unless --force). During the run: a `Budget` object that concurrency cannot overshoot. Counting a call's cost
when its usage arrives is too late when many calls are in flight: at default concurrency every sample may start
before the first cost is counted (a run with a budget of 0.4 spent 1.24). So every call *reserves* its planned
upper cost before it is sent (`reserve`: its prompt's tokens, counted as `trustmh plan` counts them, and its
whole reply-token limit, at the full input price: no cache discount) and is settled when its usage arrives
(`release`, then `charge`: the counted cost, nothing for an answer from the response cache). A call whose
reservation would take spent + reserved past the budget is not sent (`BudgetReached`), and no new sample
starts once the budget is reached (`check`). Hence spent + reserved <= budget at every moment, up to what
calls cost above their reservations (a provider billing more tokens than the plan counts): the spend never
passes the budget by more than the calls in flight at their planned cost. Calls the response cache answers
reserve too until settled, so a run near its budget may stop a little early, never late.

After: what was spent is kept in `spend.json`, so the same command with a higher budget continues and bounds
the whole run; a run stopped at its budget (a call or a sample refused) records `stopped: true` and exits with
BUDGET_EXIT.

The Inspect glue reaches the budget of the evaluation it runs in through `active_budget()`: a context
variable set by `metering(budget)` around one evaluation (two evaluations in one process never share one).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh import exit_codes
from trustmh.core import TrustmhError, notice
from trustmh.prices import Price, cost_of_counts
from trustmh.run.parts import CostSettings
from trustmh.run.plan_figures import PlanEstimate
from trustmh.run.tokens import Tokenizer
from trustmh.storage import Url, write_text_atomic

# The exit code of a run stopped because its counted cost reached the budget (the one table: exit_codes).
BUDGET_EXIT = exit_codes.BUDGET
SPEND_FILE = "spend.json"


class BudgetReached(Exception):
    """Raised when a sample would start, or a call be sent, past the run's budget."""


@dataclass
class Hold:
    """One call's reservation (its planned upper cost), until the call is settled or fails."""

    model: str
    amount: float
    open: bool = True


@dataclass
class Budget:
    """The counted cost of a run against its spending limit (in the price file's currency), and the planned
    cost of the calls in flight (module docstring)."""

    amount: float
    prices: dict[str, Price]
    spent: float = 0.0  # including what earlier invocations of the same run spent
    unpriced: set[str] = field(default_factory=set)  # models the price file does not list: counted as 0
    reserved: float = 0.0  # the planned upper cost of the calls in flight
    refused: int = 0  # calls not sent, and samples not started, for the budget
    count_tokens: Callable[[str, Iterable[Mapping[str, Any]]], int] | None = None  # default: the plan's count

    def charge(self, model: str, counts: dict[str, int]) -> None:
        """Count one finished call (not one the response cache answered): its tokens as
        `trustmh.results.usage.count_call` counts them (live, batched, cached, cache writes), each at its rate,
        and the call at the price file's `per_call`."""
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
            self.refused += 1
            raise BudgetReached(f"budget reached: {self.spent:.4f} of {self.amount:g} spent; no new sample started")

    def planned(self, model: str, input_tokens: int, max_output: int) -> float | None:
        """A call's planned upper cost: every input token at the dearest input rate (live, batch or written to
        the prompt cache), the whole reply limit at the dearest output rate, and the call's own price."""
        price = self.prices.get(model)
        if price is None:
            return None
        rate_in = max(price.rate(kind) for kind in ("input", "batch_input", "cache_write"))
        rate_out = max(price.rate(kind) for kind in ("output", "batch_output"))
        return (input_tokens * rate_in + max_output * rate_out) / 1e6 + price.per_call

    def reserve(self, model: str, input_tokens: int, max_output: int) -> Hold:
        """Before a call is sent: its planned upper cost reserved, or `BudgetReached` (the call is not sent)
        when spent + reserved would pass the budget. An unpriced model reserves nothing (a run with one
        starts under --budget only with --force)."""
        planned = self.planned(model, input_tokens, max_output)
        if planned is None:
            self.unpriced.add(model)
        need = planned or 0.0
        if self.spent + self.reserved + need > self.amount:
            self.refused += 1
            raise BudgetReached(f"budget reached: {self.spent:.4f} spent and {self.reserved:.4f} reserved by calls "
                                f"in flight of {self.amount:g}; a call planned at up to {need:.4f} was not sent")
        self.reserved += need
        return Hold(model, need)

    def reserve_messages(self, model: str, messages: Iterable[Mapping[str, Any]], max_output: int) -> Hold:
        """`reserve` with the prompt's tokens counted as `trustmh plan` counts them."""
        count = self.count_tokens or plan_tokens
        return self.reserve(model, count(model, messages), max_output)

    def release(self, hold: Hold) -> None:
        """A call settled or failed: its reservation given back (once)."""
        if hold.open:
            hold.open = False
            self.reserved = max(0.0, self.reserved - hold.amount)

    def to_json(self) -> dict[str, Any]:
        return {"spent": self.spent, "unpriced": sorted(self.unpriced)}


_TOKENIZERS: dict[str, Any] = {}


def plan_tokens(model: str, messages: Iterable[Mapping[str, Any]]) -> int:
    """A prompt's input tokens as the plan counts them (one tokenizer per model, kept for the process)."""
    if model not in _TOKENIZERS:
        _TOKENIZERS[model] = Tokenizer(model)
    return int(_TOKENIZERS[model].prompt_tokens(messages))


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


def needs_prices(cost: CostSettings) -> None:
    """--budget without a price file cannot be counted: said before the plan is built."""
    if cost.budget is not None and not cost.prices:
        raise TrustmhError("--budget needs --prices FILE (the cost of each model's tokens)")


def over_budget(planned: PlanEstimate, amount: float) -> str | None:
    """Why a run of this plan would refuse to start under `amount`; None when it would start."""
    if planned.totals.cost.price_unknown:
        return (f"price unknown for {', '.join(planned.totals.cost.price_unknown)}: the run's cost cannot be "
                "bounded")
    top, what = planned.bounding_cost  # a batched run is bounded at the batch rates
    if top is not None and top > amount:
        return f"{what} {top:.4f} is over the budget {amount:g}"
    return None


def check_before(planned: PlanEstimate, amount: float | None, force: bool) -> None:
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
        spent = float(json.loads((out / SPEND_FILE).read_text(encoding="utf-8"))["spent"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
    if not math.isfinite(spent) or spent < 0:  # written with a NaN price by an earlier version
        raise TrustmhError(f"{out / SPEND_FILE}: spent = {spent!r} is not an amount; the budget cannot be kept "
                           "(remove the file to count from 0, or start a new --out)")
    return spent


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
    # a call or a sample refused for the budget is a stop, whatever was spent
    if (budget.reached or budget.refused) and unfinished:
        return {"amount": budget.amount, "spent": budget.spent, "stopped": True, "unfinished_samples": unfinished,
                "refused_calls": budget.refused,
                "notice": f"stopped at the budget: {unfinished} sample(s) not run; the same command with a "
                          "higher --budget continues without paying again for anything finished"}
    return {"amount": budget.amount, "spent": budget.spent, "stopped": False}
