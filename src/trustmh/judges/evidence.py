"""What lets a judged figure count as evidence (docs/statistics.md#the-runs-own-labels): one rule, read by
`trustmh plan` (labels needed), `review import` (what it records), `trustmh gate` (what decides) and the report.

A judged check is decided on one of two grounds:

* a certificate of the run's judge (`gate.evaluate.judge_evidence`: a reference measured elsewhere, the judge
  thresholds of the policy), the way to skip labelling; or
* the run's own labels: the judge-corrected figure (PPI, `stats.ppi.corrected_mean`, 1/π weights from the
  inclusion probabilities `review export` recorded) from a random sample of this run's items labelled by two
  people; for a check on a counted rate (false alarms over the controls), a sample of that rate's own items,
  labelled on its per-item flag (`rate_view`). Its interval is valid whatever the judge's quality (a poor judge only widens it), so the judge needs
  no certificate; what must hold is the labels' own quality:
  - every labelled item carries both labels of its assigned pair (one rater: the pair's agreement cannot be
    measured, so the labels decide nothing);
  - the pair's agreement, on every labelled item, clears the reference-quality floor at its lower 95% bound
    (`judges.reference_quality.FLOORS`: κ 0.40 for labels, ICC 0.50 for ratings);
  - at least the check's min_n labels (the same count a check asks of its items: a CLT interval on fewer
    rests on too little);
  - disagreements are settled by a third rater where one labelled the item (`trustmh review adjudicate`);
    where none did, the pair's consensus is counted as stated by `judges.agreement.consensus`: a split binary
    pair counts as harmful (the cautious reading), an ordinal pair as the mean of the two.

Labels needed, before anyone labels (`labels_needed`): the fewest labels for which (a) the corrected interval
of the first labelling round (read at its share of 95%, `stats.sequential.round_alpha`, so that later rounds
keep the 95% valid) is no wider than the width asked, from PPI's variance (λ = 1, the rule below 200 labels)
when the n labels are drawn from the N judged items themselves
    se² = Var(Y)/N_eff + Var(Y − Ŷ)·(1/n − 1/N)
(the judged items' own mean plus the labelled sample's error about it, with the finite-population factor: all N
labelled leaves the people's own figure; the gate's cluster-robust variance, `stats.ppi.clustered_corrected_mean`,
has the same expectation), with Var(Y) = Var(Ŷ) at equal margins and Var(Y − Ŷ) at an assumed judge–human agreement a (binary, equal margins at rate p: 2p(1−p)(1−a);
ratings, equal variances σ²: 2σ²(1−a)), and (b) a pair agreeing at a clears the floor at its lower bound
(large-sample variance of the two-rater agreement: Bloch & Kraemer 1989 for κ, Fisher's for a two-rater
ICC), and (c) min_n. The plan states the assumption beside the count. For a rate whose items share units (a
conversation set's design cells), (a) is read on the interval the gate reads there
(`stats.ppi.clustered_corrected_mean`): Clopper–Pearson on the clustered effective n, the rectifier's term
raised by the weights of labels spread evenly over the units: Var(Y − Ŷ)/N²·Σ_c m_c²(1/a_c − 1/m_c), i.e.
(`even_allocation_effect` − n/N)/n, a_c of the m_c items of unit c labelled (docs/statistics.md#pilot-correlation).

References
    A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic. Prediction-powered inference.
        Science 382(6671):669–674, 2023.
    A. N. Angelopoulos, J. C. Duchi, T. Zrnic. PPI++: Efficient prediction-powered inference. arXiv:2311.01453.
    D. A. Bloch, H. C. Kraemer. 2 × 2 kappa coefficients: measures of agreement or association. Biometrics
        45(1):269–287, 1989.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trustmh.judges.reference_quality import FLOORS
from trustmh.stats.clustered import _t_quantile, clopper_pearson_bounds
from trustmh.stats.power import expected_excess_df, weighted_cluster_size
from trustmh.stats.sequential import round_alpha, round_z

# The judge–human (and human–human) agreement `trustmh plan` assumes when no one has labelled yet
# (`--assume-agreement`): a good judge and a good pair of raters.
ASSUMED_AGREEMENT = 0.8
Z_95 = 1.959963984540054
CERTIFICATE = "certificate"
RUN_LABELS = "two-rater labels of this run"
STATISTIC_WORDS = {"fleiss_kappa": "κ", "krippendorff_alpha_nominal": "α", "icc_a1": "ICC",
                   "krippendorff_alpha_interval": "α"}
HOW_TO_LABEL = "trustmh review export RUN_DIR --for-gate POLICY, two raters, then trustmh review import"


def pair_record(quality: Mapping[str, Any], pairs: Mapping[str, Mapping[str, Any]],
                labels: Mapping[str, Mapping[str, Any]], missing: int) -> dict[str, Any]:
    """What `review import` records of the people behind a corrected figure (results.json
    `judge_corrected.pair`): the pair's agreement as the reference-quality rule measured it, how many items
    carry both labels, how many the pair split and how many of those a third rater settled.
    `pairs`: item -> seat -> label of the assigned pair (or the first two raters); `labels`: item -> rater ->
    label, every rater."""
    criterion = (quality.get("criteria") or {}).get("score") or quality
    humans = criterion.get("humans") or {}
    both = [k for k, seats in pairs.items() if sum(v is not None for v in seats.values()) >= 2]
    split = [k for k in both if len({repr(v) for v in pairs[k].values() if v is not None}) > 1]
    return {"raters_per_item": max((sum(v is not None for v in r.values()) for r in labels.values()), default=0),
            "n_both": len(both), "n_missing_pair": int(missing), "statistic": criterion.get("statistic"),
            "agreement": humans.get("value"), "ci": humans.get("ci"),
            "floor": criterion.get("floor", quality.get("floor")), "n_split": len(split),
            "n_settled_by_third_rater": sum(1 for k in split if len(labels.get(k, {})) >= 3),
            "disagreements": "settled by a third rater where one labelled; else the pair's consensus as stated "
                             "(binary split: harmful; ordinal: the mean)"}


@dataclass(frozen=True)
class LabelEvidence:
    """Whether the run's own labels decide a judged check: `usable`, and the one line that says so or why not."""

    usable: bool
    line: str
    n: int = 0


