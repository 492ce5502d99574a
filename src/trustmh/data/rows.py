"""Rows of publishers' files as they really are (docs/data.md#unusable-rows).

Publishers' files are often hand-edited spreadsheets saved as JSON or CSV: a cell may be NaN, a number where
text belongs, the text of a spreadsheet formula instead of its value, CRLF line ends, or a conversation given
as a list of turns in one file and as the turns joined by " | " in another. Every reader of a publisher's
file uses these helpers to

* say why a cell cannot be used (`text_problem`, `inputs_problem`),
* match its rows to a reference file the way the publisher's analysis does (`match_rows`: on the normalised
  conversation + answer, position as the fallback),
* check every number against its scale (`number_in_scale`) and every key against its duplicates
  (`KeyedRows`): an off-scale value or a duplicated key is named (file, row, column) and left out,
* count and name each row it could not use (`RowProblem`, `RowReport`: one line per row on stderr and a
  list in the output), refusing a file only when no row at all is usable (`RowReport.require_usable`), and
  name a file a comparison needs that is absent or empty (`RowReport.missing_file`).
"""

from __future__ import annotations

import math
import operator
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from trustmh.core import TrustmhError

# Spreadsheet formula residue: a cell saved as its formula text instead of its value, e.g. "T+D24+B24" or
# "=A1&B2". A sum of cell references whose first term may be a bare column, or "=FUNCTION(...)".
_COL_OR_CELL = r"\$?[A-Z]{1,3}\$?\d*"
_CELL = r"\$?[A-Z]{1,3}\$?\d+"
FORMULA_RESIDUE = re.compile(rf"^=?\s*{_COL_OR_CELL}(\s*[-+*/&]\s*{_CELL})+\s*$|^=\s*[A-Z]+\(.*\)\s*$")
TURN_SEP = " | "  # how files that flatten a conversation into one cell join its turns


