"""Inspect glue: every model call of a sample counted per role (calls, response-cache hits, tokens from the
call's `ModelUsage`), each charged to the run's budget (`run/budget.py`). Thin by design.

The counts live in the sample's store while it runs and are copied into its record (`Record.metadata["usage"]`,
items.jsonl), from which results.json and results.csv add them up per sub-task and role. A call answered from
Inspect's response cache is counted as a cached call and costs nothing; `cached_tokens` are the input tokens
the provider itself reported as read from its prompt cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from trustmh.results.reported import JUDGE_REPORTED_KEY
from trustmh.results.usage import USAGE_KEY, count_call  # noqa: F401  (USAGE_KEY: the record key, defined once)
from trustmh.run.budget import Hold, active_budget
from trustmh.run.progress import watching_call

_STORE_KEY = "trustmh_usage"
_REPORTED_STORE_KEY = "trustmh_judge_reported"


@contextmanager
def held(model: str, messages: Iterable[Mapping[str, Any]] | str, max_output: int | None) -> Iterator[Hold | None]:
    """Around one call: its planned upper cost reserved before it is sent (`BudgetReached`, and the call is not
    sent, when that would pass the budget), given back when it fails; `note_call` settles it (run/budget.py).
    The progress line counts the call and sees it wait (`run.progress.watching_call`)."""
    budget = active_budget()
    if budget is None:
        with watching_call(model):
            yield None
        return
    listed = [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
    hold = budget.reserve_messages(model, listed, int(max_output or 0))
    try:
        with watching_call(model):
            yield hold
    finally:
        budget.release(hold)


def _last_call_cached() -> bool:
    from inspect_ai.event import ModelEvent
    from inspect_ai.log import transcript

    for event in reversed(list(transcript().events)):
        if isinstance(event, ModelEvent):
            return event.cache == "read"
    return False


def note_call(role: str, model: str, output: Any, batched: bool = False, hold: Hold | None = None) -> None:
    """Count one finished call of this sample (and charge it to the budget unless the cache answered it,
    settling its reservation `hold`); `batched`: it went through the provider's batch API (billed at the batch
    rates)."""
    from inspect_ai.util import store

    budget = active_budget()
    if budget is not None and hold is not None:
        budget.release(hold)
    row = sample_usage().setdefault(role, {}).setdefault(model, {})
    added = count_call(row, getattr(output, "usage", None), _last_call_cached(), batched)
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


def note_judge_reported(asked: str, output: Any) -> None:
    """Count the model name a judge's provider answered one call of this sample with (`ModelOutput.model`),
    under the judge asked for (`trustmh.results.reported`); a provider that names none is not counted."""
    from inspect_ai.util import store

    name = getattr(output, "model", None)
    if not name:
        return
    current = store().get(_REPORTED_STORE_KEY) or {}
    row = current.setdefault(asked, {})
    row[str(name)] = row.get(str(name), 0) + 1
    store().set(_REPORTED_STORE_KEY, current)


def judge_reported_extra() -> dict[str, Any]:
    """What a sample's record adds for its judges' answering names: nothing when no judge answered."""
    from inspect_ai.util import store

    current = store().get(_REPORTED_STORE_KEY)
    return {JUDGE_REPORTED_KEY: current} if current else {}
