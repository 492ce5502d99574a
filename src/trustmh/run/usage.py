"""Inspect glue: every model call of a sample counted per role (calls, response-cache hits, tokens from the
call's `ModelUsage`), each charged to the run's budget (`run/budget.py`). Thin by design.

The counts live in the sample's store while it runs and are copied into its record (`Record.metadata["usage"]`,
items.jsonl), from which results.json and results.csv add them up per sub-task and role. A call answered from
Inspect's response cache is counted as a cached call and costs nothing; `cached_tokens` are the input tokens
the provider itself reported as read from its prompt cache.
"""

from __future__ import annotations

from typing import Any

from trustmh.results.usage import USAGE_KEY, count_call  # noqa: F401  (USAGE_KEY: the record key, defined once)
from trustmh.run.budget import active_budget

_STORE_KEY = "trustmh_usage"


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
    budget = active_budget()
    if budget is not None and added:
        budget.charge(model, added)
    store().set(_STORE_KEY, sample_usage())


def sample_usage() -> dict[str, dict[str, dict[str, int]]]:
    """This sample's counts so far: role -> model -> counts."""
    from inspect_ai.util import store

    current = store().get(_STORE_KEY)
    if current is None:
        current = {}
        store().set(_STORE_KEY, current)
    return current
