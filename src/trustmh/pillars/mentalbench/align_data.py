"""Readers for MentalAlign workbooks (docs/align.md#data-quality) and tidy long rating tables.

Both paths end in an `AlignData`: aligned (items × sources × attributes) arrays of parsed ratings for the
human column and every judge, plus the contexts when known. Workbook parsing is cached in-process by
(path, size, mtime), so repeated analyses in one session (tests, sensitivity runs) parse once.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from trustmh.core import TrustmhError
from trustmh.data.files import bounded_file, read_table
from trustmh.data.registry import cache_dir
from trustmh.digest import sha256_file
from trustmh.pillars.mentalbench.ratings import (
    ATTRIBUTES,
    ST,
    STATUSES,
    ParsedRatings,
    from_numeric,
    parse_cells,
)
from trustmh.pillars.mentalbench.sources import SOURCE_FAMILY, source_family
from trustmh.storage import atomic_file, write_text_atomic

# Analysis / bootstrap order (docs/align.md#faithful-mode): the legacy bootstrap depends on it.
SOURCES: tuple[str, ...] = ("claude", "ds_llama", "ds_qwen", "gemini", "gpt4o", "gpt4omini",
                            "llama_3", "qwen_2", "qwen_3", "original")
# Column order inside the workbooks (docs/align.md#data-quality).
FILE_SOURCES: tuple[str, ...] = ("original", "claude", "ds_llama", "ds_qwen", "gemini", "gpt4o",
                                 "gpt4omini", "llama_3", "qwen_2", "qwen_3")
# Judge name → its own (self-excluded) source (docs/align.md#faithful-mode). o4-mini is excluded on gpt4omini (same vendor).
SELF_EXCLUSION: dict[str, str] = {"claude": "claude", "gemini": "gemini", "gpt-4o": "gpt4o",
                                  "o4-mini": "gpt4omini"}


def normalise_context(text: object) -> str:
    """Whitespace-normalised context (docs/align.md#data-quality): runs of whitespace collapse, ends stripped."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return ""
    return " ".join(str(text).split())


def judge_name_from_path(path: Path) -> str:
    stem = path.stem
    return stem[: -len("_llm_judge")] if stem.endswith("_llm_judge") else stem


def excluded_source(judge: str) -> str | None:
    """The published self-exclusion: the one source a released judge wrote itself (faithful mode)."""
    return SELF_EXCLUSION.get(judge)


def ensemble_members(judge: str) -> list[str]:
    """The members of an ensemble judge named `ensemble[a+b+…]` (as `judge_long.csv` writes it), else the
    judge itself."""
    if judge.startswith("ensemble[") and judge.endswith("]"):
        return [m for m in judge[len("ensemble["):-1].split("+") if m]
    return [judge]


def family_sources(judge: str, sources: Sequence[str] = ()) -> list[str]:
    """Sources written by a model of the same family as the judge, or as any member of an ensemble judge
    (default mode's self-exclusion: `openai/gpt-4o-2024-08-06` leaves out gpt4o and gpt4omini). The family
    map is `trustmh.pillars.mentalbench.sources.source_family` (provider prefixes and dates are ignored)."""

    families = {source_family(m) for m in ensemble_members(judge)} - {None}
    exact = excluded_source(judge)
    return [s for s in (sources or SOURCES)
            if SOURCE_FAMILY.get(s) in families or s == exact]


@dataclass
class AlignData:
    """Everything the analysis needs, in memory."""

    items: list[str]  # conversation ids (as strings) in order
    human: ParsedRatings
    judges: dict[str, ParsedRatings]  # insertion order = report order
    human_contexts: list[str] | None = None
    judge_contexts: list[str] | None = None
    inputs: dict[str, str] = field(default_factory=dict)  # file name → sha256
    attributes: tuple[str, ...] = ATTRIBUTES
    sources: tuple[str, ...] = SOURCES
    source_kind: str = "mentalalign"  # or "tidy"

    def excluded(self, judge: str) -> str | None:
        ex = excluded_source(judge)
        return ex if ex in self.sources else None

    def excluded_family(self, judge: str) -> list[str]:
        """Default mode's self-exclusion: every source of the judge's (or its members') families."""
        return family_sources(judge, self.sources)

    def context_mismatch(self) -> tuple[np.ndarray, np.ndarray]:
        """(raw differs, whitespace-normalised differs) per item; all False when contexts are unknown."""
        n = len(self.items)
        if self.human_contexts is None or self.judge_contexts is None:
            return np.zeros(n, bool), np.zeros(n, bool)
        raw = np.array([(a or "") != (b or "") for a, b in zip(self.human_contexts, self.judge_contexts,
                                                                   strict=True)])
        norm = np.array([normalise_context(a) != normalise_context(b)
                         for a, b in zip(self.human_contexts, self.judge_contexts, strict=True)])
        return raw, norm


# ---------------------------------------------------------------------------------------------------------
# Workbooks
# ---------------------------------------------------------------------------------------------------------

@dataclass
class RawSheet:
    path: Path
    sha256: str
    conv_ids: list[int]
    contexts: list[str]
    cells: list[list[object]]  # [row][source in SOURCES order]


_SHEET_CACHE: dict[tuple[str, int, int, str], RawSheet] = {}
_PARSE_CACHE: dict[tuple[str, int, int, str, str], ParsedRatings] = {}


def _col_letter(j: int) -> str:
    s = ""
    j += 1
    while j:
        j, r = divmod(j - 1, 26)
        s = chr(65 + r) + s
    return s


def read_workbook(path: str | os.PathLike[str], kind: str) -> RawSheet:
    """First sheet of a MentalAlign workbook; headers stripped and checked (docs/align.md#data-quality)."""
    p = Path(path)
    if not p.exists():
        raise TrustmhError(f"{p}: file not found")
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns, kind)
    if key in _SHEET_CACHE:
        return _SHEET_CACHE[key]
    try:
        import openpyxl

        wb = openpyxl.load_workbook(bounded_file(p), read_only=True, data_only=True)
    except Exception as e:  # noqa: BLE001 - any reader error is a bad input file
        raise TrustmhError(f"{p}: cannot open as an xlsx workbook ({type(e).__name__}: {e})") from e
    try:
        ws = wb.worksheets[0]
        rows = list(ws.iter_rows(values_only=True))
    finally:
        wb.close()
    if not rows:
        raise TrustmhError(f"{p}: the first sheet is empty")
    prefix = "human_response_" if kind == "human" else "judge_response_"
    header = [str(h).strip() if h is not None else "" for h in rows[0]]
    expected = ["ConvID", "context"] + [prefix + s for s in FILE_SOURCES]
    present = [h for h in header if h]
    missing = [e for e in expected if e not in header]
    unknown = [h for h in present if h not in expected]
    if missing or unknown:
        raise TrustmhError(f"{p}: header row: missing column(s) {missing}; unexpected column(s) {unknown}; "
                           f"expected {expected}")
    pos = {h: j for j, h in enumerate(header) if h}
    col_of_source = [pos[prefix + s] for s in SOURCES]
    conv_ids: list[int] = []
    contexts: list[str] = []
    cells: list[list[object]] = []
    for r, row in enumerate(rows[1:], start=2):
        if row is None or all(v is None for v in row):
            continue
        row = tuple(row) + (None,) * (len(header) - len(row))
        cid = row[pos["ConvID"]]
        try:
            if isinstance(cid, bool) or cid is None:
                raise ValueError
            cid_int = int(cid)
            if float(cid) != cid_int:
                raise ValueError
        except (TypeError, ValueError):
            raise TrustmhError(f"{p}: cell {_col_letter(pos['ConvID'])}{r} (ConvID): not an integer: {cid!r}") \
                from None
        conv_ids.append(cid_int)
        ctx = row[pos["context"]]
        contexts.append("" if ctx is None else str(ctx))
        out_row: list[object] = []
        for s, j in zip(SOURCES, col_of_source, strict=True):
            v = row[j]
            if v is not None and not isinstance(v, str):
                if isinstance(v, float) and math.isnan(v):
                    v = None
                else:
                    raise TrustmhError(f"{p}: cell {_col_letter(j)}{r} ({prefix}{s}): expected text, got {v!r}")
            out_row.append(v)
        cells.append(out_row)
    if len(set(conv_ids)) != len(conv_ids):
        dup = sorted({c for c in conv_ids if conv_ids.count(c) > 1})[:5]
        raise TrustmhError(f"{p}: duplicated ConvID value(s) {dup}")
    sheet = RawSheet(p, sha256_file(p), conv_ids, contexts, cells)
    _SHEET_CACHE[key] = sheet
    return sheet


