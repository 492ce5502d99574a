"""One self-contained HTML page for an `align` result: forest plot, Bland–Altman plots, tables.

Plots are inline SVG drawn by `trustmh.report.svg` (milliseconds, no library); every text taken from the data
is escaped.
"""
# ruff: noqa: E741 - `h`/`l` (human/LLM) are the spec's names (docs/align.md#align)

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.align.tables import DQ_COLUMNS
from trustmh.report import svg

TABLE_COLUMNS = ("judge", "attribute", "level", "n_sources", "n_pairs", "icc_c1", "c1_lo", "c1_hi", "icc_a1",
                 "a1_lo", "a1_hi", "category", "koo_li_band", "trust_label", "label_stability", "bias",
                 "bias_lo", "bias_hi", "rmse", "ccc", "loa_lo", "loa_hi", "kappa_quadratic", "kripp_alpha_ordinal")


def _e(x: Any) -> str:
    return html.escape(str(x), quote=True)


def _fmt(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v)


def forest_plot(cells: Sequence[dict[str, Any]]) -> str | None:
    """Every cell's ICC(C,1) and ICC(A,1) with its 95% interval (inline SVG)."""
    rows = [c for c in cells if c.get("icc_c1") is not None or c.get("icc_a1") is not None]
    if not rows:
        return None
    return svg.forest([(f"{r['judge']} · {r['attribute']}" + (f" · {r['level']}" if r.get("level") else ""),
                        [(r.get("icc_c1"), r.get("c1_lo"), r.get("c1_hi"), svg.BLUE, "ICC(C,1)"),
                         (r.get("icc_a1"), r.get("a1_lo"), r.get("a1_hi"), svg.ORANGE, "ICC(A,1)")])
                       for r in rows], title="ICC with 95% interval")


def bland_altman_plots(pairs: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]],
                       cells: Sequence[dict[str, Any]]) -> dict[str, str]:
    """One row of panels per judge: mean vs difference, marker area ∝ number of pairs at that point, bias and
    limits of agreement in red (inline SVG)."""
    stats = {(c["judge"], c["attribute"]): c for c in cells if c.get("level") in (None, "model", "response")
             and (c.get("level") != "model" or c.get("mode") == "faithful")}
    panels: dict[str, list[str]] = {}
    for (j, a), (h, l) in pairs.items():
        h, l = np.asarray(h, float), np.asarray(l, float)
        points: list[tuple[float, float, int]] = []
        if h.size:
            pts, cnt = np.unique(np.column_stack([(h + l) / 2, l - h]), axis=0, return_counts=True)
            points = [(float(x), float(y), int(c)) for (x, y), c in zip(pts, cnt, strict=True)]
        c = stats.get((j, a), {})
        lines = [(c[k], dash) for k, dash in (("bias", ""), ("loa_lo", "4,3"), ("loa_hi", "4,3"))
                 if c.get(k) is not None]
        panels.setdefault(j, []).append(svg.scatter(points, title=a, hlines=lines))
    return {j: "".join(p) for j, p in panels.items()}


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{_e(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_html(result: dict[str, Any]) -> str:
    cells = result.get("cells", [])
    md = result.get("metadata", {})
    parts = ["<!doctype html><html><head><meta charset='utf-8'>",
             f"<title>trustmh align — {_e(result.get('mode'))}</title>",
             "<style>body{font-family:sans-serif;max-width:1400px;margin:1em auto;font-size:13px}"
             "table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 5px;"
             "text-align:right}th{background:#eee}td:first-child,td:nth-child(2){text-align:left}"
             "img{max-width:100%}</style></head><body>",
             f"<h1>Judge–human agreement (MentalAlign), mode <code>{_e(result.get('mode'))}</code></h1>",
             f"<p>seed {_e(result.get('seed'))} · config {_e(str(md.get('config_hash', ''))[:16])} · "
             f"thresholds {_e(md.get('thresholds_version'))}</p>"]
    if result.get("mode") == "faithful":
        tc = result.get("tertile_cutoffs", {})

        def cuts(v: object) -> str:
            return ", ".join(f"{x:.3f}" for x in v) if isinstance(v, list | tuple) else str(v)

        parts.append("<p>Categories depend only on the width of the ICC(C,1) interval (relative tertiles "
                     f"{_e(cuts(tc.get('fixed')))}; recomputed from these widths {_e(cuts(tc.get('recomputed')))}),"
                     " not on the ICC value.</p>")
    diffs = result.get("differences_from_faithful")
    if diffs:
        parts.append("<h2>Differences from faithful</h2><ul>" + "".join(f"<li>{_e(d)}</li>" for d in diffs)
                     + "</ul>")
    fp = forest_plot(cells)
    if fp:
        parts.append(f"<h2>ICC intervals</h2>{fp}")
    parts.append("<h2>Per cell</h2>" + _table(cells, TABLE_COLUMNS))
    pairs = result.get("_internals", {}).get("pairs")
    if pairs:
        plots = bland_altman_plots(pairs, cells)
        if plots:
            parts.append("<h2>Bland–Altman (pooled pairs)</h2>")
            for j, src in plots.items():
                parts.append(f"<h3>{_e(j)}</h3><div>{src}</div>")
    facts = result.get("data_facts")
    if facts:
        parts.append("<h2>Data facts</h2><ul>" + "".join(f"<li>{_e(k)}: {_e(v)}</li>" for k, v in facts.items())
                     + "</ul>")
    dq = result.get("data_quality", [])
    if dq:
        parts.append("<h2>Data quality (judge × source)</h2>" + _table(dq, DQ_COLUMNS))
    sens = result.get("sensitivity")
    if sens:
        cols = list(sens[0].keys())
        parts.append("<h2>Sensitivity panel (faithful, one change at a time)</h2>" + _table(sens, cols))
    parts.append("<h2>Metadata</h2><pre>" + _e(_pretty(md)) + "</pre></body></html>\n")
    return "".join(parts)


def _pretty(md: dict[str, Any]) -> str:
    import json

    return json.dumps(md, indent=1, ensure_ascii=False, default=str)
