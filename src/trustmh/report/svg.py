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


# Width of one character of the plots' 11px sans-serif, on the generous side (wide letters, bold fallback
# fonts): a label area sized with it holds its longest label whole (the report's browser test measures it).
CHAR_PX = 6.6
LEGEND_Y0, LEGEND_LINE = 10, 15


def text_px(text: str) -> float:
    """The width a label is given, in pixels (at most its real width in a browser's 11px sans-serif)."""
    return CHAR_PX * len(text)


def _marker(shape: str, x: float, y: float, colour: str, r: float) -> str:
    if shape == "diamond":
        return (f'<polygon points="{x:.1f},{y - r - 0.8:.1f} {x + r + 0.8:.1f},{y:.1f} {x:.1f},{y + r + 0.8:.1f} '
                f'{x - r - 0.8:.1f},{y:.1f}" fill="{colour}"/>')
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{colour}"/>'


def _legend(names: dict[str, str], shapes: dict[str, str], x0: float, width: float) -> tuple[list[str], int]:
    """Legend entries laid out left to right from x0, on as many lines as they need within `width`; returns
    the SVG and the number of lines."""
    out, x, line = [], x0, 0
    for name, colour in names.items():
        step = 8 + text_px(name) + 18
        if x > x0 and x + step > width:
            x, line = x0, line + 1
        y = LEGEND_Y0 + LEGEND_LINE * line
        out.append(f'<g data-legend="{_e(name)}">{_marker(shapes.get(name, "dot"), x, y, colour, 3)}'
                   f'<text x="{x + 8:.1f}" y="{y + 4}">{_e(name)}</text></g>')
        x += step
    return out, line + 1


def _off_scale(pt: float, lo: float, hi: float, left: float, right: float, y: float, colour: str) -> str:
    """A value beyond the axis: a triangle at the edge it passed, and the value written beside it."""
    value = f"{pt:.4g}"
    if pt > hi:
        tri = f"{right - 6:.1f},{y - 4:.1f} {right:.1f},{y:.1f} {right - 6:.1f},{y + 4:.1f}"
        label = (f'<text x="{right - 9:.1f}" y="{y + 4:.1f}" text-anchor="end" fill="{colour}">'
                 f'off scale: {value}</text>')
    else:
        tri = f"{left + 6:.1f},{y - 4:.1f} {left:.1f},{y:.1f} {left + 6:.1f},{y + 4:.1f}"
        label = f'<text x="{left + 9:.1f}" y="{y + 4:.1f}" fill="{colour}">{value}: off scale</text>'
    return (f'<g data-offscale="{value}"><title>{value}: beyond the axis ({lo:g} to {hi:g})</title>'
            f'<polygon points="{tri}" fill="{colour}"/>{label}</g>')


def forest(rows: Sequence[tuple[str, Sequence[tuple[float | None, float | None, float | None, str, str]]]],
           *, lo: float = -1.0, hi: float = 1.0, marks: Sequence[float] = (0.0, 0.5, 0.75, 0.9),
           width: int = 760, title: str = "", shapes: dict[str, str] | None = None) -> str:
    """One line per row label; each row holds (point, lower, upper, colour, legend name) series, drawn as a
    segment with a dot, slightly offset so two series do not overlap. None values are skipped.

    The label area is as wide as the longest label needs (the plot keeps `width - 250` pixels, the picture
    grows); a point beyond [lo, hi] is drawn at the edge as a triangle with its value written; `shapes` maps a
    legend name to "diamond" (default: a dot)."""
    shapes = shapes or {}
    left = max(230.0, 14 + max((text_px(label) for label, _ in rows), default=0.0))
    right = left + width - 250
    total = right + 20
    names: dict[str, str] = {}
    for _, series in rows:
        for *_, colour, name in series:
            names.setdefault(name, colour)
    legend, legend_lines = _legend(names, shapes, left + 10, total)
    top, line = LEGEND_Y0 + LEGEND_LINE * (legend_lines - 1) + 20, 16
    height = top + line * len(rows) + 24
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total:.0f}" height="{height}" role="img" '
           f'aria-label="{_e(title or "forest plot")}" style="font:11px sans-serif">']
    for m in marks:
        x = _scale(m, lo, hi, left, right)
        out.append(f'<line x1="{x:.1f}" y1="{top - 10}" x2="{x:.1f}" y2="{height - 24}" stroke="{GREY}" '
                   f'stroke-dasharray="{"" if m == 0 else "2,3"}"/>'
                   f'<text x="{x:.1f}" y="{height - 10}" text-anchor="middle">{m:g}</text>')
    for i, (label, series) in enumerate(rows):
        y = top + line * i
        out.append(f'<text x="{left - 6:.1f}" y="{y + 4}" text-anchor="end" data-row-label="">{_e(label)}</text>')
        for k, (pt, a, b, colour, name) in enumerate(series):
            yy = y + (k - (len(series) - 1) / 2) * 5
            if a is not None and b is not None and a <= hi and b >= lo:
                out.append(f'<line x1="{_scale(max(a, lo), lo, hi, left, right):.1f}" y1="{yy:.1f}" '
                           f'x2="{_scale(min(b, hi), lo, hi, left, right):.1f}" y2="{yy:.1f}" '
                           f'stroke="{colour}" stroke-width="1.5"/>')
            if pt is None:
                continue
            if lo <= pt <= hi:
                out.append(_marker(shapes.get(name, "dot"), _scale(pt, lo, hi, left, right), yy, colour, 2.8))
            else:
                out.append(_off_scale(pt, lo, hi, left, right, yy, colour))
    out.extend(legend)
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