def parse_sheet(sheet: RawSheet, rater: str, kind: str) -> ParsedRatings:
    st = sheet.path.stat()
    key = (str(sheet.path.resolve()), st.st_size, st.st_mtime_ns, rater, kind)
    if key not in _PARSE_CACHE:
        _PARSE_CACHE[key] = parse_cells(sheet.cells, rater, kind)
    return _PARSE_CACHE[key]


def load_mentalalign(root: str | os.PathLike[str]) -> AlignData:
    """`root` is the `mentalalign/` directory (Human_Judge/, LLMs_as_a_judge/)."""
    root = Path(root)
    human_path = root / "Human_Judge" / "Human_judge.xlsx"
    judge_dir = root / "LLMs_as_a_judge"
    if not human_path.exists():
        raise TrustmhError(f"{root}: no Human_Judge/Human_judge.xlsx")
    judge_paths = sorted(judge_dir.glob("*.xlsx")) if judge_dir.is_dir() else []
    if not judge_paths:
        raise TrustmhError(f"{judge_dir}: no judge workbooks (*.xlsx)")
    return load_workbooks(human_path, judge_paths)


# Bump when parsing changes: cached parses of an older parser are then ignored.
PARSE_CACHE_VERSION = "1"
_ARRAYS = ("strict", "score", "raw", "status", "step", "empty")


