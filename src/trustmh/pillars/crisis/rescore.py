"""`trustmh rescore --format crisis-original`: the crisis study's published answers, judge evaluations and
human ratings ("Between Help and Harm", LLMs-Mental-Health-Crisis), read from a local copy (the data has no
licence: it is only ever read from a path you supply) and summarised with trustmh's statistics.

Layout under `--from DIR` (the study's repository):

* `data/llm_evaluator/{evaluator}/n_200/merged/{evaluator}-evaluation_{model}-answers-{dataset}-{ts}_merged.json`:
  a list of `{inputs, label, dataset_id, answer, refusal, evaluation, explanation, evals, evaluation_std}`;
* `data/human_label/H1_scores_n206_s42.json`, `H2_…`: `{inputs, answer, label, evaluation}` (bare `NaN` for
  unrated rows, in `label` and `evaluation` alike).

Per evaluator and model: mean appropriateness with a seeded 95% bootstrap interval (items resampled), the mean
within-item standard deviation of the evaluator's three scores, the share of evaluations equal to 1 and in
[0, 2.3], (2.3, 3.6], (3.6, 5], and the mean per label.

The appropriateness table and the labelling analysis follow the study's own pairing rule
(docs/reproducing.md#crisis-original): the sampled file is the reference, each judge's first evaluation of an
answer in sorted file order is its score, the human files are matched on the normalised conversation and
answer with position as the fallback, and MAE, RMSE and within-1 are unrounded. Every row that cannot be used
as it stands is named on stderr and in the output (docs/data.md#unusable-rows). With `--judge`, trustmh's own
crisis-escalation judge re-judges every published answer (reported beside the study's judges, never inside
their jury).
"""

from __future__ import annotations

import csv
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import JudgeRequest, TrustmhError, clean_json
from trustmh.data.files import MAX_DATA_FILE_BYTES, bounded_file, present, read_text_bounded
from trustmh.data.rows import (
    RowProblem,
    RowReport,
    inputs_problem,
    is_missing,
    item_key,
    match_rows,
    score_or_none,
    text_problem,
)
from trustmh.pillars.crisis.data import LABELS, canonical_label, load_human_scores
from trustmh.pillars.crisis.escalation import human_triple_requests
from trustmh.pillars.crisis.identification import identification_metrics
from trustmh.pillars.crisis.parse import parse_escalation_judge
from trustmh.stats.agreement import (
    agreement_rate,
    cohen_kappa,
    confusion_table,
    fleiss_kappa,
    rating_agreement,
    ratings_to_table,
)
from trustmh.stats.bootstrap import bootstrap_mean
from trustmh.stats.classification import majority_label
from trustmh.storage import write_text_atomic

MERGED = re.compile(r"^(?P<evaluator>.+?)-evaluation_(?P<model>.+?)-answers-(?P<dataset>.+)_merged\.json$")
BINS = (("share_0_2.3", 0.0, 2.3, True), ("share_2.3_3.6", 2.3, 3.6, False), ("share_3.6_5", 3.6, 5.0, False))


def _log(msg: str) -> None:
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
        problems: list[RowProblem] = []
        kept = 0
        rows = _read_list_lenient(path)
        check_scale(path, rows)
        for i, row in enumerate(rows):
            missing = ["object"] if not isinstance(row, dict) else [k for k in ("inputs", "answer", "evaluation")
                                                                    if k not in row]
            if missing:
                problems.append(RowProblem(path.name, i, "row", f"missing {', '.join(missing)}", "skipped"))
                continue
            kept += 1
            out[(m["evaluator"], m["model"])].append({**row, "_file": path.name})
        RowReport.require_usable(kept, str(path), problems)
        report.extend(problems)
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
        return [r if isinstance(r, dict) else {} for r in _read_list_lenient(sampled)], sampled.name
    h1 = root / HUMAN_SCORE_FILES["H1"]
    if not present(h1):
        raise TrustmhError(f"--from {root}: neither {SAMPLED} nor {HUMAN_SCORE_FILES['H1']} found")
    report.add(RowProblem(sampled.name, -1, "file", "absent", f"{h1.name} used as the reference copy"))
    return [r if isinstance(r, dict) else {} for r in _read_list_lenient(h1)], h1.name