def label_evidence(sub: Mapping[str, Any], min_n: int) -> LabelEvidence:
    """The rule (module docstring) on a sub-task result's `judge_corrected` (written by `review import`)."""
    corrected = sub.get("judge_corrected")
    if not isinstance(corrected, Mapping):
        return LabelEvidence(False, f"no two-rater labels of this run ({HOW_TO_LABEL})")
    if corrected.get("status") != "ok":
        return LabelEvidence(False, f"the run's labels give no corrected figure: {corrected.get('reason')}")
    n = int(corrected.get("n_labelled") or 0)
    pair = corrected.get("pair")
    if not isinstance(pair, Mapping):
        return LabelEvidence(False, "the run's labels record no pair agreement (re-import them with this "
                                    "trustmh)", n)
    if int(pair.get("raters_per_item") or 0) < 2:
        return LabelEvidence(False, f"{n} labels by one rater per item: the raters' agreement cannot be measured, "
                                    f"so they decide nothing ({HOW_TO_LABEL})", n)
    if int(pair.get("n_missing_pair") or 0):
        return LabelEvidence(False, f"{pair['n_missing_pair']} of {n} labelled item(s) lack one of their two "
                                    "assigned raters: the pair's agreement is not measured on every item", n)
    word = STATISTIC_WORDS.get(str(pair.get("statistic")), str(pair.get("statistic")))
    ci, floor = pair.get("ci"), pair.get("floor")
    if not isinstance(ci, list | tuple) or ci[0] is None or floor is None:
        return LabelEvidence(False, f"the two raters' agreement is undefined on these {n} labels (e.g. one label "
                                    "used throughout): it cannot be held to the floor", n)
    agreement = f"agreement {word} {float(pair['agreement']):.2f} (lower bound {float(ci[0]):.2f})"
    if float(ci[0]) < float(floor):
        return LabelEvidence(False, f"the two raters' {agreement} is below the floor {float(floor):g}: their "
                                    "labels decide nothing (docs/references.md#the-floor)", n)
    if corrected.get("ci") is None:
        return LabelEvidence(False, f"the corrected figure has no interval: {corrected.get('reason')}", n)
    if n < min_n:
        return LabelEvidence(False, f"{n} two-rater labels, fewer than min_n {min_n} (label more: trustmh review "
                                    "export --round K)", n)
    return LabelEvidence(True, f"corrected by {n} {RUN_LABELS}, {agreement} ≥ floor {float(floor):g}", n)