def _cache_path(paths: Sequence[Path]) -> Path:

    h = hashlib.sha256(PARSE_CACHE_VERSION.encode())
    for path in paths:
        h.update(path.name.encode() + b"\0" + sha256_file(path).encode())
    return cache_dir() / "align" / f"workbooks-{h.hexdigest()[:32]}"


def _save_parsed(base: Path, data: AlignData) -> None:
    """`base`.npz (arrays, no pickles) + `base`.json (names, ids, contexts); written atomically."""

    raters = {"human": data.human, **{f"judge:{k}": v for k, v in data.judges.items()}}
    arrays = {f"{key}|{name}": getattr(r, name) for key, r in raters.items() for name in _ARRAYS}
    base.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(base.with_suffix(".npz"), "wb") as fh:
        np.savez(fh, **arrays)
    meta = {"items": data.items, "human_contexts": data.human_contexts, "judge_contexts": data.judge_contexts,
            "inputs": data.inputs, "raters": {key: [r.rater, r.kind] for key, r in raters.items()}}
    write_text_atomic(base.with_suffix(".json"), json.dumps(meta))


def _load_parsed(base: Path) -> AlignData | None:
    try:
        meta = json.loads(base.with_suffix(".json").read_text(encoding="utf-8"))  # our own cache, not a publisher's file
        with np.load(base.with_suffix(".npz"), allow_pickle=False) as z:
            raters = {key: ParsedRatings(rater, kind, *(z[f"{key}|{name}"] for name in _ARRAYS))
                      for key, (rater, kind) in meta["raters"].items()}
    except (OSError, ValueError, KeyError, json.JSONDecodeError):
        return None  # absent or unreadable: parse the workbooks again
    judges = {key.split(":", 1)[1]: r for key, r in raters.items() if key.startswith("judge:")}
    return AlignData(items=meta["items"], human=raters["human"], judges=judges,
                     human_contexts=meta["human_contexts"], judge_contexts=meta["judge_contexts"],
                     inputs=meta["inputs"])


def load_workbooks(human_path: str | os.PathLike[str],
                   judge_paths: Sequence[str | os.PathLike[str]], *, use_cache: bool = True) -> AlignData:
    """The parsed workbooks. Parsing the xlsx files takes seconds, so the result is cached on disk, keyed by
    the sha256 of every workbook and the parser version (`$TRUSTMH_CACHE_DIR/align/`): a warm call only
    hashes the files."""
    base = _cache_path([Path(human_path), *map(Path, judge_paths)]) if use_cache else None
    if base is not None and (cached := _load_parsed(base)) is not None:
        return cached
    data = _parse_workbooks(human_path, judge_paths)
    if base is not None:
        with contextlib.suppress(OSError):  # an unwritable cache only costs the next call its speed
            _save_parsed(base, data)
    return data


