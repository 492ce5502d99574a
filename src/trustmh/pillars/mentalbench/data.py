"""MentalBench data (docs/pillars/mentalbench.md#data): the published contexts and replies, MentalAlign's
judged contexts, the starter rows, and the selection of rows to run."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import RunContext, TrustmhError
from trustmh.data import resolve
from trustmh.data.files import TABLE_SUFFIXES, read_table_with_header
from trustmh.pillars.mentalbench.align_data import read_workbook
from trustmh.pillars.mentalbench.sources import ORIGINAL, SOURCE_COLUMNS, is_missing_text, split_reasoning
from trustmh.starter import load_starter

MENTALBENCH_REL = "external/MentalBench-Align/MentalBench-100k.zip"  # the CSV is read out of the zip
MENTALALIGN_JUDGE_REL = "mentalalign/LLMs_as_a_judge/gpt-4o_llm_judge.xlsx"
MENTALALIGN_N = 1000
DATA_SUFFIXES = TABLE_SUFFIXES


# ==========================================================================================================
# Loading (docs/pillars/mentalbench.md#data)
# ==========================================================================================================

@dataclass
class MentalBenchRow:
    row: int  # 0-based data row in file order
    conv_id: str  # MentalAlign ConvID when known/verified, else "row<n>" (see `assign_conv_ids`)
    context: str
    responses: dict[str, str | None]  # canonical source key → raw text (None = missing)
    duplicate_of: int | None = None  # row of the first occurrence of the same (normalised) context
    extra: dict[str, Any] = field(default_factory=dict)  # unknown columns, kept as metadata


@dataclass
class MentalBenchData:
    path: Path | None
    rows: list[MentalBenchRow]
    sources: list[str]  # canonical source keys of the response columns present
    counts: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    origin: str = "mentalbench"  # "mentalbench" | "mentalalign_contexts" | "starter"


def _norm(text: object) -> str:
    return "" if text is None else " ".join(str(text).split())


def find_data_file(folder: Path) -> list[Path]:
    """The data file(s) of a folder: one table, or the parquet/arrow shards of a Hugging Face export."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in DATA_SUFFIXES
                   and not p.name.startswith(".") and p.name not in ("dataset_info.json", "state.json",
                                                                     "dataset_dict.json"))
    if not files:
        raise TrustmhError(f"{folder}: no MentalBench data file (.csv, .parquet, .jsonl, .json, .arrow) found")
    named = [p for p in files if "mentalbench" in p.name.lower()]
    if len(named) == 1:
        return named
    if len(files) == 1:
        return files
    shards = [p for p in files if p.suffix.lower() in (".parquet", ".pq", ".arrow")]
    if shards and len(shards) == len(files):
        return shards  # shards of one split, concatenated in name order
    raise TrustmhError(f"{folder}: several data files, cannot tell which one is MentalBench: "
                       f"{', '.join(str(p.relative_to(folder)) for p in files[:8])}; pass the file itself")


