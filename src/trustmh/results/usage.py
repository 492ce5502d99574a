"""Usage and cost per sub-task and role, from the records' call counts (`Record.metadata["usage"]`, written
by the run for every sample), with the plan's figures beside them (docs/cost.md). Plain Python.

Per (sub-task, role, model): calls, calls answered by the response cache (not paid), input tokens charged at
the full rate, output tokens, input tokens the provider read from its prompt cache, and the cost where the
price file knows the model ("price unknown" otherwise, never 0).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.core import Record
from trustmh.prices import PRICE_UNKNOWN, Price, cost

USAGE_KEY = "usage"
FIELDS = ("calls", "cached_calls", "input_tokens", "output_tokens", "cached_tokens")


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
            value = cost(prices.get(model), counts["input_tokens"], counts["output_tokens"], counts["cached_tokens"])
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
                                  "output_tokens": p["output_tokens"], "cost": p["cost"]}
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
