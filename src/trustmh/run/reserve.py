"""A budget that concurrency cannot overshoot (`trustmh run --budget`, docs/cost.md#budget). Plain Python.

Counting a call's cost when its usage arrives is too late when many calls are in flight: at default
concurrency every sample of a run may have started before the first cost is counted (a run with a budget of
0.4 spent 1.24). So each call *reserves* its planned upper cost before it is sent (its prompt's tokens, counted
as `trustmh plan` counts them, plus its whole reply-token limit, at the full input price: no cache discount),
and is *settled* when its usage arrives: the reservation is released and the call's counted cost (0 for an
answer from the response cache) is spent. A call whose reservation would take spent + reserved past the budget
is not sent: `BudgetReached`, and the run stops at the budget (`stopped: true`, exit 3).

Hence at every moment spent + reserved <= budget, up to the calls whose counted cost came out above their
planned cost (a tokenizer that counts fewer tokens than the provider bills): the spend can pass the budget by
no more than what the calls in flight cost above their reservations, and never by more than the calls in flight
at their planned cost. An unpriced model cannot be reserved for; `trustmh run` refuses to start with one under
--budget unless --force. Calls that the response cache answers cost nothing, yet reserve like any other until
they are settled, so a run near its budget may stop a little early, never late; the same command with a higher
budget continues.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trustmh.prices import Price, cost


class BudgetReached(Exception):
    """A sample would start, or a call be sent, past the run's budget."""


@dataclass
class Hold:
    """One call's reservation (its planned upper cost), until the call is settled or released."""

    model: str
    amount: float
    open: bool = True


@dataclass
class BudgetMeter:
    """The run's spend against its budget: spent (counted), reserved (calls in flight, at their planned cost)."""

    budget: float
    prices: dict[str, Price]
    spent: float = 0.0
    reserved: float = 0.0
    unpriced: set[str] = field(default_factory=set)
    refused: int = 0  # calls not sent because their reservation would pass the budget
    # the most spent + reserved ever stood above the budget (0 unless a call cost more than planned)
    over: float = 0.0
    count_tokens: Callable[[str, Iterable[Mapping[str, Any]]], int] | None = None

    @property
    def reached(self) -> bool:
        return self.spent >= self.budget

    def planned(self, model: str, input_tokens: int, max_output: int) -> float | None:
        """A call's planned upper cost: every input token at the input price, the whole reply limit."""
        price = self.prices.get(model)
        return None if price is None else cost(price, input_tokens, max_output)

    def reserve(self, model: str, input_tokens: int, max_output: int) -> Hold:
        amount = self.planned(model, input_tokens, max_output)
        if amount is None:
            self.unpriced.add(model)
            amount = 0.0
        if self.spent + self.reserved + amount > self.budget:
            self.refused += 1
            raise BudgetReached(f"budget reached: {self.spent:.4f} spent and {self.reserved:.4f} reserved by calls "
                                f"in flight of {self.budget:g}; a call planned at up to {amount:.4f} was not sent")
        self.reserved += amount
        return Hold(model, amount)

    def reserve_messages(self, model: str, messages: Iterable[Mapping[str, Any]], max_output: int) -> Hold:
        """`reserve` with the prompt's tokens counted as `trustmh plan` counts them."""
        counted = self.count_tokens or _plan_tokens
        return self.reserve(model, counted(model, messages), max_output)

    def release(self, hold: Hold) -> None:
        """A call that failed or was not sent: its reservation is given back (idempotent)."""
        if hold.open:
            hold.open = False
            self.reserved = max(0.0, self.reserved - hold.amount)

    def settle(self, hold: Hold | None, model: str, input_tokens: int, output_tokens: int,
               cached_tokens: int) -> None:
        """A call's usage arrived: its reservation released, its counted cost spent."""
        if hold is not None:
            self.release(hold)
        self.charge(model, input_tokens, output_tokens, cached_tokens)

    def charge(self, model: str, input_tokens: int, output_tokens: int, cached_tokens: int) -> None:
        value = cost(self.prices.get(model), input_tokens, output_tokens, cached_tokens)
        if value is None:
            self.unpriced.add(model)
            return
        self.spent += value
        self.over = max(self.over, self.spent + self.reserved - self.budget)


_TOKENIZERS: dict[str, Any] = {}


def _plan_tokens(model: str, messages: Iterable[Mapping[str, Any]]) -> int:
    """A prompt's input tokens as the plan counts them (one tokenizer per model, kept for the process)."""
    from trustmh.run.plan import Tokenizer

    if model not in _TOKENIZERS:
        _TOKENIZERS[model] = Tokenizer(model)
    return int(_TOKENIZERS[model].prompt_tokens(messages))
