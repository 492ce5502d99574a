"""Appropriateness agreement for `trustmh rescore --format crisis-original`: each of the study's judges, their
jury and trustmh's judge against the two humans' 1-5 ratings on the answers the humans rated, paired as the
study pairs them (docs/reproducing.md#crisis-original), and compared with the study's published table."""

from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import bounded_file, present
from trustmh.data.rows import (
    RowProblem,
    RowReport,
    inputs_problem,
    item_key,
    match_rows,
    score_or_none,
    text_problem,
)
from trustmh.pillars.crisis.data import load_human_scores, read_json_list
from trustmh.pillars.crisis.rescore_evaluations import MERGED, check_scale, log
from trustmh.stats.agreement import (
    rating_agreement,
)

SAMPLED = "data/llm_evaluator/sampled/sampled_lowest_scores_n200.json"
HUMAN_SCORE_FILES = {"H1": "data/human_label/H1_scores_n206_s42.json", "H2": "data/human_label/H2_scores_n206_s42.json"}
JURY = "jury"  # the study's "LLM-Jury": per answer, the mean of its judges' scores


def _text_fields_dropped(problems: Sequence[RowProblem]) -> list[RowProblem]:
    """A reader's own text-cell problems, once the rows were matched: `match_rows` names them again (with
    what was done), so only the others (rating, label) are kept."""
    return [p for p in problems if p.field not in ("inputs", "answer")]


def reference_answers(root: Path, report: RowReport) -> tuple[list[dict[str, Any]], str]:
    """The answers the humans rated, as the study lines them up: its sampled file when present, else H1's
    file (then the H1 copy is the reference)."""
    sampled = root / SAMPLED
    if present(sampled):
        return [r if isinstance(r, dict) else {} for r in read_json_list(sampled)], sampled.name
    h1 = root / HUMAN_SCORE_FILES["H1"]
    if not present(h1):
        raise TrustmhError(f"--from {root}: neither {SAMPLED} nor {HUMAN_SCORE_FILES['H1']} found")
    report.add(RowProblem(sampled.name, -1, "file", "absent", f"{h1.name} used as the reference copy"))
    return [r if isinstance(r, dict) else {} for r in read_json_list(h1)], h1.name


