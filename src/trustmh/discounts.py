"""What a run would cost live, in batch mode, with prompt caching, and with both: the plan's side-by-side
prices and its wall time with batch latency (`trustmh plan`, docs/cost.md#discounts). Plain Python.

Per role of a sub-task the plan knows its calls and tokens (min/expected and max). A role is batched when the
run's batch mode batches its model (`trustmh.models.batch.BatchMode.batches`): judges and proxies always,
the model under test and the simulated patient only outside conversations unless --batch-conversations. The
cached input of a role is what its judge templates' shared prefixes let a prefix cache read
(`trustmh.prompt_cache`): every call after a template's first, when the prefix reaches the provider's minimum.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from trustmh.models.batch import BATCH_LATENCY_SECONDS, BatchMode
from trustmh.prices import Price, cost

SCENARIOS = ("live", "batch", "cache", "batch+cache")


@dataclass(frozen=True)
class RoleTokens:
    """One role of one sub-task, as the plan counted it."""

    role: str
    model: str
    conversation: bool
    input_min: int
    input_max: int
    output_expected: int
    output_max: int
    cached_read: int = 0  # input tokens a prefix cache would read (best case)
    cache_write: int = 0  # input tokens written to the cache
    calls_min: int = 0  # the calls (a price file's per_call): expected, and with every re-ask
    calls_max: int = 0


def batched(row: RoleTokens, mode: BatchMode) -> bool:
    """Whether this role's calls go through a batch in this mode (conversation turns stay live by default)."""
    in_conversation = row.conversation and row.role in ("model", "patient")
    return mode.batches(row.model, conversation=in_conversation)


def scenario_costs(row: RoleTokens, price: Price | None, mode: BatchMode) -> dict[str, Any]:
    """{scenario: {"expected", "max"}} for one role; None where the price is unknown."""
    is_batched = batched(row, mode)
    out: dict[str, Any] = {}
    for scenario in SCENARIOS:
        use_batch = is_batched and "batch" in scenario
        read, write = (row.cached_read, row.cache_write) if "cache" in scenario else (0, 0)
        out[scenario] = {
            "expected": cost(price, max(0, row.input_min - read - write), row.output_expected, read, write,
                             batch=use_batch, calls=row.calls_min),
            "max": cost(price, max(0, row.input_max - read - write), row.output_max, read, write, batch=use_batch,
                        calls=row.calls_max),
        }
    return out


def scenario_totals(rows: Iterable[tuple[RoleTokens, dict[str, Any]]]) -> dict[str, Any]:
    """The run's cost per scenario (None when any model's price is unknown), and which models batch."""
    totals: dict[str, Any] = {s: {"expected": 0.0, "max": 0.0} for s in SCENARIOS}
    unknown = False
    for _, costs in rows:
        for s in SCENARIOS:
            for bound in ("expected", "max"):
                value = costs[s][bound]
                if value is None:
                    unknown = True
                else:
                    totals[s][bound] += value
    return {s: (None if unknown else v) for s, v in totals.items()}


def batch_wall_time(live_seconds: Mapping[str, float], batched_rounds: int,
                    latency: Mapping[str, float] = BATCH_LATENCY_SECONDS) -> dict[str, float]:
    """Seconds with batch mode: the live part as planned, plus one batch turnaround per batched call in the
    longest chain of one sample (its calls wait for each other), at a typical and the worst (24 h) latency.
    A batch holds many samples' calls at once, so the number of rounds, not of calls, sets the time."""
    return {"min": live_seconds["min"] + batched_rounds * latency["typical"],
            "max": live_seconds["max"] + batched_rounds * latency["worst"]}


def saving(totals: Mapping[str, Any], scenario: str) -> float | None:
    """The scenario's expected cost as a share of the live one (None when unknown or free)."""
    live, other = totals.get("live"), totals.get(scenario)
    if not live or not other or not live["expected"]:
        return None
    ratio = other["expected"] / live["expected"]
    return ratio if math.isfinite(ratio) else None


def money(x: Any) -> str:
    if x is None:
        return "price unknown"
    return f"{x:.4f}" if x < 1 else f"{x:,.2f}"


def table_lines(totals: Mapping[str, Any], batch: Mapping[str, Any], shares: Iterable[Mapping[str, Any]],
                fallbacks: Mapping[str, list[str]], priced: bool = True) -> list[str]:
    """The plan's discount section as text lines (`batch`: plan.json's batch section)."""
    lines = ["", "cost with discounts (expected / max), from the same price file:" if priced else
             "cost with discounts: not estimated (no --prices FILE)"]
    for s in SCENARIOS if priced else ():
        t = totals.get(s)
        if t is None:
            lines.append(f"  {s:<12} price unknown")
            continue
        ratio = saving(totals, s)
        share = f"  ({ratio:.0%} of live)" if ratio is not None and s != "live" else ""
        lines.append(f"  {s:<12} {money(t['expected'])} / {money(t['max'])}{share}")
    for model, missing in fallbacks.items():
        lines.append(f"  {model}: no rate for {', '.join(m.split(' as ')[0] for m in missing)} in the price file: "
                     "priced at the live rate")
    what = "judges and single-turn model calls" + (", and conversation turns" if batch["conversations"] else
                                                   "; conversation turns live (--batch-conversations batches them)")
    lines.append(f"  {'this run batches' if batch['on'] else 'with --batch, the run would batch'}: {what}")
    if batch["live_providers"]:
        lines.append(f"  no batch API (always live): {', '.join(batch['live_providers'])}")
    wall = batch["wall_seconds"]
    lines.append(f"  wall time with --batch: {batch['batched_rounds']} batch round(s) in a sample's longest chain: "
                 f"{wall['min'] / 3600:.1f} h at {BATCH_LATENCY_SECONDS['typical'] // 60} min a round, up to "
                 f"{wall['max'] / 3600:.0f} h if every batch takes the providers' 24 h")
    shares = list(shares)
    if shares:
        lines.append("\nprompt caching: shared prefix per judge template (share = shared prefix tokens over all "
                     "calls / their input tokens)")
        for s in shares:
            minimum = s["min_cacheable"]
            verdict = ("no known prompt cache" if minimum is None else
                       f"cacheable (min {minimum})" if s["cacheable"] else f"below the minimum {minimum}")
            lines.append(f"  {s['template']:<48} {s['model'][-28:]:<28} {s['prefix_tokens']:>6,} tokens  "
                         f"{s['share']:>4.0%} of input  {verdict}")
    return lines