def read_rows(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """(header, rows) of a CSV/TSV, Parquet, Arrow, JSON or JSONL table; header names stripped.
    CSV cells stay text (no type guessing: a literal `nan` stays `nan`)."""
    if not path.exists():
        raise TrustmhError(f"{path}: file not found")
    if path.is_dir():
        header: list[str] = []
        rows: list[dict[str, Any]] = []
        for f in find_data_file(path):
            h, r = read_rows(f)
            if header and h != header:
                raise TrustmhError(f"{f}: columns differ from the other shards ({h} vs {header})")
            header, rows = h, rows + r
        return header, rows
    return read_table_with_header(path)


def _text_or_none(v: Any) -> str | None:
    if is_missing_text(v):
        return None
    return v if isinstance(v, str) else str(v)


def load_mentalbench(path: str | Path, *, reference_contexts: Sequence[str] | None = None) -> MentalBenchData:
    """Read a MentalBench table (docs/pillars/mentalbench.md#data). Require `context`, `response` and at least one model column (names
    matched after stripping, case-insensitively); keep unknown columns as metadata. Empty strings, NaN and
    the text `nan` are missing. Counts: missing and literal-`nan` cells per source, `<think>` leaks
    (closed/unclosed), reasoning-only cells, duplicate contexts, rows without a context.

    `reference_contexts[i]` is the MentalAlign context of ConvID i+1 (from a judge workbook); with it,
    ConvIDs are verified (see `assign_conv_ids`), else the positional ConvID (row i → i+1) is used.
    """
    p = Path(path)
    header, raw_rows = read_rows(p)
    lookup = {h.lower(): h for h in header}
    if "context" not in lookup or "response" not in lookup:
        raise TrustmhError(f"{p}: a MentalBench table needs the columns 'context' and 'response' and at least one "
                           f"model column ({', '.join(list(SOURCE_COLUMNS.values())[1:])}); columns found: "
                           f"{header}")
    col_of: dict[str, str] = {}
    for key, col in SOURCE_COLUMNS.items():
        if col.lower() in lookup:
            col_of[key] = lookup[col.lower()]
    if len(col_of) < 2:
        raise TrustmhError(f"{p}: no model column found (expected at least one of "
                           f"{', '.join(list(SOURCE_COLUMNS.values())[1:])}); columns found: {header}")
    known = {lookup["context"], *col_of.values()}
    sources = list(col_of)
    counts: dict[str, Any] = {
        "rows": len(raw_rows),
        "missing": dict.fromkeys(sources, 0),
        "nan_literal": dict.fromkeys(sources, 0),
        "think_closed": dict.fromkeys(sources, 0),
        "think_unclosed": dict.fromkeys(sources, 0),
        "reasoning_only": dict.fromkeys(sources, 0),
        "missing_context": 0,
        "duplicate_contexts": 0,
    }
    rows: list[MentalBenchRow] = []
    first_of: dict[str, int] = {}
    for i, raw in enumerate(raw_rows):
        ctx_raw = raw.get(lookup["context"])
        if is_missing_text(ctx_raw):
            counts["missing_context"] += 1
            continue
        context = str(ctx_raw)
        responses: dict[str, str | None] = {}
        for key, col in col_of.items():
            v = raw.get(col)
            if isinstance(v, str) and v.strip().lower() == "nan":
                counts["nan_literal"][key] += 1
            text = _text_or_none(v)
            if text is None:
                counts["missing"][key] += 1
            else:
                low = text.lower()
                if "<think>" in low or "</think>" in low:
                    closed = "</think>" in low
                    counts["think_closed" if closed else "think_unclosed"][key] += 1
                    if not split_reasoning(text).text:
                        counts["reasoning_only"][key] += 1
            responses[key] = text
        norm = _norm(context)
        dup = first_of.get(norm)
        if dup is None:
            first_of[norm] = i
        else:
            counts["duplicate_contexts"] += 1
        extra = {k: raw[k] for k in header if k not in known and raw.get(k) is not None}
        rows.append(MentalBenchRow(row=i, conv_id=str(i + 1), context=context, responses=responses,
                                   duplicate_of=dup, extra=_jsonable(extra)))
    data = MentalBenchData(path=p, rows=rows, sources=sources, counts=counts)
    assign_conv_ids(data, reference_contexts)
    return data


def _jsonable(d: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in d.items():
        if isinstance(v, float) and math.isnan(v):
            continue
        out[k] = v if isinstance(v, str | int | float | bool) else str(v)
    return out


def assign_conv_ids(data: MentalBenchData, reference_contexts: Sequence[str] | None) -> None:
    """ConvIDs (docs/pillars/mentalbench.md#data: ConvID i is data row i−1), checked against the MentalAlign judge contexts.

    Without reference contexts every row keeps its positional id (noted as unverified). With them, a row
    among the first 1,000 whose normalised context equals the reference keeps its ConvID; otherwise it is
    matched on context to a not-yet-used ConvID, and failing that gets the id `row<n>` (n = row + 1) so it
    can never pair with another conversation's human ratings. Rows past 1,000 keep their positional id
    unless their context matches an unused ConvID.
    """
    if reference_contexts is None:
        data.counts["conv_id"] = {"verified": False}
        data.notes.append("ConvIDs are positional (row i → ConvID i+1) and were not verified against the "
                          "MentalAlign contexts (workbooks not available)")
        return
    ref = [_norm(c) for c in reference_contexts]
    by_ctx: dict[str, list[int]] = {}
    for j, c in enumerate(ref):
        by_ctx.setdefault(c, []).append(j + 1)
    used: set[int] = set()
    positional = matched = unmatched = 0
    n_ref = len(ref)
    # First pass: positional matches, so that context matching never steals a verified ConvID.
    pos_ok = [r.row < n_ref and _norm(r.context) == ref[r.row] for r in data.rows]
    for r, ok in zip(data.rows, pos_ok, strict=True):
        if ok:
            used.add(r.row + 1)
    for r, ok in zip(data.rows, pos_ok, strict=True):
        if ok:
            r.conv_id = str(r.row + 1)
            positional += 1
            continue
        cands = [c for c in by_ctx.get(_norm(r.context), []) if c not in used]
        if cands:
            used.add(cands[0])
            r.conv_id = str(cands[0])
            matched += 1
        elif r.row < n_ref:
            r.conv_id = f"row{r.row + 1}"
            unmatched += 1
        else:
            r.conv_id = str(r.row + 1)
    data.counts["conv_id"] = {"verified": True, "positional": positional, "matched_on_context": matched,
                              "unmatched": unmatched}
    if matched or unmatched:
        data.notes.append(f"ConvID check against the MentalAlign contexts: {positional} rows matched by "
                          f"position, {matched} matched on context, {unmatched} unmatched (ids row<n>; no "
                          "human ratings pair with them)")


def mentalalign_contexts(options: dict[str, Any]) -> tuple[list[int], list[str]] | None:
    """(ConvIDs, contexts) from a MentalAlign judge workbook, or None when it is not available locally."""

    user_dir = options.get("mentalalign_dir")
    try:
        if user_dir:
            path = Path(user_dir) / "LLMs_as_a_judge" / "gpt-4o_llm_judge.xlsx"
            if not path.is_file():
                found = sorted((Path(user_dir) / "LLMs_as_a_judge").glob("*.xlsx"))
                if not found:
                    raise TrustmhError(f"{user_dir}: no LLMs_as_a_judge/*.xlsx")
                path = found[0]
        else:
            path = resolve("mentalalign", MENTALALIGN_JUDGE_REL)
        sheet = read_workbook(path, "judge")
    except TrustmhError:
        if user_dir:
            raise
        return None
    return sheet.conv_ids, sheet.contexts


def contexts_only(options: dict[str, Any]) -> MentalBenchData:
    """The 1,000 rated contexts of MentalAlign (judge workbook), without reference replies."""
    got = mentalalign_contexts(options)
    if got is None:
        raise TrustmhError("mentalbench: no data: the MentalBench file is not available (pass "
                           "-O mentalbench_path=FILE) and the MentalAlign workbooks were not found either "
                           "(TRUSTMH_DATA_DIR or `trustmh data fetch mentalalign`)")
    conv_ids, contexts = got
    rows: list[MentalBenchRow] = []
    first_of: dict[str, int] = {}
    dups = 0
    for i, (cid, c) in enumerate(zip(conv_ids, contexts, strict=True)):
        norm = _norm(c)
        dup = first_of.setdefault(norm, i)
        dups += dup != i
        rows.append(MentalBenchRow(row=i, conv_id=str(cid), context=c, responses={},
                                   duplicate_of=None if dup == i else dup))
    return MentalBenchData(path=None, rows=rows, sources=[], origin="mentalalign_contexts",
                           counts={"rows": len(rows), "duplicate_contexts": dups, "missing_context": 0},
                           notes=["MentalBench texts not available: using the 1,000 rated contexts of the "
                                  "MentalAlign judge workbooks (no reference replies, so `original` is not "
                                  "judged); pass -O mentalbench_path=FILE for the full data"])


def starter_data(subtask_id: str) -> MentalBenchData:

    rows = []
    for i, r in enumerate(load_starter(subtask_id)):
        for key in ("id", "context", "response"):
            if not isinstance(r.get(key), str) or not r[key].strip():
                raise TrustmhError(f"starter/{subtask_id.replace('/', '__')}.jsonl line {i + 1}: field {key!r} "
                                   "must be a non-empty string")
        rows.append(MentalBenchRow(row=i, conv_id=r["id"], context=r["context"],
                                   responses={ORIGINAL: r["response"]}))
    return MentalBenchData(path=None, rows=rows, sources=[ORIGINAL], origin="starter",
                           counts={"rows": len(rows), "duplicate_contexts": 0, "missing_context": 0},
                           notes=["starter items: invented contexts and reference replies (demo only)"])


def select_rows(data: MentalBenchData, ctx: RunContext) -> tuple[list[MentalBenchRow], int]:
    """Faithful (or option selection=head, used by rescoring): the first `limit` rows in file order,
    duplicates kept as in the original. Default: a seeded random sample of `limit` rows without duplicate
    contexts (all of them without a limit), in file order. Returns (rows, duplicates dropped)."""
    rows = data.rows
    if ctx.mode == "faithful" or ctx.options.get("selection") == "head":
        return (rows if ctx.limit is None else rows[: ctx.limit]), 0
    pool = [r for r in rows if r.duplicate_of is None]
    dropped = len(rows) - len(pool)
    if ctx.limit is not None and ctx.limit < len(pool):
        picked = random.Random(ctx.seed).sample(range(len(pool)), ctx.limit)
        pool = [pool[i] for i in sorted(picked)]
    return pool, dropped