def _read_list_lenient(path: Path) -> list[Any]:
    try:
        data = json.loads(read_text_bounded(path, MAX_DATA_FILE_BYTES, str(path)))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: cannot read as JSON ({exc})") from None
    if not isinstance(data, list):
        raise TrustmhError(f"{path}: expected a JSON list of objects")
    return data


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
            rows = _read_list_lenient(path)
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
            _log(f"{path}: not read as the published table ({exc})")
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

LABEL_REFERENCE = "data/human_label/human-labeled-sampled_dataset_n206_s42-merged_labels.json"
NO_LABEL = ""  # a labelling run that gave no usable label: a category of its own in the study's kappas
SORTED_LABELS = tuple(sorted(LABELS))  # the study's label order


def _rater_label(value: Any, where: str, report: RowReport, file: str, row: int) -> str:
    if is_missing(value) or (isinstance(value, str) and not value.strip()):
        return NO_LABEL
    try:
        lab = canonical_label(value, where)
    except TrustmhError as exc:
        report.add(RowProblem(file, row, "label", str(exc).rsplit(": ", 1)[-1], "counted as no label"))
        return NO_LABEL
    return lab or NO_LABEL


def _kappa(a: Sequence[str], b: Sequence[str], labels: Sequence[str]) -> float | None:
    k = cohen_kappa(a, b, labels=labels)
    return None if math.isnan(k) else k


def _fleiss(ratings: Sequence[Sequence[str]], categories: Sequence[str]) -> dict[str, Any]:
    """Fleiss' κ over the items every rater labelled within `categories` (n stated)."""
    keep = [i for i in range(len(ratings[0])) if all(r[i] in categories for r in ratings)]
    if not keep or len(ratings) < 2:
        return {"kappa": None, "n_items": len(keep), "n_raters": len(ratings)}
    table = ratings_to_table(np.array([[r[i] for r in ratings] for i in keep], dtype=object), categories)
    k = fleiss_kappa(table)
    return {"kappa": None if math.isnan(k) else k, "n_items": len(keep), "n_raters": len(ratings)}


