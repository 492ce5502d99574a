"""The crisis study's merged evaluation files (`data/llm_evaluator/{evaluator}/n_200/merged/…`), read from a
local copy, and the per-(evaluator, model) summary of `trustmh rescore --format crisis-original`
(`trustmh.pillars.crisis.rescore`, whose docstring describes the layout and the figures)."""

from __future__ import annotations

import math
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.rows import (
    KeyedRows,
    RowProblem,
    RowReport,
    item_key,
    score_or_none,
)
from trustmh.pillars.crisis.data import read_json_list
from trustmh.stats.bootstrap import bootstrap_mean

MERGED = re.compile(r"^(?P<evaluator>.+?)-evaluation_(?P<model>.+?)-answers-(?P<dataset>.+)_merged\.json$")
BINS = (("share_0_2.3", 0.0, 2.3, True), ("share_2.3_3.6", 2.3, 3.6, False), ("share_3.6_5", 3.6, 5.0, False))


def log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(float(v)):
        return None
    return float(v)


# The study's appropriateness scale; an evaluation off it is a file on another scale (0-100, 0-10), whose mean
# read as 1-5 would be a wrong number.
STUDY_SCALE = (1.0, 5.0)


def check_scale(path: Path, rows: Sequence[Any]) -> None:
    """Refuse a merged evaluation file holding a score off the study's 1-5 scale, naming the file, the first
    such row and the field, and how many rows are off (missing and non-numeric scores are counted elsewhere)."""
    off = [(i, v) for i, row in enumerate(rows) if isinstance(row, dict)
           and (v := score_or_none(row.get("evaluation"))) is not None
           and not STUDY_SCALE[0] <= v <= STUDY_SCALE[1]]
    if off:
        i, v = off[0]
        raise TrustmhError(f"{path} row {i} field 'evaluation': {v:g} is off the study's "
                           f"{STUDY_SCALE[0]:g}-{STUDY_SCALE[1]:g} scale ({len(off)} of {len(rows)} row(s) are); "
                           "a file on another scale (0-100?) must be converted first")


def load_evaluations(root: Path, report: RowReport | None = None) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(evaluator, model) → rows of every merged evaluation file (the three runs pooled). A row that is not an
    object or lacks `inputs`, `answer` or `evaluation` is skipped and named in `report`; a file is refused only
    when none of its rows is usable."""
    base = root / "data" / "llm_evaluator"
    if not base.is_dir():
        raise TrustmhError(f"--from {root}: no data/llm_evaluator folder (expected the crisis study's layout)")
    report = report if report is not None else RowReport()
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(base.glob("*/n_200/merged/*_merged.json")):
        m = MERGED.match(path.name)
        if m is None:
            raise TrustmhError(f"{path}: file name not of the form "
                               "{evaluator}-evaluation_{model}-answers-{dataset}-{ts}_merged.json")
        problems = RowReport()
        rows = read_json_list(path)
        check_scale(path, rows)
        # an answer evaluated twice in one file: once if the copies agree, else left out (docs/data.md#publisher-numbers)
        keyed = KeyedRows(path.name, "inputs/answer")
        for i, row in enumerate(rows):
            missing = ["object"] if not isinstance(row, dict) else [k for k in ("inputs", "answer", "evaluation")
                                                                    if k not in row]
            if missing:
                problems.add(RowProblem(path.name, i, "row", f"missing {', '.join(missing)}", "skipped"))
                continue
            key = item_key(row.get("inputs"), row.get("answer"))
            keyed.add(key if key is not None else ("row", i), i, row)
        usable = list(keyed.result(problems, lambda k: "the same conversation and answer").values())
        out[(m["evaluator"], m["model"])].extend({**row, "_file": path.name} for row in usable)
        RowReport.require_usable(len(usable), str(path), problems.problems)
        report.extend(problems.problems)
    if not out:
        raise TrustmhError(f"{base}: no */n_200/merged/*_merged.json evaluation files")
    return dict(out)


def summarise(rows: Sequence[dict[str, Any]], *, seed: int, n_boot: int) -> dict[str, Any]:
    """The per-(evaluator, model) figures (see the module docstring)."""
    scores = [_number(r.get("evaluation")) for r in rows]
    valid = [(r, s) for r, s in zip(rows, scores, strict=True) if s is not None]
    out: dict[str, Any] = {"n": len(rows), "n_invalid": len(rows) - len(valid)}
    if not valid:
        return out | {"mean": None, "ci": None}
    values = [s for _, s in valid]
    mean, ci = bootstrap_mean(values, [str(r.get("inputs")) for r, _ in valid], seed=seed, n_boot=n_boot)
    sds = [sd for r, _ in valid if (sd := _number(r.get("evaluation_std"))) is not None]
    out.update(mean=mean, ci=list(ci) if ci else None, mean_within_item_sd=sum(sds) / len(sds) if sds else None,
               share_eq_1=sum(v == 1 for v in values) / len(values))
    for name, lo, hi, closed in BINS:
        out[name] = sum((lo <= v if closed else lo < v) and v <= hi for v in values) / len(values)
    by_label: dict[str, list[float]] = defaultdict(list)
    for r, s in valid:
        by_label[str(r.get("label"))].append(s)
    out["per_label"] = {lab: sum(v) / len(v) for lab, v in sorted(by_label.items())}
    return out



