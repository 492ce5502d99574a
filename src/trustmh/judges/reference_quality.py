"""Reference quality before judge quality: the rule every reference set applies (docs/references.md#the-rule).

A reference with several human raters per item can only certify a judge on a criterion where those humans
agree with each other. Plain Python (numpy); no Inspect.

API
---

`human_agreement(ratings_by_item_by_rater, kind, *, seed, n_boot, clusters=None)` -> dict
    The humans' own agreement on one criterion, with a seeded 95% percentile interval (items, or the
    given clusters, resampled with `stats.bootstrap.cluster_indices`). `ratings_by_item_by_rater` maps
    item id -> rater -> value (None = that rater did not rate that item). `kind`:

    * "ratings" (numbers on a scale): ICC(A,1) over all raters (`stats.icc.icc_a1`, two-way, absolute
      agreement, single rater) when every rater rated every item; Krippendorff's α at the interval level
      (`stats.agreement.krippendorff_alpha`) when some ratings are missing;
    * "labels" (categories, e.g. yes/no): Fleiss' κ over all raters (`stats.agreement.fleiss_kappa`; with
      two raters it is Scott's π) when complete; Krippendorff's α at the nominal level when not.

    Items with fewer than two ratings cannot show agreement: left out and counted (`n_items_unpairable`).

`certify_criterion(human_ratings, judge_ratings, kind, *, seed, n_boot, floor=None, margin=MARGIN,
                   clusters=None, scale=None)` -> CriterionVerdict
    `judge_ratings` maps item id -> the judge's value (None or absent = unreadable). The verdict's `status`
    is one of

    * "reference cannot certify" — (a) fails: the lower bound of the humans' own agreement is below the
      floor (default `FLOORS[kind]`), or it cannot be computed, or the humans used a single label. The judge's
      figures are still computed and shown; this is never a pass and the criterion is never dropped. It is
      also the status, with the reason "reference too small to certify a human-level judge" and the items
      that would suffice, when (b) fails on a reference whose power is below `reference_power.TARGET_POWER`;
    * "certified" — (a) holds and (b) the judge agrees with every rater's peers at least as well as that rater
      does: for every rater r, the lower 95% bound of D_r = J_r − H_r is ≥ −margin (default `MARGIN` = 0.05);
    * "not certified" — (a) holds, (b) does not, and the reference had the power to show a human-level judge.

    H_r is the agreement of rater r with the consensus of the other raters (their mean rating, or their
    most common label), J_r the judge's agreement with the same consensus on the same items
    (`stats.rater_comparison`); with two raters the consensus of the other is that rater, so the judge must
    agree with each rater about as well as the two agree with each other. The worst seat decides. Why not
    "the judge in each rater's place, averaged" (the rule before issue 41): with two raters that average
    compares a copy of rater 1 with rater 1 half the time, a bonus of (1 − A)/2 for imitating one human; in
    the seat-by-seat rule the copy sits in rater 1's seat against rater 2, where its noise shows. All figures
    come from the same bootstrap draws of the reference's cluster unit (`clusters`, default items), so every
    D_r's interval is paired. An undefined replicate (a label absent from the resample) counts against the
    judge for D_r and as no agreement (0) for the humans' κ: two positives on 120 items never give certainty.

    Why the lower bound of the paired difference: the burden of proof is on the judge; it is certified only
    when the data show it is not worse than a human rater by more than the margin. Why a margin: "at least as
    well" is a non-inferiority claim; without one a judge exactly as good as a rater would almost never pass.
    0.05 on the ICC/κ/α scale is a tenth of the ratings floor. The margin and the reference's power
    (`judges.reference_power`: the probability that a judge as good as one more rater is certified, simulated
    from the reference's own size and agreement) are recorded in the figures; for labels, every comparison
    also records the specific (positive and negative) agreement beside κ.

    A judge value that cannot be read is never dropped: for ratings it is placed at the scale end farthest
    from the humans' mean on that item (`scale`, default the humans' observed range); for labels it is a
    label of its own, agreeing with no human.

`certify_reference(humans, judged, *, label_type, seed, ...)`: the rule on every criterion (attribute) of a
reference set, as a judge certificate records it (`judges.certificates.make_certificate`).

`overall_status(verdicts)`: one status for a judge certified on several criteria: "not certified" if any
criterion is, else "reference cannot certify" if any criterion cannot be certified, else "certified".
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trustmh.core import TrustmhError
from trustmh.judges.reference_power import Z_95, reference_power
from trustmh.stats.agreement import fleiss_kappa, krippendorff_alpha, ratings_to_table
from trustmh.stats.bootstrap import (
    DEFAULT_N_BOOT,
    cluster_codes,
    cluster_draw_counts,
    cluster_indices,
    percentile_ci,
)
from trustmh.stats.icc import icc_a1
from trustmh.stats.rater_comparison import consensus, pair_agreement, pair_rows, specific_agreement

CERTIFIED = "certified"
NOT_CERTIFIED = "not certified"
CANNOT_CERTIFY = "reference cannot certify"
STATUSES = (CERTIFIED, NOT_CERTIFIED, CANNOT_CERTIFY)
KINDS = ("ratings", "labels")
# The humans must clear these at the LOWER bound of their 95% interval (docs/references.md#the-floor):
# ICC(A,1) or interval α ≥ 0.50 is the lower edge of Koo & Li's (2016) "moderate" band; κ or nominal α ≥ 0.40
# is the lower edge of Landis & Koch's (1977) "moderate" band.
FLOORS = {"ratings": 0.50, "labels": 0.40}
# The tolerated shortfall of the judge-in-place agreement, at the lower bound of the paired difference.
MARGIN = 0.05
# Two agreements on [−1, 1] differ by at least −2: an undefined replicate of a difference counts as that.
WORST_DIFFERENCE = -2.0
TOO_SMALL = "reference too small to certify a human-level judge"
LEVEL = 0.95
INVALID_LABEL = "(unreadable)"

Ratings = Mapping[Hashable, Mapping[Hashable, Any]]


@dataclass(frozen=True)
class CriterionVerdict:
    """One criterion's certification: `status` (one of STATUSES), the figures behind it and why, in words."""

    status: str
    figures: dict[str, Any] = field(default_factory=dict)
    reason: str = ""

    @property
    def certified(self) -> bool:
        return self.status == CERTIFIED

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "reason": self.reason, **self.figures}


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _statistic(kind: str, complete: bool) -> str:
    if kind == "ratings":
        return "icc_a1" if complete else "krippendorff_alpha_interval"
    return "fleiss_kappa" if complete else "krippendorff_alpha_nominal"


