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
      floor (default `FLOORS[kind]`), or it cannot be computed. The judge's figures are still computed and
      shown; this is never a pass and the criterion is never dropped;
    * "certified" — (a) holds and (b) the judge agrees with the humans at least as well as they agree with
      each other: the lower bound of the paired difference D = A_judge − A_humans is ≥ −margin (default
      `MARGIN` = 0.05);
    * "not certified" — (a) holds and (b) does not.

    A_humans is the agreement statistic above over all raters; A_judge is the same statistic with the judge
    in place of one rater (on exactly the items that rater rated), averaged over which rater is replaced
    (leave-one-rater-out replacement). Both come from the same bootstrap draws, so D's interval is paired.

    Why the lower bound of the paired difference (rather than the judge's lower bound against the humans'
    point): the two agreements share their items, so their difference has a much tighter interval than
    either alone; comparing one interval's bound with the other's point would ignore the humans' own
    sampling error and the pairing. The lower bound puts the burden of proof on the judge: it is certified
    only when the data show it is not worse than a human rater by more than the margin, not merely when they
    fail to show it worse. Why a margin: "at least as well" is a non-inferiority claim; with no margin a
    judge exactly as good as an average rater would fail about 39 times in 40 (a rounded copy of one
    clinician fails), so the rule would demand a judge better than the humans. 0.05 on the ICC/κ/α scale is
    a tenth of the ratings floor: a judge shown to agree at most that much less well than the raters agree
    with each other counts as agreeing as well. The margin used is recorded in the figures.

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
from trustmh.stats.agreement import fleiss_kappa, krippendorff_alpha, ratings_to_table
from trustmh.stats.bootstrap import DEFAULT_N_BOOT, cluster_codes, cluster_indices, percentile_ci
from trustmh.stats.icc import icc_a1

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


def _interval(point: float, reps: np.ndarray) -> dict[str, Any]:
    lo, hi = percentile_ci(reps, LEVEL)
    ok = math.isfinite(lo) and math.isfinite(hi)
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
    reps = np.array([_agreement(t.m[rows], stat, n_codes) for rows in _draws(t.items, clusters, n_boot, seed)])
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


def certify_criterion(human_ratings: Ratings, judge_ratings: Mapping[Hashable, Any], kind: str = "ratings", *,
                      seed: int, n_boot: int = DEFAULT_N_BOOT, floor: float | None = None, margin: float = MARGIN,
                      clusters: Mapping[Hashable, Hashable] | None = None,
                      scale: tuple[float, float] | None = None) -> CriterionVerdict:
    """Certify a judge on one criterion against several human raters (the rule of the module docstring)."""
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
        "rule": (f"certified when the humans' {stat} clears {floor:g} at its lower 95% bound and the lower 95% "
                 f"bound of (judge in place of one rater − humans) is ≥ {least:g}"),
    }
    if len(t.items) < 2 or len(t.raters) < 2:
        figures.update(humans={"value": None, "ci": None}, n_judge_invalid=0)
        why = (f"fewer than two raters ({len(t.raters)})" if len(t.raters) < 2
               else f"fewer than two items rated by two or more raters ({len(t.items)})")
        return CriterionVerdict(CANNOT_CERTIFY, figures,
                                f"the reference cannot certify this criterion: {why}, so the humans' agreement "
                                "is undefined")
    judge, n_invalid = _judge_column(t, judge_ratings, kind, scale)
    replaced = []
    for r in range(len(t.raters)):
        m = t.m.copy()
        m[:, r] = np.where(np.isfinite(t.m[:, r]), judge, np.nan)  # the judge rates what rater r rated
        replaced.append(m)

    def figures_of(rows: np.ndarray | None) -> tuple[float, float, list[float]]:
        sel = (lambda a: a) if rows is None else (lambda a: a[rows])
        human = _agreement(sel(t.m), stat, n_codes)
        each = [_agreement(sel(m), stat, n_codes) for m in replaced]
        return human, float(np.mean(each)) if all(math.isfinite(x) for x in each) else float("nan"), each

    h0, j0, each0 = figures_of(None)
    reps = np.array([figures_of(rows)[:2] for rows in _draws(t.items, clusters, n_boot, seed)]).reshape(-1, 2)
    humans = _interval(h0, reps[:, 0])
    judge_fig = _interval(j0, reps[:, 1])
    diff = _interval(j0 - h0, reps[:, 1] - reps[:, 0])
    figures.update(humans=humans, judge_in_place=judge_fig, difference=diff, n_judge_invalid=n_invalid,
                   judge_in_place_of={str(r): (x if math.isfinite(x) else None) for r, x in zip(t.raters, each0,
                                                                                               strict=True)})

    def fmt(fig: Mapping[str, Any]) -> str:
        if fig["value"] is None:
            return "undefined"
        ci = fig["ci"]
        return f"{fig['value']:.2f}" + (f" (95% CI {ci[0]:.2f} to {ci[1]:.2f})" if ci else " (no interval)")

    n_note = f"n = {len(t.items)} items, {len(t.raters)} raters"
    if humans["ci"] is None or humans["ci"][0] < floor:
        return CriterionVerdict(CANNOT_CERTIFY, figures,
                                f"the reference cannot certify this criterion: the humans' own agreement "
                                f"({stat} {fmt(humans)}, {n_note}) does not clear the floor {floor:g} at its "
                                f"lower bound; the judge in place of one rater: {fmt(judge_fig)}")
    ok = diff["ci"] is not None and diff["ci"][0] >= least
    status = CERTIFIED if ok else NOT_CERTIFIED
    verb = "agrees with the humans at least as well as" if ok else "is not shown to agree with the humans as well as"
    return CriterionVerdict(status, figures,
                            f"the judge {verb} they agree with each other: {stat} with the judge in place of one "
                            f"rater {fmt(judge_fig)} vs the humans' {fmt(humans)}; difference {fmt(diff)}, "
                            f"lower bound {'≥' if ok else '<'} {least:g} ({n_note}"
                            + (f", {n_invalid} unreadable judge value(s) counted at their worst" if n_invalid else "")
                            + ")")


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

    `humans`: item -> rater -> label, or with `attributes` item -> rater -> {attribute: label}; `judged`: item ->
    the judge's label (or {attribute: label}); items the judge was not asked about are left out. A single-label
    reference names its one criterion `criterion`."""
    kind = kind or KIND_OF[label_type]
    names = list(attributes) or [criterion]
    items = [i for i in humans if i in judged]
    criteria: dict[str, Any] = {}
    for name in names:
        def pick(value: Any, name: str = name) -> Any:
            return (value or {}).get(name) if attributes else value

        h = {i: {r: pick(v) for r, v in humans[i].items()} for i in items}
        j = {i: pick(judged[i]) for i in items}
        criteria[name] = certify_criterion(h, j, kind, seed=seed, n_boot=n_boot, floor=floor, margin=margin,
                                           clusters=clusters, scale=scale).to_dict()
    single = criteria[names[0]] if len(names) == 1 else {}
    return {**single, "status": overall_status(criteria.values()), "floor": FLOORS[kind] if floor is None else floor,
            "margin": margin, "criteria": criteria}
