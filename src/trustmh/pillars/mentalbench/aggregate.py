"""MentalBench's aggregation (docs/pillars/mentalbench.md#mentalbench): per-source attribute means with
cluster-bootstrap intervals, the CSS/ARS composites, parse-status and gen_status counts, ensemble agreement,
self-preference and test–retest, from the records of `trustmh.pillars.mentalbench.generation`."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.core import (
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
)
from trustmh.judges.ensemble import ensemble_settings
from trustmh.models.providers import model_family
from trustmh.pillars.mentalbench.diagnostics import (
    member_agreement,
    retest_reliability,
    self_preference,
)
from trustmh.pillars.mentalbench.judging import (
    GEN_STATUSES,
    judge_members,
    judge_repeats,
    model_label,
    rating_scores,
    request_name,
)
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.sources import (
    ARS,
    CSS,
    MODEL_SOURCE,
    ORIGINAL,
    SOURCE_FAMILY,
)
from trustmh.stats.bootstrap import bootstrap_mean, cluster_codes, draw_counts, percentile_ci

# ==========================================================================================================
# Aggregation
# ==========================================================================================================

def _attr_matrix(recs: Sequence[Record], key: str = "scores") -> np.ndarray:
    out = np.full((len(recs), len(ATTRIBUTES)), np.nan)
    for i, r in enumerate(recs):
        s = r.score.get(key) or {}
        for j, a in enumerate(ATTRIBUTES):
            v = s.get(a)
            if v is not None:
                out[i, j] = float(v)
    return out


def attribute_means(values: np.ndarray, clusters: Sequence[object], *, seed: int,
                    n_boot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-attribute means (NaN rows ignored per attribute) and their cluster-bootstrap replicates.

    Returns (means (A,), counts (A,), replicates (B, A)); one draw matrix serves every attribute, so
    composites of the attribute means are bootstrapped on the same replicates."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    codes, n_c = cluster_codes(list(clusters))
    sums = np.zeros((n_c, v.shape[1]))
    cnts = np.zeros((n_c, v.shape[1]))
    np.add.at(sums, codes, np.where(ok, v, 0.0))
    np.add.at(cnts, codes, ok.astype(float))
    counts = cnts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums.sum(axis=0) / np.maximum(counts, 1), np.nan)
        w = draw_counts(n_c, n_boot, seed) if n_c else np.zeros((n_boot, 0))
        reps = (w @ sums) / (w @ cnts)
    return means, counts, reps


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _ci(reps: np.ndarray) -> list[float | None] | None:
    lo, hi = percentile_ci(reps)
    return None if math.isnan(lo) else [float(lo), float(hi)]


def _unit_mean(mat: np.ndarray) -> np.ndarray:
    """Per-unit mean over the valid attributes (NaN when none)."""
    with np.errstate(invalid="ignore"):
        cnt = np.isfinite(mat).sum(axis=1)
        return np.where(cnt > 0, np.nansum(mat, axis=1) / np.maximum(cnt, 1), np.nan)


def aggregate_mentalbench(records: list[Record], ctx: RunContext, subtask: Subtask) -> SubtaskResult:
    """Per-source attribute means with cluster-bootstrap CIs (cluster = context), CSS/ARS composites
    (default mode), parse-status counts per judge × attribute, gen_status counts, ensemble agreement,
    self-preference and test–retest. `value` = the model's mean over the 7 attribute means."""
    if not records:
        return SubtaskResult.not_computed("no scored samples", "higher")
    label = model_label(ctx, records)
    members = judge_members(ctx)
    repeats = judge_repeats(ctx)
    aggregator, min_valid = ensemble_settings(ctx, subtask, len(members))
    # Published (fixed) replies are judged once: later epochs of the same item are duplicates.
    recs = [r for r in records if not ("fixed_response" in r.metadata and r.epoch > 1)]
    notes: list[str] = []
    metrics: dict[str, Any] = {"model_label": label}

    def source_of(r: Record) -> str:
        return str(r.score.get("source", r.metadata.get("source", MODEL_SOURCE)))

    # ------------------------------------------------------------- gen_status (model replies)
    model_recs = [r for r in recs if source_of(r) == MODEL_SOURCE]
    gen_counts = dict.fromkeys(GEN_STATUSES, 0)
    for r in model_recs:
        st = r.score.get("gen_status", "empty")
        if r.error:
            st = "error"
        gen_counts[st] = gen_counts.get(st, 0) + 1
    metrics["gen_status"] = gen_counts
    metrics["no_response"] = sum(not r.score.get("valid", False) for r in model_recs)
    pub = [r for r in recs if source_of(r) != MODEL_SOURCE]
    if pub:
        metrics["published_status"] = dict(Counter(str(r.score.get("gen_status")) for r in pub))
        n_placeholder = sum(1 for r in pub if r.score.get("placeholder"))
        if n_placeholder:
            notes.append(f"faithful: {n_placeholder} missing published repl(ies) were judged as the text "
                         "'nan', as in the original pipeline")

    # ------------------------------------------------------------- per-source attribute means
    by_source: dict[str, list[Record]] = {}
    for r in recs:
        by_source.setdefault(source_of(r), []).append(r)
    per_source: dict[str, Any] = {}
    model_value: float | None = None
    model_ci: list[float | None] | None = None
    for src, rs in by_source.items():
        mat = _attr_matrix(rs)
        means, counts, reps = attribute_means(mat, [r.cluster for r in rs], seed=ctx.seed, n_boot=ctx.n_boot)
        entry: dict[str, Any] = {"n": len(rs), "label": label if src == MODEL_SOURCE else src}
        for j, a in enumerate(ATTRIBUTES):
            entry[a] = {"mean": _num(means[j]), "ci": _ci(reps[:, j]), "n": int(counts[j])}
        if np.isfinite(means).all():
            entry["mean7"] = float(means.mean())
            entry["mean7_ci"] = _ci(reps.mean(axis=1))
        else:
            entry["mean7"], entry["mean7_ci"] = None, None
        if ctx.mode == "default":
            for name, group in (("css", CSS), ("ars", ARS)):
                idx = [ATTRIBUTES.index(a) for a in group]
                sub = mat[:, idx]
                comp = np.where(np.isfinite(sub).all(axis=1), sub.mean(axis=1) if sub.size else np.nan, np.nan)
                val, ci = bootstrap_mean(comp, [r.cluster for r in rs], seed=ctx.seed, n_boot=ctx.n_boot)
                entry[name] = {"mean": _num(val), "ci": None if math.isnan(ci[0]) else list(ci),
                               "n": int(np.isfinite(comp).sum())}
        per_source[src] = entry
        if src == MODEL_SOURCE:
            model_value, model_ci = entry["mean7"], entry["mean7_ci"]
    metrics["sources"] = per_source
    if MODEL_SOURCE in per_source:
        m = per_source[MODEL_SOURCE]
        for a in ATTRIBUTES:
            metrics[a] = m[a]["mean"]
        if ctx.mode == "default":
            metrics["css"] = m["css"]["mean"]
            metrics["ars"] = m["ars"]["mean"]
    if ORIGINAL in per_source:
        metrics["original_mean7"] = per_source[ORIGINAL]["mean7"]
    if ctx.mode == "faithful":
        notes.append("faithful: scores from the strict parser (a score outside 1-5 left out, counted in "
                     "parse_status); CSS/ARS composites are a default-mode extension and are not reported")

    # ------------------------------------------------------------- parse statuses
    status_counts: dict[str, dict[str, dict[str, int]]] = {}
    unparsed: dict[str, dict[str, int]] = {}
    for r in recs:
        src = source_of(r)
        for name, rating in (r.score.get("ratings") or {}).items():
            per_attr = status_counts.setdefault(name, {a: {} for a in ATTRIBUTES})
            bad = 0
            for a in ATTRIBUTES:
                st = rating["status"][a]
                per_attr[a][st] = per_attr[a].get(st, 0) + 1
                bad += st not in ("ok", "recovered")
            u = unparsed.setdefault(name, {})
            u[src] = u.get(src, 0) + bad
    metrics["parse_status"] = status_counts
    metrics["unparsed"] = unparsed
    n_unparsed_judged = sum(
        1 for r in recs for rating in (r.score.get("ratings") or {}).values() for a in ATTRIBUTES
        if rating["status"][a] not in ("ok", "recovered", "no_response"))
    metrics["n_unparsed"] = n_unparsed_judged
    if n_unparsed_judged:
        notes.append(f"{n_unparsed_judged} judge score(s) could not be parsed (counted per judge × attribute "
                     "in parse_status; never dropped silently)")

    # ------------------------------------------------------------- ensemble
    judged = [r for r in recs if r.score.get("ratings")]
    labels = [lab for lab, _ in members]
    member_mats = {lab: np.array([[np.nan if v is None else v for v in
                                   (rating_scores(r.score["ratings"][request_name(lab, 1, repeats)], ctx.mode)
                                    .values())] for r in judged]).reshape(len(judged), len(ATTRIBUTES))
                   for lab in labels}
    if len(members) > 1:
        n_incomplete = sum(1 for r in judged for a in ATTRIBUTES
                           if (r.score.get("score_status") or {}).get(a) == "ensemble_incomplete")
        metrics["ensemble"] = {"members": labels, "aggregator": aggregator, "min_valid": min_valid,
                               "n_incomplete": n_incomplete,
                               "member_means": {lab: _num(np.nanmean(m)) if np.isfinite(m).any() else None
                                                for lab, m in member_mats.items()},
                               "agreement": member_agreement(member_mats, ATTRIBUTES)}
        judge_note = (f"scores: ensemble of {len(members)} judges ({', '.join(labels)}), {aggregator}, "
                      f"min_valid={min_valid}")
    else:
        judge_note = f"scores: judge {labels[0]}"
    notes.append(judge_note + ("" if repeats == 1 else f"; each judge asked {repeats} times, the first answer "
                               "is the rating, the rest feed test–retest"))

    # ------------------------------------------------------------- self-preference
    src_family = [model_family(label) if source_of(r) == MODEL_SOURCE else SOURCE_FAMILY.get(source_of(r),
                  model_family(source_of(r))) for r in judged]
    judge_fam = {lab: model_family(model or lab) for lab, model in members}
    if judged:
        unit_scores = {lab: _unit_mean(m) for lab, m in member_mats.items()}
        sp = self_preference(unit_scores, judge_fam, src_family, [r.cluster for r in judged], seed=ctx.seed,
                             n_boot=ctx.n_boot)
        model_fam = model_family(label)
        for lab in labels:
            sp[lab]["same_family"] = bool(model_fam is not None and judge_fam.get(lab) == model_fam)
            if sp[lab]["same_family"]:
                notes.append(f"judge {lab} is from the same family ({model_fam}) as the model under test: "
                             "self-preference may inflate its scores (see self_preference)")
        metrics["self_preference"] = sp

    # ------------------------------------------------------------- test–retest
    if repeats > 1 and judged:
        tr: dict[str, Any] = {}
        for lab in labels:
            reps_mats = []
            for k in range(1, repeats + 1):
                name = request_name(lab, k, repeats)
                reps_mats.append(np.array([[np.nan if v is None else v for v in
                                            rating_scores(r.score["ratings"][name], ctx.mode).values()]
                                           for r in judged]).reshape(len(judged), len(ATTRIBUTES)))
            tr[lab] = retest_reliability(reps_mats, ATTRIBUTES)
        metrics["test_retest"] = tr

    # ------------------------------------------------------------- data notes
    info = next((r.metadata.get("data") for r in recs if r.metadata.get("data")), None)
    if info:
        metrics["data"] = {k: info.get(k) for k in ("origin", "file", "counts", "duplicates_dropped",
                                                    "generate_template_sha256", "judge_template_sha256")}
        notes.extend(info.get("notes") or [])
        if info.get("duplicates_dropped"):
            notes.append(f"{info['duplicates_dropped']} row(s) with a duplicate context left out of the sample")
    if ctx.mode == "faithful":
        notes.append("faithful: the original judged at temperature 0.7; trustmh's judge calls run at "
                     "temperature 0 with the run seed")

    n_model = len(model_recs)
    n_invalid = sum(1 for r in model_recs if r.score.get("mean7") is None)
    if not model_recs or model_value is None:
        # A rescore of published replies has no model under test: the primary value is not defined.
        if not model_recs:
            result = SubtaskResult.not_computed("no model under test (published replies only): see the "
                                                "per-source scores in metrics.sources", "higher",
                                                metrics=metrics, notes=notes)
            result.method = "judge"
            return result
        return SubtaskResult.not_computed("no attribute has a valid judge score for the model", "higher",
                                          n=n_model, n_invalid=n_invalid, metrics=metrics, notes=notes)
    ci = tuple(model_ci) if model_ci else None
    return SubtaskResult(value=model_value, ci=ci, n=n_model, n_invalid=n_invalid,  # type: ignore[arg-type]
                         direction="higher", metrics=metrics, method="judge",
                         notes=[f"value: mean over the 7 attributes (1–5, higher is better) of {label}"] + notes)