def judge_scores(root: Path, reference: Sequence[dict[str, Any]], report: RowReport | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Per judge (its folder under data/llm_evaluator), its score of each reference answer: the `evaluation`
    of the first row with the same normalised (conversation, answer) in its merged files read in sorted file
    order, as the study's analysis does; a later row repeating an answer is counted (with another score: a
    conflict) and not used."""
    out: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in (root / "data" / "llm_evaluator").glob("*/n_200/merged") if p.is_dir()):
        judge = folder.parent.parent.name
        first: dict[str, float | None] = {}
        repeats = conflicts = unusable = 0
        models: set[str] = set()
        files = sorted(folder.glob("*_merged.json"))
        for path in files:
            if (m := MERGED.match(path.name)) is not None:
                models.add(m["evaluator"])
            rows = read_json_list(path)
            check_scale(path, rows)
            for i, row in enumerate(rows):
                k = item_key(row.get("inputs"), row.get("answer")) if isinstance(row, dict) else None
                if k is None:
                    unusable += 1
                    if report is not None:
                        what = ("not an object" if not isinstance(row, dict) else
                                "; ".join(f"{f}: {p}" for f, p in (("inputs", inputs_problem(row.get("inputs"))),
                                                                   ("answer", text_problem(row.get("answer"))))
                                          if p))
                        report.add(RowProblem(path.name, i, "row", what, "skipped"))
                    continue
                score = score_or_none(row.get("evaluation"))
                if k in first:
                    repeats += 1
                    conflicts += first[k] != score
                    continue
                first[k] = score
        scores = [first.get(k) if (k := item_key(r.get("inputs"), r.get("answer"))) is not None else None
                  for r in reference]
        out[judge] = {"scores": scores, "evaluator": ", ".join(sorted(models)) or judge, "n_files": len(files),
                      "n_repeated_answers": repeats, "n_conflicting_repeats": conflicts,
                      "n_unusable_rows": unusable}
    return out


def human_columns(root: Path, reference: Sequence[dict[str, Any]], report: RowReport
                  ) -> tuple[dict[str, list[float | None]], dict[str, str]]:
    """H1's and H2's rating of each reference answer (matched with `match_rows`) and how each file matched."""
    cols: dict[str, list[float | None]] = {}
    how: dict[str, str] = {}
    for h, rel in HUMAN_SCORE_FILES.items():
        path = root / rel
        if not present(path):
            report.add(RowProblem(path.name, -1, "file", "absent", "rater left out"))
            continue
        own = RowReport()
        rows = load_human_scores(path, own)
        m = match_rows(reference, [r["raw"] for r in rows], file=path.name)
        report.extend(_text_fields_dropped(own.problems) + m.problems)
        by_ref = m.row_for()
        cols[h] = [None if (i := by_ref.get(j)) is None else rows[i]["evaluation"] for j in range(len(reference))]
        how[h] = m.summary(h) + f"; {sum(v is not None for v in cols[h])} rated"
    if not cols:
        raise TrustmhError(f"--from {root}: no human score file ({', '.join(HUMAN_SCORE_FILES.values())})")
    return cols, how


def jury_scores(judges: dict[str, Sequence[float | None]], n: int) -> list[float | None]:
    out: list[float | None] = []
    for i in range(n):
        got = [s[i] for s in judges.values() if s[i] is not None]
        out.append(sum(got) / len(got) if got else None)
    return out


def _pstd(values: Sequence[float]) -> float:
    m = sum(values) / len(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / len(values))


def appropriateness(columns: dict[str, list[float | None]], judges: Sequence[str],
                    humans: Sequence[str]) -> dict[str, Any]:
    """The study's appropriateness agreement table from reference-aligned columns: every pair of raters'
    n, MAE, RMSE and within-1 on the unrounded scores (pairs with a missing side left out), and each rater's
    mean (population std) over the humans."""
    names = list(columns)
    pairwise = {a: {b: rating_agreement(columns[a], columns[b], rounded=False) for b in names if b != a}
                for a in names}
    vs_humans: dict[str, Any] = {}
    for a in [*judges, JURY, *(n for n in names if n.startswith("trustmh:"))]:
        if a not in columns:
            continue
        cells = [pairwise[a][h] for h in humans if h in pairwise[a] and pairwise[a][h]["n"]]
        entry: dict[str, Any] = {h: pairwise[a][h] for h in humans if h in pairwise[a]}
        if cells:
            for k in ("mae", "rmse", "within_1"):
                vals = [c[k] for c in cells]
                entry[f"mean_{k}"] = sum(vals) / len(vals)
                entry[f"std_{k}"] = _pstd(vals)
        vs_humans[a] = entry
    return {"coverage": {k: sum(v is not None for v in col) for k, col in columns.items()},
            "pairwise": pairwise, "vs_humans": vs_humans}


PUBLISHED_NAMES = {"LLM-Jury": JURY}


def published_appropriateness(root: Path) -> dict[str, dict[str, dict[str, float]]] | None:
    """The study's own outputs/appropriateness_agreement/pairwise_{mae,rmse,within1}.csv, when present
    ({rater: {rater: {mae, rmse, within_1 (0-1)}}})."""
    folder = root / "outputs" / "appropriateness_agreement"
    out: dict[str, dict[str, dict[str, float]]] = {}
    for metric, fname, scale in (("mae", "pairwise_mae.csv", 1.0), ("rmse", "pairwise_rmse.csv", 1.0),
                                 ("within_1", "pairwise_within1.csv", 0.01)):
        path = folder / fname
        if not present(path):
            return None
        try:
            with bounded_file(path).open(encoding="utf-8", newline="") as fh:
                rows = list(csv.reader(fh))
            header = [PUBLISHED_NAMES.get(h, h) for h in rows[0][1:]]
            for rec in rows[1:]:
                a = PUBLISHED_NAMES.get(rec[0], rec[0])
                for b, cell in zip(header, rec[1:], strict=True):
                    if a != b and cell.strip():
                        out.setdefault(a, {}).setdefault(b, {})[metric] = float(cell) * scale
        except (OSError, ValueError, IndexError) as exc:
            log(f"{path}: not read as the published table ({exc})")
            return None
    return out


def compare_published(pairwise: dict[str, dict[str, dict[str, Any]]],
                      published: dict[str, dict[str, dict[str, float]]]) -> dict[str, Any]:
    """Per published cell: ours, theirs, equal to 1e-9."""
    cells = []
    for a, row in sorted(published.items()):
        for b, theirs in sorted(row.items()):
            ours = pairwise.get(a, {}).get(b)
            for k, v in sorted(theirs.items()):
                got = None if ours is None else ours.get(k)
                cells.append({"rater": a, "vs": b, "metric": k, "published": v, "trustmh": got,
                              "equal": got is not None and abs(got - v) <= 1e-9})
    return {"n_cells": len(cells), "n_equal": sum(c["equal"] for c in cells),
            "differ": [c for c in cells if not c["equal"]]}


# ----------------------------------------------------------------------------------------- crisis labels
