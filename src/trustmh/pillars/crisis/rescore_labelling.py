"""The labelling analysis of `trustmh rescore --format crisis-original`: agreement, Cohen's and Fleiss' kappas
and identification metrics of the human annotators' and the LLM runs' crisis labels, compared with the
study's published figures."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import TrustmhError
from trustmh.data.files import bounded_file, present
from trustmh.data.rows import (
    RowProblem,
    RowReport,
    is_missing,
    match_rows,
)
from trustmh.pillars.crisis.data import LABELS, canonical_label, read_json_list
from trustmh.pillars.crisis.identification import identification_metrics
from trustmh.stats.agreement import (
    agreement_rate,
    cohen_kappa,
    confusion_table,
    fleiss_kappa,
    ratings_to_table,
)
from trustmh.stats.classification import majority_label

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
    reference = [r if isinstance(r, dict) else {} for r in read_json_list(ref_path)]
    raters: dict[str, list[str]] = {}
    files: dict[str, str] = {}
    families: dict[str, list[str]] = {}
    for path in [*human_files, *llm_files]:
        if path in human_files:
            name = path.name.split("_", 1)[0]
        else:
            fam = path.name.split("-labeled-", 1)[0]
            families.setdefault(fam, []).append(name := f"{fam}#{len(families.get(fam, [])) + 1}")
        rows = read_json_list(path)
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

