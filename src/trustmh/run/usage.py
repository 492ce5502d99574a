"""Inspect glue: every model call of a sample counted per role (calls, response-cache hits, tokens from the
call's `ModelUsage`), and the run's budget (`trustmh run --budget`, docs/cost.md). Thin by design.

The counts live in the sample's store while it runs and are copied into its record (`Record.metadata["usage"]`,
items.jsonl), from which results.json and results.csv add them up per sub-task and role. A call answered from
Inspect's response cache is counted as a cached call and costs nothing; `cached_tokens` are the input tokens
the provider itself reported as read from its prompt cache.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trustmh.prices import Price, cost_of_counts
from trustmh.results.usage import USAGE_KEY, count_call  # noqa: F401  (USAGE_KEY: the record key, defined once)

_STORE_KEY = "trustmh_usage"


class BudgetReached(Exception):
    """Raised when a sample would start after the run's counted cost reached its budget."""


@dataclass
class Meter:
    """The counted cost of a run against its budget."""

    budget: float
    prices: dict[str, Price]
    spent: float = 0.0
    unpriced: set[str] = field(default_factory=set)

    def charge(self, model: str, counts: dict[str, int]) -> None:
        """Charge tokens counted as `trustmh.results.usage.count_call` counts them, each at its own rate."""
        value = cost_of_counts(self.prices.get(model), counts)
        if value is None:
            self.unpriced.add(model)
        else:
            self.spent += value

    @property
    def reached(self) -> bool:
        return self.spent >= self.budget


METER: Meter | None = None  # set by `trustmh.run.execute` for the duration of a run with --budget


def check_budget() -> None:
    """Called before a sample makes its first call: no new sample once the budget is reached."""
    if METER is not None and METER.reached:
        raise BudgetReached(f"budget reached: {METER.spent:.4f} of {METER.budget:g} spent; no new sample started")


def _last_call_cached() -> bool:
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import transcript

    for event in reversed(list(transcript().events)):
        if isinstance(event, ModelEvent):
            return event.cache == "read"
    return False


def note_call(role: str, model: str, output: Any, batched: bool = False) -> None:
    """Count one finished call of this sample (and charge it to the budget unless the cache answered it);
    `batched`: it went through the provider's batch API (billed at the batch rates)."""
    from inspect_ai.util import store

    row = sample_usage().setdefault(role, {}).setdefault(model, {})
    added = count_call(row, getattr(output, "usage", None), _last_call_cached(), batched)
    if METER is not None and added:
        METER.charge(model, added)
    store().set(_STORE_KEY, sample_usage())


def sample_usage() -> dict[str, dict[str, dict[str, int]]]:
    """This sample's counts so far: role -> model -> counts."""
    from inspect_ai.util import store

    current = store().get(_STORE_KEY)
    if current is None:
        current = {}
        store().set(_STORE_KEY, current)
    return current