def labelling(root: Path, report: RowReport) -> dict[str, Any] | None:
    """The study's crisis-label agreement (docs/reproducing.md#crisis-original): the four human
    annotators' and the nine LLM labelling runs' labels of the 206 validation conversations, matched to the
    merged human file on the conversation (position as the fallback). None when the files are absent."""
    ref_path = root / LABEL_REFERENCE
    human_files = sorted((root / "data" / "human_label").glob("H*_label*_n206_s42.json"))
    llm_files = sorted(p for p in (root / "data" / "llm_label").glob("*-labeled-sampled_dataset_n_200_*.json")
                       if "merged" not in p.name.rsplit("s42", 1)[-1])
    if not present(ref_path) or not human_files:
        return None
    reference = [r if isinstance(r, dict) else {} for r in _read_list_lenient(ref_path)]
    raters: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    families: dict[str, list[str]] = {}
    for path in [*human_files, *llm_files]:
        if path in human_files:
            name = path.name.split("_", 1)[0]
        else:
            fam = path.name.split("-labeled-", 1)[0]
            families.setdefault(fam, []).append(name := f"{fam}#{len(families.get(fam, [])) + 1}")
        rows = _read_list_lenient(path)
        m = match_rows(reference, [r if isinstance(r, dict) else {} for r in rows], file=path.name,
                       fields=("inputs", None))
        report.extend(m.problems)
        by_ref = m.row_for()
        col = []
        for j in range(len(reference)):
            i = by_ref.get(j)
            if i is None:
                report.add(RowProblem(path.name, -1, f"item {j}", "no row for this conversation", "counted as no label"))
                col.append(NO_LABEL)
                continue
            col.append(_rater_label(rows[i].get("label"), f"{path} item {i}", report, path.name, i))
        raters[name] = col
        files[name] = path.name
    humans = [n for n in raters if not any(n in v for v in families.values())]
    llms = [n for v in families.values() for n in v]
    all_labels = [*SORTED_LABELS, NO_LABEL]
    names = list(raters)
    pairs = []
    for x in range(len(names)):
        for y in range(x + 1, len(names)):
            a, b = raters[names[x]], raters[names[y]]
            table, _ = confusion_table(a, b, all_labels)
            pairs.append({"a": names[x], "b": names[y], "n": len(a), "agreement": agreement_rate(a, b),
                          "cohen_kappa": _kappa(a, b, all_labels), "confusion": table.astype(int).tolist()})
    fleiss = {"humans": _fleiss([raters[h] for h in humans], SORTED_LABELS),
              "llms": _fleiss([raters[n] for n in llms], all_labels) if llms else None}
    for fam, ns in families.items():
        fleiss[fam] = _fleiss([raters[n] for n in ns], all_labels)
    # gold for the identification metrics: the four annotators' majority (ties stated and left out), and
    # the merged file's own label (the study's majority of five annotators; null on a tie)
    majority = [majority_label([raters[h][j] for h in humans], SORTED_LABELS) for j in range(len(reference))]
    merged_gold = [_rater_label(r.get("label"), f"{ref_path} item {j}", report, ref_path.name, j)
                   for j, r in enumerate(reference)]
    golds = {
        "majority_H1_H4": ([lab for lab, _ in majority], sum(t for _, t in majority)),
        "merged_file_label": ([lab or None for lab in merged_gold], sum(1 for lab in merged_gold if not lab)),
    }
    identification: dict[str, Any] = {}
    for n in llms:
        per: dict[str, Any] = {}
        for gname, (gold, n_tied) in golds.items():
            idx = [j for j, g in enumerate(gold) if g]
            pred = [raters[n][j] or None for j in idx]
            per[gname] = identification_metrics([gold[j] for j in idx], pred) | {"n_gold_missing_or_tied": len(gold) - len(idx)}
            per[gname]["n_ties"] = n_tied
        identification[n] = per
    return {"n_items": len(reference), "reference": ref_path.name, "raters": files, "humans": humans,
            "llm_families": families, "labels": all_labels, "pairs": pairs, "fleiss": fleiss,
            "gold_ties": {"majority_H1_H4": golds["majority_H1_H4"][1],
                          "merged_file_label": golds["merged_file_label"][1]},
            "identification_vs_humans": identification,
            "human_vs_llm": (by_family := human_vs_llm(pairs, humans, families)),
            "published": (pub := published_labelling(root)),
            "fleiss_matches_published": None if pub is None else {
                who: {"published": v, "trustmh": (k := fleiss.get(PUBLISHED_FLEISS.get(who, who)) or {}).get("kappa"),
                      "equal_to_3_decimals": k.get("kappa") is not None and round(k["kappa"], 3) == v}
                for who, v in pub.items()},
            "pairs_match_published": compare_published_labelling(root, pairs, by_family, files)}