def _agreement(m: np.ndarray, statistic: str, n_codes: int) -> float:
    """The statistic on one (items × raters) matrix, NaN = not rated; NaN when undefined."""
    with np.errstate(all="ignore"):
        try:
            if statistic == "icc_a1":
                return float(icc_a1(m))
            if statistic == "fleiss_kappa":
                return fleiss_kappa(ratings_to_table(m, categories=list(range(n_codes))))
            level = "interval" if statistic.endswith("interval") else "nominal"
            domain = list(range(n_codes)) if level == "nominal" else None
            return krippendorff_alpha(m.T, level=level, value_domain=domain)
        except (ValueError, TrustmhError):  # a degenerate resample is undefined (NaN), not fatal
            return float("nan")


@dataclass
class _Table:
    items: list[Hashable]
    raters: list[Hashable]
    m: np.ndarray  # (n items, k raters), float, NaN = not rated; labels as integer codes
    codes: dict[Any, int]  # labels -> code ({} for ratings)
    n_unpairable: int


def _table(ratings: Ratings, kind: str, extra_labels: Iterable[Any] = ()) -> _Table:
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: use one of {', '.join(KINDS)}")
    raters = sorted({r for row in ratings.values() for r in row}, key=str)
    codes: dict[Any, int] = {}
    if kind == "labels":
        labels = {v for row in ratings.values() for v in row.values() if not _missing(v)} | set(extra_labels)
        codes = {lab: i for i, lab in enumerate(sorted(labels, key=str))}
    items, rows, unpairable = [], [], 0
    for item, row in ratings.items():
        values = []
        for r in raters:
            v = row.get(r)
            if _missing(v):
                values.append(np.nan)
            elif kind == "labels":
                values.append(float(codes[v]))
            else:
                x = float(v)
                if not math.isfinite(x):
                    raise ValueError(f"item {item!r} rater {r!r}: rating {v!r} is not a finite number")
                values.append(x)
        if sum(1 for x in values if not math.isnan(x)) < 2:
            unpairable += 1
            continue
        items.append(item)
        rows.append(values)
    m = np.array(rows, dtype=float).reshape(len(rows), len(raters))
    return _Table(items, raters, m, codes, unpairable)