def rate_view(sub: Mapping[str, Any], metric: str) -> dict[str, Any]:
    """A sub-task result as a counted rate's check reads the run's labels: its `judge_corrected` is the one
    `review import` wrote for that rate (`judge_corrected_rates`, the controls' false-alarm flags, say)."""
    rates = sub.get("judge_corrected_rates")
    corrected = rates.get(metric) if isinstance(rates, Mapping) else None
    return {**sub, "judge_corrected": corrected} if corrected is not None else {
        k: v for k, v in sub.items() if k != "judge_corrected"}


def next_round_line(sub: Mapping[str, Any]) -> str:
    """What a check decided on the run's labels but not yet decided says to do next."""
    rounds = int((sub.get("judge_corrected") or {}).get("rounds") or 1)
    return (f"not decided after {rounds} labelling round(s): label the next (trustmh review export RUN_DIR "
            f"--for-gate POLICY --round {rounds + 1}, then trustmh review import with every round's labels)")


def corrected_interval(sub: Mapping[str, Any]) -> tuple[float, tuple[float, float], int] | None:
    """(the corrected value, its 95% interval, the labels behind it) where `review import` wrote one."""
    corrected = sub.get("judge_corrected")
    if not isinstance(corrected, Mapping) or corrected.get("status") != "ok":
        return None
    ci, value = corrected.get("ci"), corrected.get("value")
    if not isinstance(ci, list | tuple) or len(ci) != 2 or not all(_finite(v) for v in ci) or not _finite(value):
        return None
    return float(value), (float(ci[0]), float(ci[1])), int(corrected.get("n_labelled") or 0)