def human_vs_llm(pairs: Sequence[dict[str, Any]], humans: Sequence[str],
                 families: dict[str, list[str]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per human and LLM, the mean agreement and Cohen's κ over that LLM's runs (the study's "Human vs LLM"
    table)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for h in humans:
        for fam, runs in families.items():
            ps = [p for p in pairs if h in (p["a"], p["b"]) and (p["a"] in runs or p["b"] in runs)]
            kappas = [p["cohen_kappa"] for p in ps if p["cohen_kappa"] is not None]
            out.setdefault(h, {})[fam] = {
                "n_runs": len(ps), "agreement": float(np.mean([p["agreement"] for p in ps])) if ps else None,
                "cohen_kappa": float(np.mean(kappas)) if kappas and len(kappas) == len(ps) else None}
    return out


# a row of the report's "Summary of Agreement Rates" / "Human vs LLM Rater Agreement" tables
_PUB_PAIR = re.compile(r"^\|\s*(?P<a>\S+\.json)\s*\|\s*(?P<b>[^|]+?)\s*\|\s*(?P<agr>[0-9.]+)\s*\|\s*(?P<k>-?[0-9.]+)\s*\|",
                       re.MULTILINE)


def compare_published_labelling(root: Path, pairs: Sequence[dict[str, Any]],
                                 by_family: dict[str, dict[str, dict[str, Any]]],
                                 files: dict[str, str]) -> dict[str, Any] | None:
    """Every pair's agreement (%) and Cohen's κ, and every human-vs-LLM mean, against the study's
    agreement_report.md tables, at the 3 decimals it prints. None when the report is absent."""
    path = root / "outputs" / "crisis_label_agreement" / "agreement_report.md"
    if not present(path):
        return None
    rater_of = {f: n for n, f in files.items()}
    ours: dict[tuple[str, str], tuple[float | None, float | None]] = {
        (p["a"], p["b"]): (p["agreement"], p["cohen_kappa"]) for p in pairs}
    for h, fams in by_family.items():
        for fam, v in fams.items():
            ours[(h, fam)] = (v["agreement"], v["cohen_kappa"])
    n_cells, differ, unknown = 0, [], []
    for m in _PUB_PAIR.finditer(bounded_file(path).read_text(encoding="utf-8", errors="replace")):
        a = rater_of.get(m["a"])
        b = rater_of.get(m["b"]) or re.sub(r"\s*\(n=\d+\)$", "", m["b"])
        if a is None or (a, b) not in ours:
            unknown.append(f"{m['a']} | {m['b']}")
            continue
        agr, kap = ours[(a, b)]
        for metric, pub, mine in (("agreement_pct", float(m["agr"]), None if agr is None else 100 * agr),
                                  ("cohen_kappa", float(m["k"]), kap)):
            n_cells += 1
            if mine is None or round(mine, 3) != pub:
                differ.append({"a": a, "b": b, "metric": metric, "published": pub, "trustmh": mine})
    return {"n_cells": n_cells, "n_equal": n_cells - len(differ), "differ": differ, "not_ours": unknown}


PUBLISHED_FLEISS = {"all human annotators": "humans", "all LLM annotators": "llms"}
_PUB_FLEISS = re.compile(r"Fleiss' Kappa \(across (?P<who>[^)]+)\):\s*(?P<k>-?[0-9.]+)")


def published_labelling(root: Path) -> dict[str, float] | None:
    """Fleiss' κ as printed (3 decimals) in the study's outputs/crisis_label_agreement/agreement_report.md."""
    path = root / "outputs" / "crisis_label_agreement" / "agreement_report.md"
    if not present(path):
        return None
    text = bounded_file(path).read_text(encoding="utf-8", errors="replace")
    return {m["who"]: float(m["k"]) for m in _PUB_FLEISS.finditer(text)} or None


def our_judge_requests(rows: Sequence[dict[str, Any]]) -> list[JudgeRequest | None]:
    """trustmh's crisis-escalation judge (our rubric, default mode) on each answer ({inputs, answer, label});
    None where the label is missing or unknown (no rubric row to judge against)."""

    def label(value: Any) -> str | None:
        try:
            return canonical_label(value, "label")
        except TrustmhError:
            return None

    return human_triple_requests([{"index": i, "utterances": list(r["inputs"]) if isinstance(r["inputs"], list)
                                   else str(r["inputs"]).split(" | "),
                                   "answer": str(r["answer"]), "label": label(r.get("label"))}
                                  for i, r in enumerate(rows)])


def our_judge_scores(rows: Sequence[dict[str, Any]], judge: Callable[[JudgeRequest], str]) -> list[float | None]:

    return [None if req is None else parse_escalation_judge(judge(req))["appropriateness"]
            for req in our_judge_requests(rows)]


def published_answers(evaluations: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per model, each distinct published answer once ({inputs, answer, label}), whichever evaluator saw it."""
    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for (_, model), rows in sorted(evaluations.items()):
        for row in rows:
            out[model].setdefault((str(row["inputs"]), str(row["answer"])), row)
    return {model: list(by_key.values()) for model, by_key in out.items()}


def rescore_crisis(source: Path, out: Path, *, seed: int, n_boot: int = 2000,
                   judge: Callable[[JudgeRequest], str] | None = None, judge_label: str | None = None) -> int:
    """Write `out/crisis_rescore.json`; returns 0. `judge(request) -> text` is trustmh's judge, if any."""

    report = RowReport()
    evaluations = load_evaluations(source, report)
    per = {f"{ev}|{model}": summarise(rows, seed=seed, n_boot=n_boot)
           for (ev, model), rows in sorted(evaluations.items())}
    reference, ref_name = reference_answers(source, report)
    judged = judge_scores(source, reference, report)
    humans, matching = human_columns(source, reference, report)
    columns: dict[str, list[float | None]] = {j: v["scores"] for j, v in judged.items()}
    columns[JURY] = jury_scores(columns, len(reference))
    columns.update(humans)
    rated_idx = [i for i in range(len(reference)) if all(humans[h][i] is not None for h in humans)]
    if judge is not None:
        name = f"trustmh:{judge_label or 'judge'}"
        rated_rows = [reference[i] for i in rated_idx]
        ours = our_judge_scores(rated_rows, judge)
        col: list[float | None] = [None] * len(reference)
        for i, sc in zip(rated_idx, ours, strict=True):
            col[i] = sc
        columns[name] = col
        # the same per-model figures as for the study's evaluators, from our judge on every answer
        for model, answers in sorted(published_answers(evaluations).items()):
            scores = our_judge_scores(answers, judge)
            per[f"{name}|{model}"] = summarise([{**a, "evaluation": sc, "evaluation_std": None}
                                                for a, sc in zip(answers, scores, strict=True)],
                                               seed=seed, n_boot=n_boot)
    table = appropriateness(columns, list(judged), list(humans))
    published = published_appropriateness(source)
    human_agreement: dict[str, Any] = {"n_answers": len(rated_idx)}
    if "H1" in humans and "H2" in humans:
        human_agreement["H1_vs_H2"] = table["pairwise"]["H1"]["H2"]
    for name, entry in table["vs_humans"].items():
        human_agreement[name] = {h: entry[h] for h in humans}
    labels = labelling(source, report)
    notes = ["mean: evaluator's appropriateness (1–5) over every answer of the model, the three runs "
             "pooled; ci: seeded percentile bootstrap over conversations",
             f"agreement: on the {len(reference)} answers of {ref_name} (the answers the humans rated); each "
             "judge's score is its first evaluation of that conversation and answer in its merged files in sorted "
             "file order, as the study's analysis; humans matched on the normalised conversation and answer, "
             "position as the fallback; MAE, RMSE and within-1 (|d| <= 1) on the unrounded scores; "
             "jury = mean of the study's judges (the study's LLM-Jury)",
             *matching.values(),
             *(f"{j}: {v['n_repeated_answers']} repeated answers in its merged files "
               f"({v['n_conflicting_repeats']} with another score), first kept" for j, v in judged.items()
               if v["n_repeated_answers"]),
             "the study's confusion matrices of the judges' raw evaluations against the humans are not "
             "reproduced: they pair evaluations and human scores by list position without aligning the items"]
    if labels is None:
        notes.append(f"labelling: not computed ({LABEL_REFERENCE} or data/human_label/H*_label*_n206_s42.json "
                     "absent)")
    else:
        notes.append("labelling: agreement = share of identical labels, Cohen's kappa unweighted over the 7 labels "
                     "and '' (no label) as the study; Fleiss' kappa over the items every rater of the group "
                     "labelled (humans: 7 labels; LLM runs: 7 labels and ''); identification metrics of each LLM "
                     "run against the four annotators' majority (ties left out, counted) and against the merged "
                     "file's label (the study's majority of five; null on a tie)")
    result = {
        "source": str(source), "seed": seed, "n_boot": n_boot,
        "per_evaluator_model": per,
        "appropriateness": {"reference": ref_name, "n_reference": len(reference),
                            "judges": {j: {k: v for k, v in d.items() if k != "scores"} for j, d in judged.items()},
                            **table,
                            "published": published,
                            "matches_published": None if published is None else compare_published(table["pairwise"],
                                                                                                   published)},
        "human_agreement": human_agreement,
        "labelling": labels,
        **report.as_json(),
        "notes": notes,
    }
    report.log()
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "crisis_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    match_note = ""
    if published is not None:
        cmp = result["appropriateness"]["matches_published"]
        match_note = f"; {cmp['n_equal']}/{cmp['n_cells']} published appropriateness figures reproduced"
    if labels is not None and (lcmp := labels["pairs_match_published"]) is not None:
        n_fleiss = sum(v["equal_to_3_decimals"] for v in (labels["fleiss_matches_published"] or {}).values())
        match_note += (f"; {lcmp['n_equal']}/{lcmp['n_cells']} published labelling agreement figures and "
                       f"{n_fleiss}/{len(labels['fleiss_matches_published'] or {})} Fleiss' kappas reproduced")
    _log(f"wrote {out / 'crisis_rescore.json'} ({len(per)} evaluator × model cells, {len(rated_idx)} answers "
         f"rated by both humans, {len(report.problems)} rows flagged{match_note})")
    return 0
