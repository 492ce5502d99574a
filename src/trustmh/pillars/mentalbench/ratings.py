"""Judge and human cell parsers (docs/pillars/mentalbench.md#judge-parsing).

Both parsers always run on every cell. The *strict* parser is the original authors' rule and feeds
`faithful`; the *robust* parser feeds `default` and records, per attribute, a `status` so that nothing is
dropped silently. Everything here is plain Python on strings; `parse_cells` turns a grid of raw cells into
numpy arrays for the analysis.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from trustmh.judges.parse import strip_reasoning

ATTRIBUTES: tuple[str, ...] = ("Guidance", "Informativeness", "Relevance", "Safety",
                               "Empathy", "Helpfulness", "Understanding")
GROUPS: dict[str, str] = {"Guidance": "CSS", "Informativeness": "CSS", "Relevance": "CSS", "Safety": "CSS",
                          "Empathy": "ARS", "Helpfulness": "ARS", "Understanding": "ARS"}

# Status codes (index into STATUSES). Only ok/recovered carry a score.
STATUSES: tuple[str, ...] = ("ok", "recovered", "missing_key", "out_of_range", "non_numeric",
                             "unparseable", "no_output", "no_response")
ST = {name: i for i, name in enumerate(STATUSES)}
VALID_CODES = (ST["ok"], ST["recovered"])

# Which robust step produced the object (per cell).
STEPS: tuple[str, ...] = ("none", "json", "span", "quotes", "regex")

_CURLY_DOUBLE = str.maketrans({"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"'})
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```", re.S)
_OPEN_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*)\Z", re.S)
_KEY_RX = {a: re.compile(r"[\"\u201c\u201d]" + a + r"[\"\u201c\u201d]\s*:\s*[\"\u201c\u201d]?(-?\d+(?:\.\d+)?)")
           for a in ATTRIBUTES}


def is_empty(cell: object) -> bool:
    """Empty cell: None, float NaN, or a blank string."""
    if cell is None:
        return True
    if isinstance(cell, float) and math.isnan(cell):
        return True
    return isinstance(cell, str) and cell.strip() == ""


# ---------------------------------------------------------------------------------------------------------
# Strict parser (the authors' rule)
# ---------------------------------------------------------------------------------------------------------

def strict_parse(cell: object, attributes: Sequence[str] = ATTRIBUTES) -> list[float]:
    """Per attribute: float or NaN. A JSON error loses the whole cell; no range check."""
    nan = float("nan")
    if is_empty(cell):
        return [nan] * len(attributes)
    text = str(cell).strip()
    if text.startswith("```json"):
        text = text.replace("```json", "").replace("```", "")
    try:
        obj = json.loads(text)
    except Exception:  # noqa: BLE001 - the authors' rule: any exception means missing
        return [nan] * len(attributes)
    out: list[float] = []
    for attr in attributes:
        # Each attribute is looked up separately, so a bad value loses only that attribute.
        try:
            v = obj.get(attr)
            out.append(nan if v is None or v == "" else float(v))
        except Exception:  # noqa: BLE001
            out.append(nan)
    return out


# ---------------------------------------------------------------------------------------------------------
# Robust parser
# ---------------------------------------------------------------------------------------------------------

def take_fenced(text: str) -> str:
    """Content of the first fenced block holding a `{` (else the first fenced block); an unclosed fence
    (truncated output) gives everything after it."""
    blocks = _FENCE.findall(text)
    if blocks:
        for b in blocks:
            if "{" in b:
                return b
        return blocks[0]
    m = _OPEN_FENCE.search(text)
    if m:
        return m.group(1)
    return text


def _loads_dict(text: str) -> dict | None:
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _span(text: str) -> str | None:
    i, j = text.find("{"), text.rfind("}")
    return text[i:j + 1] if 0 <= i < j else None


def classify_value(v: object, recovered: bool) -> tuple[int, float]:
    """(status code, raw numeric value or NaN) for one attribute value taken from a parsed object."""
    nan = float("nan")
    if v is None:
        return ST["missing_key"], nan
    if isinstance(v, bool):
        return ST["non_numeric"], nan
    as_string = False
    if isinstance(v, str):
        s = v.strip()
        if s == "":
            return ST["missing_key"], nan
        try:
            x = float(s)
        except ValueError:
            return ST["non_numeric"], nan
        as_string = True
    elif isinstance(v, int | float):
        x = float(v)
    else:
        return ST["non_numeric"], nan
    if not math.isfinite(x):
        return ST["non_numeric"], nan
    if x != round(x) or not 1 <= x <= 5:
        return ST["out_of_range"], x
    return (ST["recovered"] if (recovered or as_string) else ST["ok"]), x


@dataclass(frozen=True)
class RobustCell:
    status: tuple[int, ...]  # per attribute, codes into STATUSES
    value: tuple[float, ...]  # raw numeric value (kept for out_of_range), NaN if none
    step: int  # index into STEPS


def robust_parse(cell: object, attributes: Sequence[str] = ATTRIBUTES) -> RobustCell:
    """Stop at the first step that yields an object (docs/pillars/mentalbench.md#judge-parsing), then classify every attribute."""
    nan = float("nan")
    k = len(attributes)
    if is_empty(cell):
        return RobustCell((ST["no_output"],) * k, (nan,) * k, 0)
    text = take_fenced(strip_reasoning(str(cell))).strip()
    obj: dict | None = _loads_dict(text)
    step = 1
    if obj is None:
        span = _span(text)
        obj, step = (_loads_dict(span) if span else None), 2
    if obj is None:
        # Straightening typographic quotes only now: explanations legitimately contain them.
        straight = text.translate(_CURLY_DOUBLE)
        obj, step = _loads_dict(straight), 3
        if obj is None:
            span = _span(straight)
            obj = _loads_dict(span) if span else None
    if obj is not None:
        stats, vals = zip(*(classify_value(obj.get(a), step >= 2) for a in attributes), strict=True)
        return RobustCell(tuple(stats), tuple(vals), step)
    # Step 5: per-key regex; recovers truncated JSON and JSON broken by quotes in Explanation.
    stats_l: list[int] = []
    vals_l: list[float] = []
    for a in attributes:
        rx = _KEY_RX.get(a) or re.compile(r"[\"\u201c\u201d]" + re.escape(a)
                                          + r"[\"\u201c\u201d]\s*:\s*[\"\u201c\u201d]?(-?\d+(?:\.\d+)?)")
        m = rx.search(text)
        if m is None:
            stats_l.append(ST["unparseable"])
            vals_l.append(nan)
        else:
            s, x = classify_value(m.group(1), True)
            stats_l.append(s)
            vals_l.append(x)
    found = any(s != ST["unparseable"] for s in stats_l)
    return RobustCell(tuple(stats_l), tuple(vals_l), 4 if found else 0)


# ---------------------------------------------------------------------------------------------------------
# Grids
# ---------------------------------------------------------------------------------------------------------

@dataclass
class ParsedRatings:
    """One rater's parsed scores over (items, sources, attributes)."""

    rater: str
    kind: str  # "human" | "judge"
    strict: np.ndarray  # (I, S, A) float, NaN = missing (faithful input; 0 and 6 kept)
    score: np.ndarray  # (I, S, A) float, NaN unless status is ok/recovered (default input)
    raw: np.ndarray  # (I, S, A) float, numeric value whenever one was found (out_of_range kept)
    status: np.ndarray  # (I, S, A) int8 codes into STATUSES
    step: np.ndarray  # (I, S) int8 codes into STEPS
    empty: np.ndarray  # (I, S) bool: empty cell

    @property
    def valid(self) -> np.ndarray:
        return np.isin(self.status, VALID_CODES)

    def strict_failures(self) -> np.ndarray:
        """(I, S) bool: cells where the strict parser did not give all attributes."""
        return np.isnan(self.strict).any(axis=-1)

    def unscored(self) -> np.ndarray:
        """(I, S) bool: cells where the robust parser could not give all attributes a valid score."""
        return ~self.valid.all(axis=-1)


def parse_cells(cells: Sequence[Sequence[object]], rater: str, kind: str,
                attributes: Sequence[str] = ATTRIBUTES) -> ParsedRatings:
    """`cells[i][s]` is the raw text of item i, source s."""
    n_i = len(cells)
    n_s = len(cells[0]) if n_i else 0
    k = len(attributes)
    strict = np.full((n_i, n_s, k), np.nan)
    raw = np.full((n_i, n_s, k), np.nan)
    status = np.zeros((n_i, n_s, k), dtype=np.int8)
    step = np.zeros((n_i, n_s), dtype=np.int8)
    empty = np.zeros((n_i, n_s), dtype=bool)
    for i, row in enumerate(cells):
        for s, cell in enumerate(row):
            strict[i, s] = strict_parse(cell, attributes)
            rc = robust_parse(cell, attributes)
            status[i, s] = rc.status
            raw[i, s] = rc.value
            step[i, s] = rc.step
            empty[i, s] = is_empty(cell)
    valid = np.isin(status, VALID_CODES)
    score = np.where(valid, raw, np.nan)
    return ParsedRatings(rater, kind, strict, score, raw, status, step, empty)


def from_numeric(values: np.ndarray, present: np.ndarray, rater: str, kind: str,
                 given_status: np.ndarray | None = None) -> ParsedRatings:
    """Ratings that arrive as numbers (tidy tables): `values` (I, S, A) float; `present` marks rows that
    exist. Missing rows are `no_output`, NaN scores `missing_key`, values outside 1–5 `out_of_range`.
    Real values inside the scale are valid (a mean or median judge ensemble, several human raters
    averaged): ICC, CCC and bias use them as they are; κ and α bin them half up. `given_status` (codes, -1 =
    none) is the file's own status of a row without a score, kept instead of `missing_key`."""
    status = np.full(values.shape, ST["no_output"], dtype=np.int8)
    finite = np.isfinite(values)
    in_range = finite & (values >= 1) & (values <= 5)
    status[present & ~finite] = ST["missing_key"]
    status[present & finite & ~in_range] = ST["out_of_range"]
    status[present & in_range] = ST["ok"]
    if given_status is not None:  # a tidy file's own status for rows without a score (e.g. no_response)
        use = present & ~finite & (given_status >= 0)
        status[use] = given_status[use]
    strict = np.where(present, values, np.nan)
    score = np.where(present & in_range, values, np.nan)
    step = np.where(present.any(axis=-1), 1, 0).astype(np.int8)
    empty = ~present.any(axis=-1)
    return ParsedRatings(rater, kind, strict, score, strict.copy(), status, step, empty)