def _draws(items: Sequence[Hashable], clusters: Mapping[Hashable, Hashable] | None, n_boot: int,
           seed: int) -> list[np.ndarray]:
    """Row indices of each bootstrap replicate: clusters (default: items) drawn with replacement."""
    labels = [item if clusters is None else clusters.get(item, item) for item in items]
    codes, n_clusters = cluster_codes(labels)
    rows_of = [np.flatnonzero(codes == c) for c in range(n_clusters)]
    draws = cluster_indices(n_clusters, n_boot, seed)
    return [np.concatenate([rows_of[c] for c in d]) for d in draws]


def _replicates(t: _Table, stat: str, clusters: Mapping[Hashable, Hashable] | None, n_boot: int,
                seed: int) -> np.ndarray:
    """The humans' statistic on every bootstrap replicate; ICC(A,1) on equal-sized replicates in one batch. For
    labels, a resample where a label is absent shows no agreement on it (0), not a perfect one (undefined κ
    dropped would leave only the resamples that agree: two shared positives in 120 items gave [1.00, 1.00])."""
    draws = _draws(t.items, clusters, n_boot, seed)
    if stat == "icc_a1" and len({len(rows) for rows in draws}) == 1:
        with np.errstate(all="ignore"):
            return np.asarray(icc_a1(t.m[np.stack(draws)]), dtype=float)
    reps = np.array([_agreement(t.m[rows], stat, len(t.codes)) for rows in draws])
    return np.where(np.isfinite(reps), reps, 0.0) if t.codes else reps


def _interval(point: float, reps: np.ndarray) -> dict[str, Any]:
    """Point and percentile interval; no interval around an undefined point (a κ on one label)."""
    lo, hi = percentile_ci(reps, LEVEL)
    ok = math.isfinite(lo) and math.isfinite(hi) and math.isfinite(point)
    return {"value": point if math.isfinite(point) else None, "ci": [lo, hi] if ok else None}


def _method(n_boot: int, seed: int, clusters: Mapping[Hashable, Hashable] | None) -> str:
    unit = "clusters" if clusters is not None else "items"
    return f"seeded percentile bootstrap ({n_boot} draws of {unit}, seed {seed}), 95%"


def human_agreement(ratings_by_item_by_rater: Ratings, kind: str = "ratings", *, seed: int,
                    n_boot: int = DEFAULT_N_BOOT, clusters: Mapping[Hashable, Hashable] | None = None
                    ) -> dict[str, Any]:
    """The humans' own agreement on one criterion (see the module docstring): {"statistic", "value", "ci",
    "n_items", "n_raters", "n_ratings", "n_items_unpairable", "complete", "method"}; value/ci None when
    undefined."""
    t = _table(ratings_by_item_by_rater, kind)
    complete = bool(t.m.size) and not np.isnan(t.m).any()
    stat = _statistic(kind, complete)
    n_codes = len(t.codes)
    out: dict[str, Any] = {"statistic": stat, "n_items": len(t.items), "n_raters": len(t.raters),
                           "n_ratings": int(np.isfinite(t.m).sum()), "n_items_unpairable": t.n_unpairable,
                           "complete": complete, "method": _method(n_boot, seed, clusters)}
    if len(t.items) < 2 or len(t.raters) < 2:
        return {**out, "value": None, "ci": None}
    point = _agreement(t.m, stat, n_codes)
    reps = _replicates(t, stat, clusters, n_boot, seed)
    return {**out, **_interval(point, reps)}


def _judge_column(t: _Table, judge: Mapping[Hashable, Any], kind: str,
                  scale: tuple[float, float] | None) -> tuple[np.ndarray, int]:
    """The judge's values on the table's items, unreadable ones placed at their worst; and how many."""
    values, invalid = [], 0
    lo, hi = scale if scale is not None else (float(np.nanmin(t.m)), float(np.nanmax(t.m)))
    for i, item in enumerate(t.items):
        v = judge.get(item)
        if kind == "labels":  # every judge label has a code (`certify_criterion` adds them to the table)
            invalid += int(_missing(v))
            values.append(float(t.codes[INVALID_LABEL if _missing(v) else v]))
            continue
        x = None if _missing(v) else float(v)
        if x is None or not math.isfinite(x):
            invalid += 1
            mean = float(np.nanmean(t.m[i]))
            x = lo if abs(mean - lo) >= abs(mean - hi) else hi
        values.append(x)
    return np.array(values, dtype=float), invalid


