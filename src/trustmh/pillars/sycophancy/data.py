"""Anti-sycophancy pillar data (docs/pillars/sycophancy.md#sycophancy): the ELEPHANT OEQ and AITA files, PAS
from a user path, the starter items, the seeded item choice and the `-O` options.

Data: the full ELEPHANT CSVs when they can be had (data dir, cache or download), else the 10-row
samples, flagged "10-item sample".
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import ChecksumError, Option, RunContext, TrustmhError
from trustmh.data import resolve
from trustmh.judges.parse import int_in_range
from trustmh.sampling import limit_rows
from trustmh.starter import load_starter

DATASET = "elephant"
OEQ_FULL = "external/ELEPHANT/datasets/OEQ.csv"
AITA_FULL = "external/ELEPHANT/datasets/AITA.csv"
OEQ_SAMPLE = "external/ELEPHANT/OEQ_sample.csv"
AITA_SAMPLE = "external/ELEPHANT/AITA_sample.csv"
N_ITEMS = 500
OEQ_METRICS: tuple[str, ...] = ("emotional_validation", "indirect_language", "indirect_action", "accept_framing")
SAMPLE_NOTE = ("10-item sample: the full ELEPHANT dataset was not available, the 10-row test sample was scored "
               "at your request (-O allow_sample=1); status 'sample', not a benchmark value")
VARIANT_FULL, VARIANT_SAMPLE, VARIANT_USER, VARIANT_STARTER = "full", "sample", "user", "starter"
YTA, NTA = "YTA", "NTA"
STARTER_NOTE = "starter suite: invented demonstration items, not ELEPHANT or PAS data"
_INDEX_COLUMNS = ("", "Unnamed: 0", "index")


def binary_value(value: Any, where: str, *, allow_missing: bool = True) -> int | None:
    """0/1 from `0`, `1`, `0.0`, `1.0` (strings or numbers); empty/NaN → None when `allow_missing`."""
    if value is None or (isinstance(value, str) and value.strip().lower() in {"", "nan", "na", "none"}) or (
            isinstance(value, float) and math.isnan(value)):
        if allow_missing:
            return None
        raise TrustmhError(f"{where}: missing 0/1 value")
    v = int_in_range(value, 0, 1)
    if v is None:
        raise TrustmhError(f"{where}: expected 0 or 1 (or 0.0 / 1.0), got {value!r}")
    return v


def _read_csv(path: Path, required: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs; raises naming the file when a required column is missing."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [c for c in required if c not in header]
            if missing:
                raise TrustmhError(f"{path}: missing column(s) {missing}; found {header}")
            # csv line numbers: a quoted field can span lines, so use the reader's own count.
            return [(reader.line_num, row) for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TrustmhError(f"{path}: cannot read CSV ({exc})") from exc


def _row_id(row: dict[str, Any], prefix: str, fallback: int) -> str:
    """An explicit `id` as written; else `<prefix>-<index column>` (the CSV's unnamed pandas index); else
    `<prefix>-row<n>`."""
    if row.get("id") is not None and str(row["id"]).strip():
        return str(row["id"]).strip()
    for col in _INDEX_COLUMNS:
        v = row.get(col)
        if v is not None and str(v).strip() != "":
            return f"{prefix}-{str(v).strip()}"
    return f"{prefix}-row{fallback:05d}"


def unique(rows: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
    seen: set[str] = set()
    for r in rows:
        if r["id"] in seen:
            raise TrustmhError(f"{where}: duplicate id {r['id']!r}")
        seen.add(r["id"])
    return rows


def require_text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TrustmhError(f"{where}: empty or missing text")
    return value.strip()


def oeq_rows(raw: Sequence[tuple[str, dict[str, Any]]], prefix: str, source: str) -> list[dict[str, Any]]:
    """OEQ rows: id, prompt, source, human reply and the four human 0/1 labels (None when absent)."""
    out = []
    for i, (where, row) in enumerate(raw):
        rec: dict[str, Any] = {"id": _row_id(row, prefix, i), "prompt": require_text(row.get("prompt"),
                                                                                    f"{where}, field prompt"),
                               "source": row.get("source") or None, "human": row.get("human") or None}
        for m in OEQ_METRICS:
            rec[f"{m}_human"] = binary_value(row.get(f"{m}_human"), f"{where}, field {m}_human")
        out.append(rec)
    return unique(out, source)


def aita_rows(raw: Sequence[tuple[str, dict[str, Any]]], prefix: str, source: str
              ) -> tuple[list[dict[str, Any]], int]:
    """AITA rows with a YTA/NTA verdict (`ytanta`), and the number of rows with any other verdict (left out)."""
    out, other = [], 0
    for i, (where, row) in enumerate(raw):
        asshole = binary_value(row.get("is_asshole"), f"{where}, field is_asshole")
        verdict = str(row.get("ytanta") or "").strip().upper()
        if not verdict and "ytanta" not in row and asshole is not None:
            verdict = YTA if asshole else NTA  # a copy without `ytanta`: the 0/1 label carries the verdict
        if verdict not in (YTA, NTA):
            other += 1
            continue
        if asshole is not None and asshole != int(verdict == YTA):
            raise TrustmhError(f"{where}: is_asshole={asshole} contradicts ytanta={verdict}")
        out.append({"id": _row_id(row, prefix, i), "prompt": require_text(row.get("prompt"), f"{where}, field prompt"),
                    "verdict": verdict, "top_comment": row.get("top_comment") or None})
    return unique(out, source), other


def load_oeq(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    return oeq_rows([(f"{path} line {ln}", r) for ln, r in _read_csv(path, ("prompt",))], "oeq", str(path))


def load_aita(path: str | Path) -> tuple[list[dict[str, Any]], int]:
    path = Path(path)
    rows = _read_csv(path, ("prompt",))
    if rows and "ytanta" not in rows[0][1] and "is_asshole" not in rows[0][1]:
        raise TrustmhError(f"{path}: missing column(s) ['ytanta'] (or 'is_asshole'); found {list(rows[0][1])}")
    return aita_rows([(f"{path} line {ln}", r) for ln, r in rows], "aita", str(path))


def load_pas(path: str | Path, text_field: str = "prompt") -> list[dict[str, Any]]:
    """PAS statements from a CSV: `text_field` (default `prompt`) and an optional `id` column."""
    path = Path(path)
    out = []
    for i, (ln, row) in enumerate(_read_csv(path, (text_field,))):
        rid = str(row.get("id") or "").strip()
        out.append({"id": f"pas-{rid}" if rid else f"pas-row{i:05d}",
                    "prompt": require_text(row.get(text_field), f"{path} line {ln}, field {text_field}")})
    return unique(out, str(path))


def elephant_path(full: str, sample: str, user_path: str | None) -> tuple[Path, str, str | None]:
    """(path, variant, why the full file was not used): the full file (user path, data dir, cache or
    download), else the 10-row sample. A checksum mismatch is never a reason to fall back: it is raised."""
    if user_path:
        return resolve(DATASET, full, user_path), VARIANT_USER, None
    try:
        return resolve(DATASET, full), VARIANT_FULL, None
    except ChecksumError:
        raise
    except TrustmhError as full_err:
        try:
            return resolve(DATASET, sample), VARIANT_SAMPLE, str(full_err)
        except ChecksumError:
            raise
        except TrustmhError as sample_err:
            raise TrustmhError(f"ELEPHANT data not found: {full_err}; and the sample: {sample_err}") from sample_err


def sample_reason(ctx: RunContext, full: str, sample: str, option: str) -> str | None:
    """Why a sub-task is not computed when only the 10-row ELEPHANT sample is available (None otherwise, or
    when the user asked for the sample with `-O allow_sample=1`)."""
    if ctx.suite == "starter" or ctx.flag("allow_sample"):
        return None
    _, variant, why = elephant_path(full, sample, ctx.options.get(option))
    if variant != VARIANT_SAMPLE:
        return None
    return (f"only the 10-row ELEPHANT sample is available ({why}); supply the full file with "
            f"-O {option}=FILE (or -O allow_sample=1 to score the sample, reported with status 'sample')")


def starter_rows_of(subtask_id: str) -> list[tuple[str, dict[str, Any]]]:
    return [(f"starter {subtask_id} line {i + 1}", r) for i, r in enumerate(load_starter(subtask_id))]


def choose(rows: list[dict[str, Any]], ctx: RunContext, *, n_default: int = N_ITEMS,
           limit: int | None = None, stratum: Callable[[dict[str, Any]], Any] = lambda r: "",
           salt: str = "") -> list[dict[str, Any]]:
    """A seeded sample of `n_default` rows (`-O full=1`: all), in file order. `limit` (default
    `ctx.limit`): faithful keeps the head of that sample, default draws a seeded stratified sample."""
    limit = ctx.limit if limit is None else limit
    seed = ctx.seed if not salt else ctx.seed * 1_000_003 + sum(map(ord, salt))
    n = len(rows) if ctx.flag("full") else min(n_default, len(rows))
    return limit_rows(rows, stratum, limit, ctx.mode, seed, pool=n)


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'oeq_path': Option('ELEPHANT OEQ file'),
    'aita_path': Option('ELEPHANT AITA file'),
    'pas_path': Option('PAS file'),
    'pas_text_field': Option('PAS text column'),
    'verdict_mode': Option('judge or binary'),
    'full': Option('1: all rows'),
}
