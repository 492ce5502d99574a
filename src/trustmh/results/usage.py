"""Usage and cost per sub-task and role, from the records' call counts (`Record.metadata["usage"]`, written
by the run for every sample), with the plan's figures beside them (docs/cost.md). Plain Python.

Per (sub-task, role, model): calls, calls answered by the response cache (not paid), calls sent through the
provider's batch API, input and output tokens of live calls (full rate), input and output tokens of batched
calls (batch rate), input tokens the provider read from its prompt cache and wrote to it, and the cost at each
kind's own rate where the price file knows the model ("price unknown" otherwise, never 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.core import Record
from trustmh.prices import PRICE_UNKNOWN, Price, cost_of_counts

USAGE_KEY = "usage"
FIELDS = ("calls", "cached_calls", "batch_calls", "input_tokens", "output_tokens", "batch_input_tokens",
          "batch_output_tokens", "cached_tokens", "cache_write_tokens")


def count_call(row: dict[str, int], usage: Any, cached: bool, batched: bool) -> dict[str, int]:
    """Add one finished call to a (role, model) row of counts; returns what it added that costs: its tokens and
    the one call (a price file's `per_call`). `usage` is the call's Inspect `ModelUsage` (input_tokens excludes
    the cache's reads and writes); a call the response cache answered (`cached`) is counted but costs nothing;
    `batched`: sent through a batch."""
    for f in FIELDS:
        row.setdefault(f, 0)
    row["calls"] += 1
    if cached:
        row["cached_calls"] += 1
        return {}
    if usage is None:
        return {"calls": 1}
    added = {("batch_input_tokens" if batched else "input_tokens"): int(usage.input_tokens or 0),
             ("batch_output_tokens" if batched else "output_tokens"): int(usage.output_tokens or 0),
             "cached_tokens": int(usage.input_tokens_cache_read or 0),
             "cache_write_tokens": int(usage.input_tokens_cache_write or 0)}
    if batched:
        row["batch_calls"] += 1
    for key, value in added.items():
        row[key] += value
    return {**added, "calls": 1}


def usage_rows(records: Mapping[str, Sequence[Record]], prices: Mapping[str, Price] | None = None,
               planned: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """{"subtasks": {sid: [row...]}, "totals": {...}} for results.json."""
    prices = prices or {}
    out: dict[str, list[dict[str, Any]]] = {}
    totals = dict.fromkeys(FIELDS, 0)
    total_cost: float = 0.0
    unpriced: set[str] = set()
    for sid, recs in records.items():
        sums: dict[tuple[str, str], dict[str, int]] = {}
        for rec in recs:
            for role, models in (rec.metadata.get(USAGE_KEY) or {}).items():
                for model, counts in models.items():
                    row = sums.setdefault((role, model), dict.fromkeys(FIELDS, 0))
                    for f in FIELDS:
                        row[f] += int(counts.get(f, 0))
        plan_roles = {(r["role"], r["model"]): r for r in ((planned or {}).get(sid) or {}).get("roles", [])}
        rows = []
        for (role, model), counts in sorted(sums.items()):
            value = cost_of_counts(prices.get(model), counts)
            if value is None:
                unpriced.add(model)
            else:
                total_cost += value
            for f in FIELDS:
                totals[f] += counts[f]
            row: dict[str, Any] = {"role": role, "model": model, **counts,
                                   "cost": PRICE_UNKNOWN if value is None else value}
            p = plan_roles.get((role, model))
            if p is not None:
                row["planned"] = {"calls": p["calls"], "input_tokens": p["input_tokens"],
                                  "output_tokens": p["output_tokens"], "cost": p["cost"],
                                  **({"cost_scenarios": p["cost_scenarios"]} if "cost_scenarios" in p else {})}
            rows.append(row)
        if rows:
            out[sid] = rows
    return {"subtasks": out, "totals": {**totals, "cost": None if unpriced else total_cost,
                                        "cost_known_part": total_cost, "price_unknown": sorted(unpriced)}}


def usage_metric_rows(results: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(sub-task, metric, value) rows for results.csv: `usage:<role>:<model>:<field>`."""
    rows = []
    for sid, entries in ((results.get("usage") or {}).get("subtasks") or {}).items():
        for e in entries:
            for f in (*FIELDS, "cost"):
                value = e.get(f)
                rows.append((sid, f"usage:{e['role']}:{e['model']}:{f}", "" if value == PRICE_UNKNOWN else value))
            for f in ("calls", "input_tokens"):
                if "planned" in e:
                    rng = e["planned"][f]
                    rows.append((sid, f"usage:{e['role']}:{e['model']}:planned_{f}_min", rng["min"]))
                    rows.append((sid, f"usage:{e['role']}:{e['model']}:planned_{f}_max", rng["max"]))
    return rows