def _parse_workbooks(human_path: str | os.PathLike[str],
                     judge_paths: Sequence[str | os.PathLike[str]]) -> AlignData:
    hs = read_workbook(human_path, "human")
    human = parse_sheet(hs, "human", "human")
    judges: dict[str, ParsedRatings] = {}
    inputs = {Path(human_path).name: hs.sha256}
    judge_contexts: list[str] | None = None
    for jp in judge_paths:
        js = read_workbook(jp, "judge")
        name = judge_name_from_path(Path(jp))
        if name in judges:
            raise TrustmhError(f"{jp}: judge name {name!r} given twice")
        if js.conv_ids != hs.conv_ids:
            bad = next((i for i, (a, b) in enumerate(zip(js.conv_ids, hs.conv_ids, strict=False)) if a != b),
                       min(len(js.conv_ids), len(hs.conv_ids)))
            raise TrustmhError(f"{jp}: ConvID column differs from {human_path} (first at data row {bad + 2})")
        if judge_contexts is None:
            judge_contexts = js.contexts
        judges[name] = parse_sheet(js, name, "judge")
        inputs[Path(jp).name] = js.sha256
    return AlignData(items=[str(c) for c in hs.conv_ids], human=human, judges=judges,
                     human_contexts=hs.contexts, judge_contexts=judge_contexts, inputs=inputs)


# ---------------------------------------------------------------------------------------------------------
# Tidy long tables
# ---------------------------------------------------------------------------------------------------------

TIDY_REQUIRED = ("item", "source", "rater", "attribute", "score")


def _tidy_rows(path: Path) -> tuple[list[dict[str, object]], int]:
    """Rows with canonical column names; returns (rows, first data line number)."""
    rows = read_table(path)  # CSV/TSV cells stay text; Parquet, JSON(L) keep their types
    if not rows:
        raise TrustmhError(f"{path}: no data rows")
    cols = set(rows[0])
    if "item" not in cols and "conv_id" in cols:
        rows = [{**r, "item": r["conv_id"]} for r in rows]
        cols.add("item")
    # `rater` is optional: the judge is then named by the file stem.
    missing = [c for c in TIDY_REQUIRED if c not in cols and c != "rater"]
    if missing:
        raise TrustmhError(f"{path}: missing column(s) {missing}; found {sorted(cols)}")
    return rows, 2


def _score_value(v: object, path: Path, line: int) -> float:
    if v is None:
        return float("nan")
    if isinstance(v, bool):
        raise TrustmhError(f"{path}: row {line}, column score: not a number: {v!r}")
    if isinstance(v, int | float):
        return float(v)
    s = str(v).strip()
    if s == "" or s.lower() in ("nan", "na", "null", "none"):
        return float("nan")
    try:
        return float(s)
    except ValueError:
        raise TrustmhError(f"{path}: row {line}, column score: not a number: {v!r}") from None


def _require_scores(ratings: ParsedRatings, what: str) -> None:
    """A rater without a single valid score cannot be analysed: say what the file holds instead."""
    if ratings.valid.any():
        return
    codes, counts = np.unique(ratings.status[ratings.status != ST["no_output"]], return_counts=True)
    found = ", ".join(f"{STATUSES[c]} {n}" for c, n in zip(codes, counts, strict=True)) or "no rows"
    raise TrustmhError(f"{what}: no valid score to analyse (statuses found: {found})")


def _natural_key(s: str) -> tuple:
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", s) if t != "")


