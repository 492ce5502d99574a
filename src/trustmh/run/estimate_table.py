"""`trustmh plan`'s plain-text table: the estimate (`run/estimate.py`) as a person reads it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmh.discounts import table_lines
from trustmh.run.outlook import items_text


def _money(x: Any) -> str:
    if x is None or x == "price unknown":
        return "price unknown"
    return f"{x:.4f}" if x < 1 else f"{x:,.2f}"


def _range(lo: int, hi: int) -> str:
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def table(data: Mapping[str, Any]) -> str:
    """The plan as a plain-text table."""
    head = (f"{'sub-task':<34} {'role':<8} {'model':<32} {'samples':>7} {'calls':>11} {'input tokens':>19} "
            f"{'output (exp/max)':>19} {'cost (exp/max)':>26}")
    lines = [head, "-" * len(head)]
    for sid, sub in data["subtasks"].items():
        if not sub["roles"]:
            lines.append(f"{sid:<34} {sub.get('note', '')}")
        for row in sub["roles"]:
            c = row["cost"]
            money = "price unknown" if c == "price unknown" else f"{_money(c['expected'])} / {_money(c['max'])}"
            lines.append(f"{sid:<34} {row['role']:<8} {row['model'][-32:]:<32} {row['samples']:>7} "
                         f"{_range(row['calls']['min'], row['calls']['max']):>11} "
                         f"{_range(row['input_tokens']['min'], row['input_tokens']['max']):>19} "
                         f"{row['output_tokens']['expected']:>9,}/{row['output_tokens']['max']:<9,} {money:>26}")
    t = data["totals"]
    known = t["cost"]
    if not known["price_unknown"]:
        total_cost = f"{_money(known['expected'])} / {_money(known['max'])}"
    elif not data.get("priced"):
        total_cost = "not estimated (no --prices FILE)"
    else:
        total_cost = (f"price unknown for {', '.join(known['price_unknown'])} (known part "
                      f"{_money(known['known_part']['expected'])} / {_money(known['known_part']['max'])})")
    w = data["wall_seconds"]
    a = data["assumptions"]
    lines += ["-" * len(head),
              f"total: calls {_range(t['calls']['min'], t['calls']['max'])}, input tokens "
              f"{_range(t['input_tokens']['min'], t['input_tokens']['max'])}, output tokens expected "
              f"{t['output_tokens']['expected']:,} (at most {t['output_tokens']['max']:,}), cost {total_cost}",
              f"wall time: {w['min'] / 60:.1f}-{w['max'] / 60:.1f} min at {a['max_connections']} connections and "
              f"{a['latency_seconds']:g} s per call (assumed)",
              *(f"tokens of {', '.join(models)}: {note}" for note, models in _by_note(a["tokenizers"]).items()),
              f"expected reply lengths (tokens): {', '.join(f'{k} {v}' for k, v in a['expected_output_tokens'].items())}"]
    if "batch" in data:
        lines += table_lines(t["cost_scenarios"], data["batch"], data["prompt_cache"], t.get("rate_fallbacks") or {},
                             priced=bool(data.get("priced")))
    for sid, reason in data.get("not_run", {}).items():
        lines.append(f"not run: {sid}: {reason}")
    gate = data["gate"]
    lines.append(f"\ngate ({gate['policy']}): what the run will be able to decide")
    id_width = max((len(row["id"]) for row in gate["checks"]), default=0)
    for row in gate["checks"]:
        if not row["in_run"]:
            lines.append(f"  {'not run':<13} {row['id']:<{id_width}} {row['reason']}")
            continue
        width = (f"; {row['width_basis']}" if row.get("width") is None else
                 f"; expected 95% width {row['width']:.3f} ({row['width_basis']})")
        lines.append(f"  {'decidable' if row['decidable'] else 'INSUFFICIENT':<13} {row['id']:<{id_width}} "
                     f"{row['reason']}{width}")
    if "power" in data:
        lines.append("\npower: items needed per sub-task (95% intervals; 80% power, two-sided alpha 0.05)")
        for sid, row in data["power"].items():
            bits = []
            for key, label in (("target_width", "width"), ("detect_difference", "difference")):
                if key in row:
                    p = row[key]
                    cap = f" (only {row['available_items']} available)" if p["capped"] else ""
                    bits.append(f"{label} {p.get('width', p.get('difference'))}: {items_text(p['items_needed'])}{cap}")
            lines.append(f"  {sid:<34} {'; '.join(bits)} [{row['basis']}]")
    return "\n".join(lines)


def _by_note(tokenizers: Mapping[str, str]) -> dict[str, list[str]]:
    """Models grouped by how their tokens are counted (one line per way, not one per model)."""
    out: dict[str, list[str]] = {}
    for model, note in tokenizers.items():
        out.setdefault(note, []).append(model)
    return out