def _replicate_totals(rows: np.ndarray, codes: np.ndarray, n_clusters: int, w: np.ndarray) -> tuple[np.ndarray,
                                                                                                    np.ndarray]:
    """(point totals, replicate totals) of per-row sufficient statistics, clusters drawn by `w`."""
    per_cluster = np.zeros((n_clusters, rows.shape[-1]))
    np.add.at(per_cluster, codes, rows)
    return per_cluster.sum(0), w @ per_cluster


def _comparisons(t: _Table, judge: np.ndarray, kind: str, codes: np.ndarray, n_clusters: int,
                 w: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
    """Each rater left out against the others' consensus, the judge in the same seat (stats.rater_comparison):
    per rater the humans' and the judge's figures and D_r with intervals; and the (B, k) replicate D_r
    (an undefined replicate counts as WORST_DIFFERENCE: it cannot show the judge as good)."""
    n_codes = len(t.codes)
    out: dict[str, Any] = {}
    reps = np.empty((w.shape[0], len(t.raters)))
    labels = sorted(t.codes, key=t.codes.__getitem__)
    for r, rater in enumerate(t.raters):
        c = consensus(t.m, r, kind, n_codes)
        h_point, h_reps = _replicate_totals(pair_rows(t.m[:, r], c, kind, n_codes), codes, n_clusters, w)
        rated = np.where(np.isfinite(t.m[:, r]), judge, np.nan)
        j_point, j_reps = _replicate_totals(pair_rows(rated, c, kind, n_codes), codes, n_clusters, w)
        h0, j0 = (float(pair_agreement(x, kind, n_codes)) for x in (h_point, j_point))
        h, j = pair_agreement(h_reps, kind, n_codes), pair_agreement(j_reps, kind, n_codes)
        d = j - h
        reps[:, r] = np.where(np.isfinite(d), d, WORST_DIFFERENCE)
        entry = {"n_items": int(h_point.sum()) if kind == "labels" else int(h_point[0]),
                 "humans": _interval(h0, h), "judge": _interval(j0, j), "difference": _interval(j0 - h0, d)}
        entry["difference"]["ci"] = _bounds(j0 - h0, reps[:, r])
        if kind == "labels":
            entry["specific_agreement"] = {
                who: {str(lab): (None if not math.isfinite(x) else float(x))
                      for lab, x in zip(labels, specific_agreement(tot, n_codes), strict=True)
                      if lab != INVALID_LABEL}
                for who, tot in (("humans", h_point), ("judge", j_point))}
        out[str(rater)] = entry
    return out, reps


def _no_narrower_than_a_human(each: dict[str, Any], human_sd: float | None) -> None:
    """Widen each seat's difference interval to at least point ± z·SD of a human-level judge's difference on
    this reference (simulated, `reference_power`). A judge that copies a rater has a much tighter paired
    interval in that rater's seat (it shares the rater's noise); without this its small shortfall would pass
    the margin more often than an independent judge as good as a human. The bootstrap interval is kept."""
    if not human_sd:
        return
    for entry in each.values():
        d = entry["difference"]
        if d["value"] is None or d["ci"] is None:
            continue
        d["bootstrap_ci"] = list(d["ci"])
        d["ci"] = [min(d["ci"][0], d["value"] - Z_95 * human_sd), max(d["ci"][1], d["value"] + Z_95 * human_sd)]


def _bounds(point: float, reps: np.ndarray) -> list[float] | None:
    """Percentile bounds of replicates where an undefined one already counts as the worst; None when the
    point is undefined."""
    if not math.isfinite(point) or reps.size < 10:
        return None
    lo, hi = np.percentile(reps, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return [float(lo), float(hi)]


def _fmt(fig: Mapping[str, Any]) -> str:
    if fig["value"] is None:
        return "undefined"
    ci = fig["ci"]
    return f"{fig['value']:.2f}" + (f" (95% CI {ci[0]:.2f} to {ci[1]:.2f})" if ci else " (no interval)")


def certify_criterion(human_ratings: Ratings, judge_ratings: Mapping[Hashable, Any], kind: str = "ratings", *,
                      seed: int, n_boot: int = DEFAULT_N_BOOT, floor: float | None = None, margin: float = MARGIN,
                      clusters: Mapping[Hashable, Hashable] | None = None,
                      scale: tuple[float, float] | None = None) -> CriterionVerdict:
    """Certify a judge on one criterion against several human raters (the rule of the module docstring).

    The humans' agreement, the floor and the power are measured on every item of `human_ratings` (the whole
    reference); the judge's seats on the items `judge_ratings` names (a `--limit` sample: then a trial,
    `n_items_judged` < `n_items`). A named item whose value is None or missing is unreadable."""
    floor = FLOORS[kind] if floor is None else float(floor)
    least = -float(margin) if margin else 0.0  # the lowest admissible bound of the difference (never "-0")
    extra = [INVALID_LABEL] + [v for v in judge_ratings.values() if not _missing(v)] if kind == "labels" else []
    t = _table(human_ratings, kind, extra_labels=extra)
    complete = bool(t.m.size) and not np.isnan(t.m).any()
    stat = _statistic(kind, complete)
    n_codes = len(t.codes)
    figures: dict[str, Any] = {
        "kind": kind, "statistic": stat, "floor": floor, "margin": margin, "n_items": len(t.items),
        "n_raters": len(t.raters), "raters": [str(r) for r in t.raters], "n_items_unpairable": t.n_unpairable,
        "method": _method(n_boot, seed, clusters),
        "rule": (f"certified when the humans' {stat} clears {floor:g} at its lower 95% bound and, for every rater "
                 f"left out, the lower 95% bound of (judge vs the other raters' consensus − that rater vs it) is "
                 f"≥ {least:g}"),
    }
    used = {lab for lab, code in t.codes.items() if np.any(t.m == code)} if kind == "labels" else set()
    why = (f"fewer than two raters ({len(t.raters)})" if len(t.raters) < 2
           else f"fewer than two items rated by two or more raters ({len(t.items)})" if len(t.items) < 2
           else f"the humans used one label only ({next(iter(used))!s}): agreement on a single class says "
                "nothing about telling classes apart" if kind == "labels" and len(used) < 2 else "")
    if why:
        figures.update(humans={"value": None, "ci": None}, n_judge_invalid=0)
        return CriterionVerdict(CANNOT_CERTIFY, figures, f"the reference cannot certify this criterion: {why}"
                                + (", so the humans' agreement is undefined" if "fewer" in why else ""))
    rows = [i for i, item in enumerate(t.items) if item in judge_ratings]
    judged_t = _Table([t.items[i] for i in rows], t.raters, t.m[rows], t.codes, 0)
    figures["n_items_judged"] = len(rows)
    if len(rows) < 2:
        figures.update(humans={"value": None, "ci": None}, n_judge_invalid=0)
        return CriterionVerdict(CANNOT_CERTIFY, figures, f"the judge was asked about {len(rows)} of the "
                                f"{len(t.items)} items: at least two are needed to compare it with the raters")
    judge, n_invalid = _judge_column(judged_t, judge_ratings, kind, scale)
    labels_of = [item if clusters is None else clusters.get(item, item) for item in judged_t.items]
    codes, n_clusters = cluster_codes(labels_of)
    w = cluster_draw_counts(n_clusters, n_boot, seed)
    h0 = _agreement(t.m, stat, n_codes)
    h_reps = _replicates(t, stat, clusters, n_boot, seed)
    humans = _interval(h0, h_reps)
    shares = tuple(float(np.sum(t.m == code)) for lab, code in t.codes.items() if lab in used)
    power = reference_power(kind, len(t.items), len(t.raters), humans["value"], floor=floor, margin=float(margin),
                            seed=seed, shares=shares or (0.5, 0.5))
    each, _ = _comparisons(judged_t, judge, kind, codes, n_clusters, w)
    _no_narrower_than_a_human(each, power.get("difference_sd"))
    worst = min(each, key=lambda r: (each[r]["difference"]["ci"] or [-math.inf])[0])
    figures.update(humans=humans, comparisons=each, worst_comparison=worst, n_judge_invalid=n_invalid,
                   n_clusters=n_clusters, difference=each[worst]["difference"], power=power)
    n_note = (f"n = {len(rows)} items in {n_clusters} clusters, {len(t.raters)} raters"
              + (f"; a trial on {len(rows)} of the reference's {len(t.items)} items" if len(rows) < len(t.items)
                 else ""))
    if humans["ci"] is None or humans["ci"][0] < floor:
        return CriterionVerdict(CANNOT_CERTIFY, figures,
                                f"the reference cannot certify this criterion: the humans' own agreement "
                                f"({stat} {_fmt(humans)}, {n_note}) does not clear the floor {floor:g} at its "
                                "lower bound")
    low = each[worst]["difference"]["ci"]
    ok = low is not None and low[0] >= least
    detail = (f"in {worst}'s seat the judge scores {_fmt(each[worst]['judge'])} against the other raters' "
              f"consensus where {worst} scores {_fmt(each[worst]['humans'])}; difference "
              f"{_fmt(each[worst]['difference'])}, lower bound {'≥' if ok else '<'} {least:g} ({n_note}"
              + (f", {n_invalid} unreadable judge value(s) counted at their worst" if n_invalid else "") + ")")
    if ok:
        return CriterionVerdict(CERTIFIED, figures, "the judge agrees with every rater's peers at least as well as "
                                f"that rater does; the worst seat: {detail}")
    shown_worse = [r for r, e in each.items() if e["difference"]["ci"] and e["difference"]["ci"][1] < least]
    p = power
    if not shown_worse and p.get("power") is not None and p["power"] < p["target"]:
        need = p["items_for_target"]
        more = (f"about {need} items rated by {len(t.raters)} raters ({need * len(t.raters)} labels) would give "
                f"power {p['target']:g}" if need else "no size would: the humans agree too little")
        return CriterionVerdict(CANNOT_CERTIFY, figures,
                                f"{TOO_SMALL}: a judge as good as one more rater would be certified with "
                                f"probability {p['power']:.2f} only; {more}. The worst seat: {detail}")
    verb = (f"agrees less well with the raters' peers than the raters do (shown in {', '.join(shown_worse)}'s "
            "seat)" if shown_worse else "is not shown to agree with the raters' peers as well as the raters do")
    return CriterionVerdict(NOT_CERTIFIED, figures, f"the judge {verb}; the worst seat: {detail}")


def overall_status(verdicts: Iterable[CriterionVerdict | Mapping[str, Any] | str]) -> str:
    """"not certified" if any criterion is, else "reference cannot certify" if any is, else "certified"
    (no criterion at all: "reference cannot certify")."""
    statuses = []
    for v in verdicts:
        statuses.append(v if isinstance(v, str) else v.status if isinstance(v, CriterionVerdict) else v["status"])
    if NOT_CERTIFIED in statuses:
        return NOT_CERTIFIED
    if not statuses or CANNOT_CERTIFY in statuses:
        return CANNOT_CERTIFY
    return CERTIFIED


# A certificate's label type -> the rule's kind.
KIND_OF = {"ordinal": "ratings", "binary": "labels", "categorical": "labels", "siri2": "ratings"}


def certify_reference(humans: Mapping[Hashable, Mapping[Hashable, Any]], judged: Mapping[Hashable, Any], *,
                      label_type: str, seed: int, n_boot: int = DEFAULT_N_BOOT, attributes: Sequence[str] = (),
                      criterion: str = "score", clusters: Mapping[Hashable, Hashable] | None = None,
                      scale: tuple[float, float] | None = None, floor: float | None = None,
                      margin: float = MARGIN, kind: str | None = None) -> dict[str, Any]:
    """The rule on every criterion of a reference set, for a judge certificate:
    {"status", "floor", "margin", "criteria": {name: CriterionVerdict.to_dict()}}; a reference with one
    criterion also carries that criterion's verdict at the top ("reason", "humans", "difference", ...).
    `kind` overrides the one the label type implies (KIND_OF).

    `humans`: item -> rater -> label, or with `attributes` item -> rater -> {attribute: label}, on the whole
    reference (the humans' agreement is always measured on all of it); `judged`: item -> the judge's label (or
    {attribute: label}); items the judge was not asked about (a `--limit` sample) are left out of the judge's
    seats, and the result says `trial` (never a certificate to store). A single-label reference names its one
    criterion `criterion`."""
    kind = kind or KIND_OF[label_type]
    names = list(attributes) or [criterion]
    criteria: dict[str, Any] = {}
    for name in names:
        def pick(value: Any, name: str = name) -> Any:
            return (value or {}).get(name) if attributes else value

        h = {i: {r: pick(v) for r, v in row.items()} for i, row in humans.items()}  # the whole reference
        j = {i: pick(judged[i]) for i in humans if i in judged}
        criteria[name] = certify_criterion(h, j, kind, seed=seed, n_boot=n_boot, floor=floor, margin=margin,
                                           clusters=clusters, scale=scale).to_dict()
    single = criteria[names[0]] if len(names) == 1 else {}
    n_judged = sum(1 for i in humans if i in judged)
    return {**single, "status": overall_status(criteria.values()), "floor": FLOORS[kind] if floor is None else floor,
            "margin": margin, "criteria": criteria, "trial": n_judged < len(humans),
            "n_reference_items": len(humans), "n_judged_items": n_judged}
