"""Geometry of the report's inline SVG plots. Plain numbers and strings only: the templates draw them
(`templates/plots.html.j2`) and escape every label."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.catalogue import BY_ID, PILLAR_TITLES, PILLARS

# colour-blind-safe (Okabe–Ito, then Tol) — enough for a dozen runs before repeating
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
           "#332288", "#88CCEE", "#117733", "#AA4499"]
GREY = "#888"


def colours(n: int) -> list[str]:
    return [PALETTE[i % len(PALETTE)] for i in range(n)]


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    return a + (v - lo) / ((hi - lo) or 1.0) * (b - a)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / (n - 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = min((s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw), default=raw)
    first = math.ceil(lo / step - 1e-9) * step
    out, v = [], first
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def pillar_bars(runs: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]], width: int = 1000
                ) -> dict[str, Any]:
    """Parallel bars: one group per pillar, one bar per run (normalised score, 0–1)."""
    left, right, bar, gap = 220, width - 60, 12, 10
    pillars = [p for p in PILLARS if any(r["pillars"].get(p) is not None for r in rows)]
    groups, y = [], 28
    for p in pillars:
        bars = []
        for k, (info, row) in enumerate(zip(runs, rows, strict=True)):
            v = row["pillars"].get(p)
            yy = y + k * bar
            if v is None:
                bars.append({"x": left, "y": yy, "w": 0, "h": bar - 2, "colour": info["colour"], "value": None,
                             "label": info["label"], "tx": left + 4, "ty": yy + bar - 3})
                continue
            w = _scale(v, 0.0, 1.0, 0, right - left)
            bars.append({"x": left, "y": yy, "w": w, "h": bar - 2, "colour": info["colour"], "value": v,
                         "label": info["label"], "tx": left + w + 4, "ty": yy + bar - 3})
        h = bar * len(rows)
        groups.append({"pillar": p, "title": PILLAR_TITLES[p], "y": y + h / 2 + 4, "bars": bars})
        y += h + gap
    ticks = [{"x": _scale(t, 0, 1, left, right), "text": f"{t:g}"} for t in (0, 0.25, 0.5, 0.75, 1.0)]
    return {"width": width, "height": y + 24, "groups": groups, "ticks": ticks, "top": 20, "bottom": y,
            "left": left, "right": right}


def dot_panel(row: Mapping[str, Any], runs: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]],
              width: int = 480) -> dict[str, Any]:
    """One sub-task: a dot and its interval per run, on an axis spanning the anchors and the data."""
    sid = row["id"]
    left, right, line, top = 150, width - 90, 18, 26
    vals: list[float] = []
    for cell in row["cells"]:
        if cell and _finite(cell["value"]):
            vals.append(cell["value"])
            ci = cell.get("ci") or []
            vals.extend(c for c in ci if _finite(c))
    mode = results[0].get("mode") if results else "default"
    if sid in BY_ID and mode in BY_ID[sid].anchors:
        vals.extend(BY_ID[sid].anchors[mode])
    lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    dots = []
    for k, (info, cell) in enumerate(zip(runs, row["cells"], strict=True)):
        y = top + k * line
        d: dict[str, Any] = {"y": y, "label": info["label"], "colour": info["colour"], "cx": None, "x1": None,
                             "x2": None, "text": "not computed" if cell else "not run", "ty": y + 4}
        if cell and _finite(cell["value"]):
            d["cx"] = _scale(cell["value"], lo, hi, left, right)
            d["text"] = f"{cell['value']:.3f}"
            ci = cell.get("ci") or []
            if len(ci) == 2 and _finite(ci[0]) and _finite(ci[1]):
                d["x1"], d["x2"] = _scale(ci[0], lo, hi, left, right), _scale(ci[1], lo, hi, left, right)
        dots.append(d)
    bottom = top + line * max(len(runs), 1) - 6
    ticks = [{"x": _scale(t, lo, hi, left, right), "text": f"{t:g}"} for t in _ticks(lo, hi, 4)]
    return {"id": sid, "title": row["title"], "direction": row["direction"], "width": width,
            "height": bottom + 22, "top": top - 10, "bottom": bottom, "left": left, "right": right,
            "ticks": ticks, "dots": dots}


def _heat(share: float) -> str:
    # white → blue; the diagonal and off-diagonal share one scale (row share)
    r = round(255 - share * (255 - 8))
    g = round(255 - share * (255 - 81))
    b = round(255 - share * (255 - 156))
    return f"#{r:02x}{g:02x}{b:02x}"


def _matrices(metrics: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Mapping[str, Any]]]:
    found = []
    for name, value in metrics.items():
        if isinstance(value, Mapping) and "labels" in value and "matrix" in value:
            found.append((prefix + name, value))
        elif isinstance(value, Mapping) and prefix == "":
            found.extend(_matrices(value, f"{name}."))
    return found


def heatmaps(results: Mapping[str, Any], max_width: int = 380) -> list[dict[str, Any]]:
    """Every confusion matrix of a run as a heat map sized to fit a column (rows = gold, columns =
    predicted; colour = share of the gold row)."""
    out = []
    for sid, sub in (results.get("subtasks") or {}).items():
        for name, cm in _matrices(sub.get("metrics") or {}):
            labels = [str(x) for x in cm.get("labels") or []]
            matrix = cm.get("matrix") or []
            n = len(labels)
            if not n or len(matrix) != n:
                continue
            label_w = min(150, 8 + 6 * max(len(s) for s in labels))
            cell = max(16, min(34, (max_width - label_w - 10) // n))
            top = int(label_w * 0.87) + 8  # room for the column labels, rotated 60°
            cells = []
            for i, row in enumerate(matrix):
                total = sum(v for v in row if _finite(v)) or 0
                for j, v in enumerate(row):
                    share = (v / total) if total and _finite(v) else 0.0
                    cells.append({"x": label_w + j * cell, "y": top + i * cell, "fill": _heat(share),
                                  "text": str(v), "dark": share > 0.55, "gold": labels[i], "pred": labels[j],
                                  "share": share})
            out.append({"subtask": sid, "name": name, "cell": cell, "n": n, "labels": labels,
                        "label_w": label_w, "top": top, "width": label_w + n * cell + top // 2 + 10,
                        "height": top + n * cell + 6, "cells": cells,
                        "rows": [{"y": top + i * cell + cell / 2 + 4, "text": lab} for i, lab in enumerate(labels)],
                        "cols": [{"x": label_w + j * cell + cell / 2, "text": lab} for j, lab in enumerate(labels)],
                        "fs": 10 if cell >= 24 else 8})
    return out


def robustness_curves(runs: Sequence[Mapping[str, Any]], results: Sequence[Mapping[str, Any]],
                      width: int = 300, height: int = 190) -> list[dict[str, Any]]:
    """Retention (default mode) or relative drop (faithful) over perturbation strength p: one panel per
    (robustness sub-task, perturbation level), one line per run."""
    sids = [s for s in BY_ID if s.startswith("robustness/") and any(s in (r.get("subtasks") or {}) for r in results)]
    panels = []
    for sid in sids:
        curves: dict[str, list[tuple[str, Mapping[str, Any], Mapping[str, Any]]]] = {}
        metric = "retention"
        for info, res in zip(runs, results, strict=True):
            m = ((res.get("subtasks") or {}).get(sid) or {}).get("metrics") or {}
            curve = m.get("retention_curve")
            if not isinstance(curve, Mapping):
                curve, metric = m.get("relative_drop_curve"), "relative drop"
            if not isinstance(curve, Mapping):
                continue
            for level, pts in curve.items():
                if isinstance(pts, Mapping):
                    curves.setdefault(str(level), []).append((str(level), info, pts))
        for level, entries in curves.items():
            ps = sorted({float(p) for _, _, pts in entries for p in pts})
            ys = [float(v) for _, _, pts in entries for v in pts.values() if _finite(v)]
            if not ps or not ys:
                continue
            x0, x1 = 0.0, max(ps)
            y0, y1 = min(0.0, min(ys)), max(1.0, max(ys))
            left, right, top, bottom = 36, width - 10, 22, height - 26
            lines = []
            for _, info, pts in entries:
                xy = [(_scale(float(p), x0, x1, left, right), _scale(float(v), y0, y1, bottom, top), float(p),
                       float(v)) for p, v in sorted(pts.items(), key=lambda kv: float(kv[0])) if _finite(v)]
                if xy:
                    lines.append({"colour": info["colour"], "label": info["label"],
                                  "points": " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in xy),
                                  "dots": [{"x": x, "y": y, "title": f"{info['label']}: p={p:g}, {v:.3f}"}
                                           for x, y, p, v in xy]})
            panels.append({"subtask": sid, "level": level, "metric": metric, "width": width, "height": height,
                           "left": left, "right": right, "top": top, "bottom": bottom, "lines": lines,
                           "xticks": [{"x": _scale(p, x0, x1, left, right), "text": f"{p:g}"} for p in [0.0, *ps]],
                           "yticks": [{"y": _scale(t, y0, y1, bottom, top), "text": f"{t:g}"}
                                      for t in _ticks(y0, y1, 3)],
                           "one": _scale(1.0, y0, y1, bottom, top) if metric == "retention" else None})
    return panels
