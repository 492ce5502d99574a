"""One self-contained HTML page for an `align` result: forest plot, Bland–Altman plots, tables.

Plots are matplotlib (Agg) PNGs inlined as base64; every text taken from the data is escaped.
"""
# ruff: noqa: E741 - `h`/`l` (human/LLM) are the spec's names (MENTALBENCH.md §4)

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.align.tables import DQ_COLUMNS

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


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def forest_plot(cells: Sequence[dict[str, Any]]) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # plotting is optional
        return None
    rows = [c for c in cells if c.get("icc_c1") is not None or c.get("icc_a1") is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(rows) + 1.2))
    y = np.arange(len(rows))[::-1]
    for form, off, colour in (("c1", 0.15, "tab:blue"), ("a1", -0.15, "tab:orange")):
        pt = np.array([np.nan if r.get(f"icc_{form}") is None else r[f"icc_{form}"] for r in rows], float)
        lo = np.array([np.nan if r.get(f"{form}_lo") is None else r[f"{form}_lo"] for r in rows], float)
        hi = np.array([np.nan if r.get(f"{form}_hi") is None else r[f"{form}_hi"] for r in rows], float)
        ax.hlines(y + off, lo, hi, color=colour, lw=1.5)
        ax.plot(pt, y + off, "o", color=colour, ms=3.5, label=f"ICC({form[0].upper()},1)")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{r['judge']} · {r['attribute']}" + (f" · {r['level']}" if r.get("level") else "")
                        for r in rows], fontsize=7)
    ax.axvline(0, color="grey", lw=0.5)
    for cut in (0.5, 0.75, 0.9):
        ax.axvline(cut, color="grey", lw=0.5, ls=":")
    ax.set_xlabel("ICC with 95% interval")
    ax.legend(loc="lower left", fontsize=7)
    return _png(fig)


def bland_altman_plots(pairs: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]],
                       cells: Sequence[dict[str, Any]]) -> dict[str, str]:
    """One figure per judge: mean vs difference, marker area ∝ number of pairs at that point."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    stats = {(c["judge"], c["attribute"]): c for c in cells if c.get("level") in (None, "model", "response")
             and (c.get("level") != "model" or c.get("mode") == "faithful")}
    by_judge: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for (j, a), (h, l) in pairs.items():
        by_judge.setdefault(j, []).append((a, np.asarray(h, float), np.asarray(l, float)))
    out = {}
    for j, items in by_judge.items():
        ncol = 4
        nrow = int(np.ceil(len(items) / ncol))
        fig, axes = plt.subplots(nrow, ncol, figsize=(3.2 * ncol, 2.6 * nrow), squeeze=False)
        for ax in axes.ravel()[len(items):]:
            ax.axis("off")
        for ax, (a, h, l) in zip(axes.ravel(), items, strict=False):
            if h.size:
                m, d = (h + l) / 2, l - h
                pts, cnt = np.unique(np.column_stack([m, d]), axis=0, return_counts=True)
                ax.scatter(pts[:, 0], pts[:, 1], s=4 + 200 * cnt / cnt.max(), alpha=0.5, color="tab:blue")
            c = stats.get((j, a), {})
            for key, ls in (("bias", "-"), ("loa_lo", "--"), ("loa_hi", "--")):
                if c.get(key) is not None:
                    ax.axhline(c[key], color="tab:red", ls=ls, lw=1)
            ax.axhline(0, color="grey", lw=0.5)
            ax.set_title(a, fontsize=8)
            ax.tick_params(labelsize=7)
        fig.supxlabel("mean of human and judge", fontsize=8)
        fig.supylabel("judge − human", fontsize=8)
        out[j] = _png(fig)
    return out


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
        parts.append(f"<h2>ICC intervals</h2><img alt='forest plot' src='{fp}'>")
    parts.append("<h2>Per cell</h2>" + _table(cells, TABLE_COLUMNS))
    pairs = result.get("_internals", {}).get("pairs")
    if pairs:
        plots = bland_altman_plots(pairs, cells)
        if plots:
            parts.append("<h2>Bland–Altman (pooled pairs)</h2>")
            for j, src in plots.items():
                parts.append(f"<h3>{_e(j)}</h3><img alt='Bland–Altman {_e(j)}' src='{src}'>")
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
