"""Small inline-SVG plots written by hand: no plotting library, no network, milliseconds to draw, and every
label escaped. Used where a page needs many plots (a matplotlib PNG costs about half a second each)."""

from __future__ import annotations

import html
from collections.abc import Sequence

BLUE, ORANGE, RED, GREY = "#1f77b4", "#ff7f0e", "#d62728", "#999"


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def _scale(v: float, lo: float, hi: float, a: float, b: float) -> float:
    return a + (v - lo) / ((hi - lo) or 1.0) * (b - a)


def forest(rows: Sequence[tuple[str, Sequence[tuple[float | None, float | None, float | None, str, str]]]],
           *, lo: float = -1.0, hi: float = 1.0, marks: Sequence[float] = (0.0, 0.5, 0.75, 0.9),
           width: int = 760, title: str = "") -> str:
    """One line per row label; each row holds (point, lower, upper, colour, legend name) series, drawn as a
    segment with a dot, slightly offset so two series do not overlap. None values are skipped."""
    left, right, line = 230, width - 20, 16
    height = 30 + line * len(rows) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{_e(title or "forest plot")}" style="font:11px sans-serif">']
    for m in marks:
        x = _scale(m, lo, hi, left, right)
        out.append(f'<line x1="{x:.1f}" y1="20" x2="{x:.1f}" y2="{height - 24}" stroke="{GREY}" '
                   f'stroke-dasharray="{"" if m == 0 else "2,3"}"/>'
                   f'<text x="{x:.1f}" y="{height - 10}" text-anchor="middle">{m:g}</text>')
    legend: dict[str, str] = {}
    for i, (label, series) in enumerate(rows):
        y = 30 + line * i
        out.append(f'<text x="{left - 6}" y="{y + 4}" text-anchor="end">{_e(label)}</text>')
        for k, (pt, a, b, colour, name) in enumerate(series):
            legend[name] = colour
            yy = y + (k - (len(series) - 1) / 2) * 5
            if a is not None and b is not None:
                out.append(f'<line x1="{_scale(max(a, lo), lo, hi, left, right):.1f}" y1="{yy:.1f}" '
                           f'x2="{_scale(min(b, hi), lo, hi, left, right):.1f}" y2="{yy:.1f}" '
                           f'stroke="{colour}" stroke-width="1.5"/>')
            if pt is not None:
                out.append(f'<circle cx="{_scale(min(max(pt, lo), hi), lo, hi, left, right):.1f}" cy="{yy:.1f}" '
                           f'r="2.8" fill="{colour}"/>')
    for k, (name, colour) in enumerate(legend.items()):
        out.append(f'<circle cx="{left + 10 + 110 * k}" cy="10" r="3" fill="{colour}"/>'
                   f'<text x="{left + 18 + 110 * k}" y="14">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def scatter(points: Sequence[tuple[float, float, int]], *, title: str, hlines: Sequence[tuple[float, str]] = (),
            x_range: tuple[float, float] = (1.0, 5.0), y_range: tuple[float, float] = (-4.0, 4.0),
            width: int = 230, height: int = 170) -> str:
    """A small scatter panel: (x, y, count) points, marker area ∝ count; horizontal reference lines
    (value, dash pattern or "" for solid) in red, y = 0 in grey."""
    left, right, top, bottom = 30, width - 8, 18, height - 20
    x0, x1 = x_range
    y0, y1 = y_range
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="{_e(title)}" style="font:10px sans-serif">',
           f'<text x="{width / 2:.0f}" y="12" text-anchor="middle">{_e(title)}</text>',
           f'<rect x="{left}" y="{top}" width="{right - left}" height="{bottom - top}" fill="none" stroke="{GREY}"/>']
    for v in (y0, 0.0, y1):
        y = _scale(v, y0, y1, bottom, top)
        out.append(f'<text x="{left - 3}" y="{y + 3:.1f}" text-anchor="end">{v:g}</text>')
    for v in (x0, x1):
        out.append(f'<text x="{_scale(v, x0, x1, left, right):.1f}" y="{height - 6}" text-anchor="middle">{v:g}</text>')
    zero = _scale(0.0, y0, y1, bottom, top)
    out.append(f'<line x1="{left}" y1="{zero:.1f}" x2="{right}" y2="{zero:.1f}" stroke="{GREY}"/>')
    biggest = max((c for _, _, c in points), default=1)
    for x, y, c in points:
        r = 1.5 + 7.0 * (c / biggest) ** 0.5
        out.append(f'<circle cx="{_scale(x, x0, x1, left, right):.1f}" cy="{_scale(y, y0, y1, bottom, top):.1f}" '
                   f'r="{r:.1f}" fill="{BLUE}" fill-opacity="0.45"><title>{c} pair(s)</title></circle>')
    for v, dash in hlines:
        y = _scale(min(max(v, y0), y1), y0, y1, bottom, top)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" stroke="{RED}" '
                   f'stroke-dasharray="{dash}"/>')
    out.append("</svg>")
    return "".join(out)
