"""Tidy long rating tables (docs/align.md#rating-tables) in the format `trustmh align --human FILE --judge FILE` reads.

Columns: `item` (the MentalAlign ConvID for the 1,000 rated contexts), `source` (docs/pillars/mentalbench.md#data key), `rater`,
`rater_kind` (human | judge | ensemble), `attribute`, `score` (empty = no valid score), `status` (docs/pillars/mentalbench.md#judge-parsing),
plus `strict_score`, `repeat` and `epoch` for reference (align ignores them).

* `export_long_table(records, out_dir)` writes, from the records of a MentalBench run or rescore:
  - `judge_long.csv`: the rows `trustmh align` can pair with the released human ratings: canonical sources
    only, first epoch, first repeat of each judge, and the ensemble (rater `ensemble[member+member…]`, real-valued for a
    mean or median ensemble: align uses such scores as they are and bins them half up for κ and α);
  - `judge_long_all.csv`: every row, including the model under test (source = its label), repeats
    (rater `<judge>@k`) and the ensemble.
* `human_long_table(mentalalign_dir, out_file)` writes the released expert ratings the same way.

Commands (copy for the README)::

    trustmh rescore --format mentalbench --from DIR --out rejudge --judge openai/gpt-4.1 --limit 1000
    trustmh align --human rejudge/human_long.csv --judge rejudge/judge_long.csv --mode default \\
        --out rejudge/align.json
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import Record, TrustmhError
from trustmh.data.files import csv_text
from trustmh.pillars.mentalbench.align_data import SOURCES, normalise_context, parse_sheet, read_workbook
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES, STATUSES
from trustmh.pillars.mentalbench.sources import MODEL_SOURCE
from trustmh.storage import run_path, write_text_atomic

COLUMNS = ("item", "source", "rater", "rater_kind", "attribute", "score", "status", "strict_score", "repeat",
           "epoch")
JUDGE_LONG = "judge_long.csv"
JUDGE_LONG_ALL = "judge_long_all.csv"
HUMAN_LONG = "human_long.csv"


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


def long_rows(records: Iterable[Record], model_label: str | None = None) -> list[dict[str, Any]]:
    """One row per (record, rater, attribute) from MentalBench records (the sub-task's score dicts)."""
    out: list[dict[str, Any]] = []
    for r in records:
        s = r.score
        ratings = s.get("ratings")
        if not ratings:
            continue
        source = str(s.get("source", MODEL_SOURCE))
        if source == MODEL_SOURCE:
            source = model_label or str(r.metadata.get("model") or r.metadata.get("model_reported")
                                        or MODEL_SOURCE)
        item = str(s.get("conv_id", r.cluster))
        raters = s.get("raters") or {}
        for name, rating in ratings.items():
            info = raters.get(name, {"judge": name, "repeat": 1})
            repeat = int(info.get("repeat", 1))
            rater = info["judge"] if repeat == 1 else name
            scores = rating.get("score") or rating.get("robust") or {}
            for a in ATTRIBUTES:
                out.append({"item": item, "source": source, "rater": rater, "rater_kind": "judge",
                            "attribute": a, "score": scores.get(a), "status": rating["status"][a],
                            "strict_score": (rating.get("strict") or {}).get(a), "repeat": repeat,
                            "epoch": r.epoch})
        members = list(dict.fromkeys(str(v.get("judge")) for v in raters.values()))
        if len(members) > 1:
            final = s.get("scores") or {}
            st = s.get("score_status") or {}
            # the members in the name, so that align excludes the families of all of them
            ensemble = f"ensemble[{'+'.join(members)}]"
            for a in ATTRIBUTES:
                out.append({"item": item, "source": source, "rater": ensemble, "rater_kind": "ensemble",
                            "attribute": a, "score": final.get(a), "status": st.get(a, ""),
                            "strict_score": None, "repeat": 1, "epoch": r.epoch})
    return out


def alignable(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows `trustmh align` can pair with human ratings (see the module docstring). A mean or median
    ensemble stays whole: its real-valued scores are valid ratings for align (dropping the non-integer ones
    would keep only the items where the members agree)."""
    return [row for row in rows if row["source"] in SOURCES and row["epoch"] == 1 and row["repeat"] == 1]


def to_csv(rows: Iterable[dict[str, Any]]) -> str:
    return csv_text(list(COLUMNS), ([_fmt(row.get(c)) for c in COLUMNS] for row in rows))


def export_long_table(records: Iterable[Record], out_dir: str | Path,
                      model_label: str | None = None) -> dict[str, Path]:
    """Write `judge_long.csv` (alignable rows) and `judge_long_all.csv` (every row) into `out_dir`.

    Call after a MentalBench run or rescore with that sub-task's records. Returns the paths written:
    `judge_long` only when some judged reply can be paired with the released human ratings (a run on the
    starter contexts, or one whose replies are all the model's own, has none: a header-only table would
    make `trustmh align` fail later for no visible reason)."""

    out = run_path(out_dir)
    rows = long_rows(records, model_label)
    paths = {"judge_long_all": out / JUDGE_LONG_ALL}
    write_text_atomic(paths["judge_long_all"], to_csv(rows))
    pairable = alignable(rows)
    if pairable:
        paths["judge_long"] = out / JUDGE_LONG
        write_text_atomic(paths["judge_long"], to_csv(pairable))
    return paths


def human_long_table(mentalalign_dir: str | Path, out_file: str | Path, *,
                     exclude_misaligned: bool = False) -> Path:
    """The released expert ratings (`Human_Judge/Human_judge.xlsx`) as a tidy long table for `trustmh align`.

    `score` is the authors' (strict) parse, so 0 and 6 stay numbers (faithful keeps them; align's default
    mode marks them out of range itself); `status` is the robust parser's. With `exclude_misaligned`, the
    rows whose whitespace-normalised context differs from the judge workbooks' (docs/align.md#data-quality: 19 rows) are left out,
    so that ratings of another conversation are never paired with a judge's rating of this one.
    """
    root = Path(mentalalign_dir)
    human_path = root / "Human_Judge" / "Human_judge.xlsx"
    if not human_path.is_file():
        raise TrustmhError(f"{root}: no Human_Judge/Human_judge.xlsx")
    sheet = read_workbook(human_path, "human")
    parsed = parse_sheet(sheet, "human", "human")
    drop: set[int] = set()
    if exclude_misaligned:
        judge_files = sorted((root / "LLMs_as_a_judge").glob("*.xlsx"))
        if not judge_files:
            raise TrustmhError(f"{root}: no LLMs_as_a_judge/*.xlsx to check the contexts against")
        js = read_workbook(judge_files[0], "judge")
        ref = dict(zip(js.conv_ids, js.contexts, strict=True))
        drop = {i for i, (cid, c) in enumerate(zip(sheet.conv_ids, sheet.contexts, strict=True))
                if normalise_context(c) != normalise_context(ref.get(cid))}
    rows = []
    for i, cid in enumerate(sheet.conv_ids):
        if i in drop:
            continue
        for s, source in enumerate(SOURCES):
            for a, attr in enumerate(ATTRIBUTES):
                strict = float(parsed.strict[i, s, a])
                raw = float(parsed.raw[i, s, a])
                score = strict if not math.isnan(strict) else (raw if not math.isnan(raw) else None)
                rows.append({"item": str(cid), "source": source, "rater": "human", "rater_kind": "human",
                             "attribute": attr, "score": score, "status": STATUSES[int(parsed.status[i, s, a])],
                             "strict_score": None if math.isnan(strict) else strict, "repeat": 1, "epoch": 1})

    out = Path(out_file)
    write_text_atomic(out, to_csv(rows))
    return out