def is_missing(value: Any) -> bool:
    """None or a float NaN (Python's json reads the bare NaN of hand-edited files as float('nan'))."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def text_problem(value: Any) -> str | None:
    """Why a cell that should hold text cannot be used, or None when it can: "missing" (None/NaN),
    "non-string (int 5)", "empty", "formula residue ('T+D24+B24')"."""
    if is_missing(value):
        return "missing"
    if not isinstance(value, str):
        shown = repr(value)
        return f"non-string ({type(value).__name__} {shown if len(shown) <= 60 else shown[:57] + '...'})"
    if not value.strip():
        return "empty"
    if FORMULA_RESIDUE.match(value.strip()):
        return f"formula residue ({value.strip()!r})"
    return None


def inputs_problem(value: Any) -> str | None:
    """As `text_problem`, for a conversation: a string (turns joined by " | ") or a non-empty list of strings
    (an empty turn inside a list is allowed)."""
    if isinstance(value, list):
        if not value:
            return "empty"
        for i, turn in enumerate(value):
            if (p := text_problem(turn)) is not None and p != "empty":
                return f"turn {i}: {p}"
        return None
    return text_problem(value)


def score_or_none(value: Any) -> float | None:
    """A rating as float; None for missing/NaN/non-numbers (a bool is not a number here)."""
    if is_missing(value) or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def normalize_text(value: str) -> str:
    """CRLF/CR -> LF, then every run of whitespace -> one space, stripped."""
    return " ".join(value.replace("\r\n", "\n").replace("\r", "\n").split())


def inputs_key(inputs: str | Sequence[str]) -> str:
    """One key for a conversation given as a list of turns or as the turns joined by " | "."""
    turns = inputs.split(TURN_SEP) if isinstance(inputs, str) else list(inputs)
    return TURN_SEP.join(normalize_text(str(t)) for t in turns)


def item_key(inputs: Any, answer: Any) -> str | None:
    """Key of a (conversation, answer) pair; None when either side is unusable."""
    if inputs_problem(inputs) is not None or text_problem(answer) is not None:
        return None
    return inputs_key(inputs) + "\x00" + normalize_text(answer)


def number_in_scale(value: Any, scale: tuple[float, float]) -> tuple[float | None, str | None]:
    """A number read from a publisher's cell, checked against its scale (docs/data.md#publisher-numbers):
    (the number, None), or (None, why it cannot be used: missing, not a number, off the scale)."""
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return None, "missing"
    if isinstance(value, bool):
        return None, f"not a number ({value!r})"
    try:
        number = float(str(value).strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        shown = repr(value)
        return None, f"not a number ({shown if len(shown) <= 40 else shown[:37] + '...'})"
    if not math.isfinite(number):
        return None, f"not a finite number ({value!r})"
    lo, hi = scale
    if not lo <= number <= hi:
        return None, f"{number:g} outside the scale {lo:g}..{hi:g}"
    return number, None


class KeyedRows:
    """The rows of one publisher's file by their key (an item, a condition, a record), duplicated keys found
    (docs/data.md#publisher-numbers): a later copy equal to the first is left out and counted; copies that
    disagree leave the key out altogether (which copy the publisher meant cannot be told), each copy named."""

    def __init__(self, file: str, column: str) -> None:
        self.file, self.column = file, column
        self._rows: dict[Any, list[tuple[int, Any]]] = {}

    def add(self, key: Any, row: int, value: Any) -> None:
        self._rows.setdefault(key, []).append((row, value))

    def __contains__(self, key: Any) -> bool:
        return key in self._rows

    def result(self, report: RowReport, shown: Callable[[Any], str] = str,
               same: Callable[[Any, Any], bool] = operator.eq) -> dict[Any, Any]:
        """{key: value} of the usable keys (the first copy's value); every duplicated row named in `report`.
        `same(a, b)`: whether two copies agree (default: equal values)."""
        out: dict[Any, Any] = {}
        for key, copies in self._rows.items():
            first_row, first = copies[0]
            if len(copies) == 1:
                out[key] = first
            elif all(same(value, first) for _, value in copies[1:]):
                out[key] = first
                report.extend([RowProblem(self.file, row, self.column, f"{shown(key)} repeats row {first_row}",
                                          "skipped") for row, _ in copies[1:]])
            else:
                rows = ", ".join(str(row) for row, _ in copies)
                report.extend([RowProblem(self.file, row, self.column,
                                          f"{shown(key)} given at rows {rows} with different values", "skipped")
                               for row, _ in copies])
        return out


# ------------------------------------------------------------------------------------------- reporting

@dataclass(frozen=True)
class RowProblem:
    """One row a reader could not use as it stands (or used only by position)."""

    file: str
    row: int  # 0-based index in the file's list of rows
    field: str
    kind: str
    action: str  # "skipped" | "matched by position" | ...

    def __str__(self) -> str:
        where = f"{self.file} row {self.row}" if self.row >= 0 else self.file  # row -1: the file as a whole
        return f"{where}: {self.field} {self.kind}; {self.action}"

    @property
    def skipped(self) -> bool:
        return self.action == "skipped"


@dataclass
class RowReport:
    """The unusable rows of one reading: `log()` prints one line per row on stderr, `as_json()` goes into
    the output, `require_usable(n)` refuses the file only when nothing was usable."""

    problems: list[RowProblem] = field(default_factory=list)

    def add(self, problem: RowProblem) -> None:
        self.problems.append(problem)

    def extend(self, problems: Sequence[RowProblem]) -> None:
        self.problems.extend(problems)

    @property
    def n_skipped(self) -> int:
        return sum(p.skipped for p in self.problems)

    def missing_file(self, file: str, what: str, consequence: str) -> None:
        """A file a comparison needs is absent or holds no row: named with the comparison it removes."""
        self.add(RowProblem(file, -1, "file", what, consequence))

    def lines(self) -> list[str]:
        return [str(p) for p in self.problems]

    def log(self, stream: TextIO | None = None, prefix: str = "trustmh: ") -> None:
        out = stream or sys.stderr
        for line in self.lines():
            print(f"{prefix}{line}", file=out, flush=True)

    def note(self, what: str, shown: int = 5) -> str:
        """One line for a result's notes: how many `what`, the first `shown` named."""
        lines = self.lines()
        more = f" (and {len(lines) - shown} more)" if len(lines) > shown else ""
        return f"{len(lines)} {what}: " + "; ".join(lines[:shown]) + more

    def as_json(self) -> dict[str, Any]:
        return {"n_unusable": self.n_skipped, "n_flagged": len(self.problems), "unusable_rows": self.lines()}

    @staticmethod
    def require_usable(n_usable: int, file: str, problems: Sequence[RowProblem]) -> None:
        if n_usable == 0:
            named = "; ".join(str(p) for p in problems[:5])
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise TrustmhError(f"{file}: no usable row" + (f": {named}{more}" if named else ""))


FALLBACK_ENCODING = "latin-1"  # every byte is a character: a line not UTF-8 is read, never half-replaced


def decoded_lines(raw: bytes, name: str, report: RowReport | None) -> list[str]:
    """The file's lines, each decoded as UTF-8 (a leading BOM dropped), a line that is not UTF-8 (a Latin-1
    byte from a hand edit) decoded as Latin-1 and named in `report` with its first bad byte, so no character
    is replaced silently. Split on "\\n" only: a raw U+2028 inside a JSON string is valid, and
    str.splitlines would cut the row there."""
    out = []
    for i, chunk in enumerate(raw.split(b"\n")):
        try:
            out.append(chunk.decode("utf-8-sig" if i == 0 else "utf-8"))
        except UnicodeDecodeError as exc:
            out.append(chunk.decode(FALLBACK_ENCODING))
            if report is not None:
                report.add(RowProblem(name, i, "line", f"not UTF-8 (byte 0x{chunk[exc.start]:02x} at offset "
                                      f"{exc.start})", f"decoded as {FALLBACK_ENCODING}, kept"))
    return out


# -------------------------------------------------------------------------------------------- matching

@dataclass
class Match:
    """Rows of one file matched to reference rows: `ref_of[i]` = reference index of row i, or None."""

    ref_of: list[int | None]
    by_key: int = 0
    by_position: int = 0
    unmatched: int = 0
    problems: list[RowProblem] = field(default_factory=list)

    def row_for(self) -> dict[int, int]:
        """reference index -> row index."""
        return {r: i for i, r in enumerate(self.ref_of) if r is not None}

    def summary(self, name: str) -> str:
        return (f"{name}: {self.by_key} rows matched on conversation and answer, {self.by_position} by position, "
                f"{self.unmatched} unmatched")


def _same(a: Any, b: Any, norm: Callable[[Any], str]) -> bool:
    try:
        return norm(a) == norm(b)
    except (AttributeError, TypeError):
        return False


def match_rows(reference: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], *, file: str,
               fields: tuple[str, str | None] = ("inputs", "answer")) -> Match:
    """Match `rows` to `reference` (docs/data.md#unusable-rows).

    1. On the normalised (conversation, answer) key (`item_key`; `fields[1] = None` matches on the
       conversation alone), preferring the same position among equal keys.
    2. Position fallback: a row whose key is unusable or unknown is matched to the reference row at the same
       index when the files have the same length, that reference row is not claimed by a key match, and at
       least one usable field agrees with it (or no field is usable at all). Each such row is named, with what
       was wrong with it.
    3. Otherwise the row is left unmatched (named, skipped).
    """
    f_in, f_ans = fields

    def key(row: dict[str, Any]) -> str | None:
        return item_key(row.get(f_in), row.get(f_ans) if f_ans else "-")

    checks: list[tuple[str, Callable[[Any], str], Callable[[Any], str | None]]] = [(f_in, inputs_key, inputs_problem)]
    if f_ans:
        checks.append((f_ans, normalize_text, text_problem))
    ref_keys: dict[str, list[int]] = {}
    for j, ref in enumerate(reference):
        if (k := key(ref)) is not None:
            ref_keys.setdefault(k, []).append(j)
    m = Match(ref_of=[None] * len(rows))
    claimed: set[int] = set()
    pending: list[int] = []
    for i, row in enumerate(rows):
        k = key(row) if isinstance(row, dict) else None
        cands = [j for j in ref_keys.get(k, []) if j not in claimed] if k is not None else []
        if cands:
            j = i if i in cands else cands[0]
            m.ref_of[i] = j
            claimed.add(j)
            m.by_key += 1
        else:
            pending.append(i)
    same_len = len(rows) == len(reference)
    for i in pending:
        row = rows[i] if isinstance(rows[i], dict) else {}
        what = [(fname, p) for fname, _, check in checks if (p := check(row.get(fname))) is not None]
        if same_len and i not in claimed and isinstance(rows[i], dict):
            ref = reference[i]
            agree, differ = [], []
            for fname, norm, check in checks:
                if check(row.get(fname)) is None:
                    (agree if _same(row.get(fname), ref.get(fname), norm) else differ).append(fname)
            if agree or not differ:
                m.ref_of[i] = i
                claimed.add(i)
                m.by_position += 1
                m.problems += [RowProblem(file, i, fname, p, "matched by position") for fname, p in what]
                m.problems += [RowProblem(file, i, fname, "differs from the reference copy", "matched by position")
                               for fname in differ]
                continue
        m.unmatched += 1
        if not isinstance(rows[i], dict):
            kind = f"not an object ({type(rows[i]).__name__})"
        else:
            kind = "; ".join(f"{f}: {p}" for f, p in what) or "no reference row with this conversation and answer"
        m.problems.append(RowProblem(file, i, "row", kind, "skipped"))
    return m