def _finite(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


@dataclass(frozen=True)
class LabelsNeeded:
    """`labels_needed`'s answer: the count (None: no count of labels decides it on this set), what set it, and
    the assumptions, for plan.json."""

    n: int | None
    binding: str  # "width", "pair agreement", "min_n" or why there is no count
    agreement: float
    width: float

    def to_json(self) -> dict[str, Any]:
        return {"labels": self.n, "binding": self.binding, "assumed_agreement": self.agreement, "width": self.width}


def even_allocation_effect(sizes: Sequence[int], labels: float) -> float:
    """Kish's design effect of the 1/π weights when `labels` are spread evenly over units of these sizes, as
    `review export` spreads a conversation sub-task's (capped at a unit's size, the rest to the others):
    L·Σ_c m_c²/a_c / N², a_c the labels unit c gets (fractional: their expectation)."""
    total, left, alloc = float(sum(sizes)), float(labels), {}
    for k, (i, m) in enumerate(sorted(enumerate(sizes), key=lambda x: x[1])):
        alloc[i] = min(float(m), left / (len(sizes) - k))
        left -= alloc[i]
    return labels * sum(m * m / alloc[i] for i, m in enumerate(sizes) if alloc[i] > 0) / total**2


def _clustered_width(p: float, variance: float, units: int) -> float:
    """The width of the gate's clustered interval on a rate (`stats.ppi.clustered_corrected_mean`) at round 1's
    level: Clopper–Pearson on the effective n p(1 − p)/v shrunk by (z/t on units − 1)²."""

    level = 1 - round_alpha(1)
    n_eff = p * (1 - p) / variance * (_t_quantile(level, math.inf) / _t_quantile(level, units - 1)) ** 2
    lo, hi = clopper_pearson_bounds(p, n_eff, level)
    return hi - lo


def _clustered_rating_width(share: float, independent: float, variance: float, units: int, df: float) -> float:
    """The width, as a share of the scale, of the gate's clustered interval on a rating
    (`stats.ppi.clustered_corrected_mean` with a `scale`) at round 1's level: Clopper–Pearson on the rating's
    share of its scale, its effective n shrunk by the quantile that blends t on units − 1 for the independent
    variance with t on the excess's degrees of freedom for the rest."""
    level = 1 - round_alpha(1)
    excess = max(0.0, variance - independent)
    q = math.sqrt((independent * _t_quantile(level, units - 1) ** 2 + excess * _t_quantile(level, df) ** 2)
                  / variance)
    lo, hi = clopper_pearson_bounds(share, share * (1 - share) / variance * (_t_quantile(level, math.inf) / q) ** 2,
                                    level)
    return hi - lo


def labels_needed(*, kind: str, spread: float, n_effective: float, n_items: int, width: float, min_n: int,
                  agreement: float = ASSUMED_AGREEMENT, rate: float | None = None,
                  sizes: Sequence[int] | None = None, scale: tuple[float, float] | None = None,
                  mean: float | None = None) -> LabelsNeeded:
    """Two-rater labels that make a judged check decidable at `width` (module docstring). `kind`: "labels"
    (a rate; `rate` the assumed rate p, `spread` p(1−p)) or "ratings" (`spread` the variance σ² of the
    per-item score); `n_effective`: the judged items' effective n (clustered by stimulus); `n_items`: the
    items there are to label. `sizes` (a rate whose items share units): the units' sizes; the count is then
    the fewest labels whose expected interval, as the gate computes it on conversations (clustered,
    Clopper–Pearson, the 1/π weights of labels spread evenly over the units), is no wider than `width`; a
    rating with its `scale` and the `mean` assumed, likewise on the gate's rating interval
    (`_clustered_rating_width`, its excess at `stats.power.expected_excess_df`)."""
    if not 0 < agreement < 1:
        raise ValueError("agreement must lie in (0, 1)")
    units = len(sizes or ())
    rated = kind == "ratings" and units > 1 and scale is not None and mean is not None \
        and scale[0] < mean < scale[1]
    clustered = units > 1 and (kind == "labels" or rated)
    p = rate if rate is not None else 0.5
    if rated:  # put on the share of the scale, as the gate reads it
        span = float(scale[1]) - float(scale[0])
        p, spread, share_width = (float(mean) - float(scale[0])) / span, spread / span**2, width / span
        weighted = weighted_cluster_size(list(sizes or ()))
        icc = (n_items / n_effective - 1) / (weighted - 1) if weighted > 1 else 0.0
        df = expected_excess_df(list(sizes or ()), icc)

        def clustered_width(rectifier: float) -> float:  # as a share of the scale
            return _clustered_rating_width(p, spread / n_items + rectifier, spread / n_effective + rectifier,
                                           units, df)
    else:
        span, share_width = 1.0, width

        def clustered_width(rectifier: float) -> float:
            return _clustered_width(p, spread / n_effective + rectifier, units)

    def too_wide(rectifier: float) -> bool:
        return clustered_width(rectifier) > share_width

    if clustered:
        judge_only = clustered_width(0.0)
        fits = judge_only <= share_width
        as_computed = f" ({judge_only * span:.3f}, clustered on {units} units as the gate computes it)"
    else:
        budget = (width / (2 * round_z(1))) ** 2 - spread / n_effective
        fits, as_computed = budget > 0, ""
    if not fits:
        return LabelsNeeded(None, f"the judge-only interval on {n_effective:.0f} effective items is already wider "
                                  f"than {width:g}{as_computed}: more items, not labels, narrow it", agreement, width)
    if clustered:
        found = next((n for n in range(2, n_items + 1) if not too_wide(
            2 * spread * (1 - agreement) / n * (even_allocation_effect(sizes or (), n) - n / n_items))), None)
        if found is None:  # all labelled is the judge-only variance, which fits: only rounding lands here
            return LabelsNeeded(None, f"even all {n_items} items labelled leave the clustered interval wider than "
                                      f"{width:g}: more items, not labels, narrow it", agreement, width)
        for_width = found
    else:  # 2σ²(1 − a)(1/n − 1/N) <= budget
        for_width = math.ceil(1 / (budget / (2 * spread * (1 - agreement)) + 1 / n_items))
    floor = FLOORS[kind]
    if agreement <= floor:
        return LabelsNeeded(None, f"a pair agreeing at {agreement:g} never clears the floor {floor:g}", agreement,
                            width)
    if kind == "labels":
        p = rate if rate is not None else 0.5
        unit_var = (1 - agreement) * ((1 - agreement) * (1 - 2 * agreement)
                                      + agreement * (2 - agreement) / (2 * p * (1 - p)))
    else:
        unit_var = (1 - agreement) ** 2 * (1 + agreement) ** 2
    for_pair = math.ceil(Z_95 ** 2 * unit_var / (agreement - floor) ** 2)
    n, binding = max((for_width, "width"), (for_pair, "pair agreement"), (min_n, "min_n"))
    if n > n_items:
        return LabelsNeeded(None, f"{n} labels needed ({binding}), more than the {n_items} items", agreement, width)
    return LabelsNeeded(n, binding, agreement, width)