def load_tidy(human_path: str | os.PathLike[str], judge_paths: Sequence[str | os.PathLike[str]]) -> AlignData:
    """Tidy long tables: columns item (or conv_id), source, rater, attribute, score (+ optional rater_kind).

    Several human raters on one (item, source, attribute) are averaged (the human column pools experts);
    one rater giving two scores to the same slot is an error.
    """
    hp = Path(human_path)
    parsed: list[tuple[Path, str, list[tuple[int, str, str, str, str, float]]]] = []
    items_seen: dict[str, None] = {}
    for path, kind in [(hp, "human")] + [(Path(j), "judge") for j in judge_paths]:
        rows, first = _tidy_rows(path)
        recs = []
        for r, row in enumerate(rows, start=first):
            item = str(row["item"]).strip() if row["item"] is not None else ""
            if item == "":
                raise TrustmhError(f"{path}: row {r}, column item: empty")
            source = str(row["source"]).strip() if row["source"] is not None else ""
            if source not in SOURCES:
                raise TrustmhError(f"{path}: row {r}, column source: unknown source {source!r}; "
                                   f"expected one of {list(SOURCES)}")
            attr = str(row["attribute"]).strip() if row["attribute"] is not None else ""
            if attr not in ATTRIBUTES:
                raise TrustmhError(f"{path}: row {r}, column attribute: unknown attribute {attr!r}; "
                                   f"expected one of {list(ATTRIBUTES)}")
            rater_v = row.get("rater")
            rater = str(rater_v).strip() if rater_v not in (None, "") else (
                "human" if kind == "human" else judge_name_from_path(path))
            rk = row.get("rater_kind")
            if rk not in (None, "") and str(rk).strip() not in ("human", "judge", "ensemble"):
                raise TrustmhError(f"{path}: row {r}, column rater_kind: unknown value {rk!r}")
            score = _score_value(row["score"], path, r)
            status = str(row.get("status") or "").strip()
            if status and status not in ST:
                raise TrustmhError(f"{path}: row {r}, column status: unknown value {status!r}; expected one of "
                                   f"{list(ST)}")
            recs.append((r, item, source, attr, rater, score, status))
            items_seen.setdefault(item, None)
        parsed.append((path, kind, recs))
    items = sorted(items_seen, key=_natural_key)
    ipos = {it: i for i, it in enumerate(items)}
    spos = {s: i for i, s in enumerate(SOURCES)}
    apos = {a: i for i, a in enumerate(ATTRIBUTES)}
    shape = (len(items), len(SOURCES), len(ATTRIBUTES))

    def grid(path: Path, recs: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        total = np.zeros(shape)
        count = np.zeros(shape)
        present = np.zeros(shape, bool)
        given = np.full(shape, -1, dtype=np.int8)  # the file's own status for a row without a score
        seen: dict[tuple[str, int, int, int], int] = {}
        for r, item, source, attr, rater, score, status in recs:
            key = (rater, ipos[item], spos[source], apos[attr])
            if key in seen:
                raise TrustmhError(f"{path}: row {r}: rater {rater!r} scores item {item!r}, source {source!r}, "
                                   f"attribute {attr!r} twice (first at row {seen[key]})")
            seen[key] = r
            idx = key[1:]
            present[idx] = True
            if not math.isnan(score):
                total[idx] += score
                count[idx] += 1
            elif status:
                given[idx] = ST[status]
        with np.errstate(invalid="ignore", divide="ignore"):
            values = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        return values, present, given

    hpath, _, hrecs = parsed[0]
    hv, hpres, hgiven = grid(hpath, hrecs)
    human = from_numeric(hv, hpres, "human", "human", hgiven)
    inputs = {hpath.name: sha256_file(hpath)}
    judges: dict[str, ParsedRatings] = {}
    for path, _, recs in parsed[1:]:
        inputs[path.name] = sha256_file(path)
        by_rater: dict[str, list] = {}
        for rec in recs:
            by_rater.setdefault(rec[4], []).append(rec)
        for name in sorted(by_rater):
            if name in judges:
                raise TrustmhError(f"{path}: judge {name!r} also appears in another --judge file")
            v, pres, given = grid(path, by_rater[name])
            judges[name] = from_numeric(v, pres, name, "judge", given)
            _require_scores(judges[name], f"{path}: judge {name!r}")
    if not judges:
        raise TrustmhError("no judge ratings given (--judge FILE)")
    _require_scores(human, f"{hpath}: human ratings")
    return AlignData(items=items, human=human, judges=judges, inputs=inputs, source_kind="tidy")
