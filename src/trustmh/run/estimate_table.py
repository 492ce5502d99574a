"""`trustmh plan`'s plain-text table: the estimate (`run/estimate.py`) as a person reads it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from trustmh.discounts import table_lines
from trustmh.run.outlook import items_text
from trustmh.run.plan_figures import PRICE_UNKNOWN, CostTotals, MinMax, PlanEstimate


def _money(x: float | None) -> str:
    if x is None:
        return PRICE_UNKNOWN
    return f"{x:.4f}" if x < 1 else f"{x:,.2f}"


def _range(bounds: MinMax) -> str:
    lo, hi = int(bounds.min), int(bounds.max)
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def table(data: PlanEstimate) -> str:
    """The plan as a plain-text table."""
    head = (f"{'sub-task':<34} {'role':<8} {'model':<32} {'samples':>7} {'calls':>11} {'input tokens':>19} "
            f"{'output (exp/max)':>19} {'cost (exp/max)':>26}")
    lines = [head, "-" * len(head)]
    for sid, sub in data.subtasks.items():
        if not sub.roles:
            lines.append(f"{sid:<34} {sub.note or ''}")
        for row in sub.roles:
            c = row.cost
            money = PRICE_UNKNOWN if c is None else f"{_money(c.expected)} / {_money(c.max)}"
            lines.append(f"{sid:<34} {row.role:<8} {row.model[-32:]:<32} {row.samples:>7} "
                         f"{_range(row.calls):>11} {_range(row.input_tokens):>19} "
                         f"{row.output_tokens.expected:>9,}/{row.output_tokens.max:<9,} {money:>26}")
    t = data.totals
    total_cost = _total_cost(t.cost, data.priced)
    if t.cost_live is not None and not t.cost.price_unknown:
        total_cost = f"at batch rates {total_cost} (live {_total_cost(t.cost_live, data.priced)})"
    w = data.wall_seconds
    a = data.assumptions
    lines += ["-" * len(head),
              f"total: calls {_range(t.calls)}, input tokens {_range(t.input_tokens)}, output tokens expected "
              f"{t.output_tokens.expected:,} (at most {t.output_tokens.max:,}), cost {total_cost}",
              f"wall time: {w.min / 60:.1f}-{w.max / 60:.1f} min at {a.max_connections} connections and "
              f"{a.latency_seconds:g} s per call (assumed)",
              *(f"tokens of {', '.join(models)}: {note}" for note, models in _by_note(a.tokenizers).items()),
              f"expected reply lengths (tokens): {', '.join(f'{k} {v}' for k, v in a.expected_output_tokens.items())}"]
    if data.anchor_calls:
        lines.append(f"anchors (judge drift, docs/judge-probes.md#drift): {data.anchor_calls:,} judge calls, "
                     f"{data.anchor_share:.1%} of the run's calls (included above)")
    lines += table_lines(t.cost_scenarios.to_json(), data.batch.to_json(), [s.to_json() for s in data.prompt_cache],
                         t.rate_fallbacks, priced=data.priced)
    for sid, reason in data.not_run.items():
        lines.append(f"not run: {sid}: {reason}")
    gate = data.gate
    lines.append(f"\ngate ({gate.policy}): what the run will be able to decide")
    id_width = max((len(row.id) for row in gate.checks), default=0)
    for row in gate.checks:
        if not row.in_run:
            lines.append(f"  {'not run':<13} {row.id:<{id_width}} {row.reason}")
            continue
        width = (f"; {row.width_basis}" if row.width is None else
                 f"; expected 95% width {row.width:.3f} ({row.width_basis})")
        status = "decidable" if row.decidable else "NOT TESTABLE" if row.not_testable else "INSUFFICIENT"
        lines.append(f"  {status:<13} {row.id:<{id_width}} "
                     f"{row.reason}{width}")
    if data.power is not None:
        lines.append("\npower: items needed per sub-task (95% intervals; 80% power, two-sided alpha 0.05)")
        for sid, p in data.power.items():
            bits = []
            for need, label in ((p.target_width, "width"), (p.detect_difference, "difference")):
                if need is not None:
                    cap = f" (only {p.available_items} available)" if need.capped else ""
                    bits.append(f"{label} {need.target}: {items_text(need.items_needed)}{cap}")
            lines.append(f"  {sid:<34} {'; '.join(bits)} [{p.basis}]")
    return "\n".join(lines)


def _total_cost(known: CostTotals, priced: bool) -> str:
    """The run's cost as the total line says it: expected / max, or which prices are missing."""
    if not known.price_unknown:
        return f"{_money(known.expected)} / {_money(known.max)}"
    if not priced:
        return "not estimated (no --prices FILE)"
    return (f"price unknown for {', '.join(known.price_unknown)} (known part "
            f"{_money(known.known_part.expected)} / {_money(known.known_part.max)})" + product_price_hint(known.price_unknown))


def product_price_hint(unpriced: Sequence[str]) -> str:
    """How to price a product of one's own (`http/NAME`), which no provider's list has (docs/cost.md#product)."""
    products = [m for m in unpriced if m.startswith("http/")]
    if not products:
        return ""
    return (f"; give the product's own cost as a [\"{products[0]}\"] table in the price file (input and output per "
            "million tokens, or per_call for one billed by the request; 0 and 0 for a product whose calls cost "
            "nothing, docs/cost.md#product)")


def _by_note(tokenizers: Mapping[str, str]) -> dict[str, list[str]]:
    """Models grouped by how their tokens are counted (one line per way, not one per model)."""
    out: dict[str, list[str]] = {}
    for model, note in tokenizers.items():
        out.setdefault(note, []).append(model)
    return out
