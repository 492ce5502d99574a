"""Prediction-powered inference (PPI / PPI++) for a mean: judge-corrected rates and means.

A run's judge scores every item; clinicians label a random subset. The judge-only mean is precise but
biased by the judge's errors; the human-only mean is unbiased but rests on few labels. PPI combines them:
the judge's mean over all items, corrected by the judge's average error measured where humans labelled.
PPI++ weighs the judge by a power-tuning factor λ chosen from the data, so the corrected interval is never
(asymptotically) wider than the human-only one, and is much narrower when the judge tracks the humans.

Estimand
    θ = E[Y], the mean of the human label over the population the judged items come from. Binary labels
    (1 = harmful) make θ a rate; ordinal labels (1..5) make it a mean score. Both are means, one code path.

Inputs (1-D, or with leading batch axes: the statistic is taken along the last axis, see `ppi_mean_batch`)
    Y               (n,)  human labels on the labelled items.
    Yhat            (n,)  the judge's predictions on the same labelled items, in the same order.
    Yhat_unlabeled  (N,)  the judge's predictions on the unlabelled items. In trustmh this is every judged
                          item of the run (the labelled ones included): its weighted mean is then exactly
                          the run's judge-only figure. PPI's derivation assumes a separate unlabelled
                          sample; with the labelled items drawn from the judged ones, the interval is
                          slightly conservative for the finite set of judged items and about right for the
                          population they stand for (see benchmarks/ppi_coverage.py).
    weights         (n,)  optional positive weights for the labelled items, e.g. Horvitz–Thompson
                          w_i = 1/π_i from the recorded inclusion probabilities of a stratified review
                          sample (`inverse_probability_weights`). Only ratios matter: they are
                          normalised to sum to n, so the rectifier is the Hájek-weighted mean.
    weights_unlabeled (N,) optional positive weights for the unlabelled items, normalised to sum to N.
    lam             None (power-tuned, PPI++) or a fixed λ: 1 is plain PPI, 0 the classical human-only mean.
    alpha           error level; the interval targets coverage 1 − α (0.05: a 95% interval).

Formula (w, w̃ the normalised weights; every mean below is an unweighted average of the weighted terms,
exactly as ppi-python computes them)
    θ̂_λ  = (1/N) Σ_j w̃_j λ Ŷ̃_j + (1/n) Σ_i w_i (Y_i − λ Ŷ_i)
    se_λ² = Var_N(w̃ λ Ŷ̃)/N + Var_n(w (Y − λ Ŷ))/n                (population variances, ddof 0)
    CI    = θ̂_λ ± z_{1−α/2} se_λ                                   (normal/CLT interval)
    Power tuning (PPI++, Example 6.1 of [ADZ23], ppi-python's `_calc_lam_glm` with an identity Hessian):
    with θ̂₁ the λ = 1 estimate, g_i = w_i (Y_i − θ̂₁), ĝ_i = w_i (Ŷ_i − θ̂₁), ĝ̃_j = w̃_j (Ŷ̃_j − θ̂₁),
        λ̂ = Cov_n(g, ĝ) / ((1 + n/N) Var_{n+N}(ĝ ∪ ĝ̃)),   clipped to [0, 1]
    where Cov_n divides by n and Var_{n+N} is the sample variance (ddof 1) of the pooled n + N values.
    Unweighted this is λ̂ = Cov(Y, Ŷ) / ((1 + n/N) Var(Ŷ)): the regression coefficient of the human label
    on the judge's, shrunk for the finite N.

trustmh's rule (`corrected_mean`, what results.json and the report publish)
    PPI++'s power-tuned λ is fitted on the same labels it corrects with, which makes its interval optimistic
    at small n: in benchmarks/ppi_coverage.py (biased judge, 1,000 repetitions) PPI++ covered 0.907 at n = 50
    and 0.923 at n = 100. trustmh therefore uses the power-tuned λ only from TUNED_MIN_N = 200 human labels
    on, and plain PPI (λ = 1, fixed in advance) below that; the result names the λ used and whether it was
    tuned (docs/statistics.md#judge-corrected-figures).

Comparisons (returned beside the corrected figure)
    judge-only: mean of w̃ Ŷ̃ over the N unlabelled items with its CLT interval Var_N(w̃ Ŷ̃)/N. It ignores
                the judge's bias, so its interval is tight around the wrong value when the judge errs.
    human-only: the classical mean of w Y over the n labelled items with its CLT interval (PPI at λ = 0;
                ppi-python's `classical_mean_ci`).

Degenerate cases (ppi-python returns nan or a zero-width interval here; trustmh says why instead)
    n = 0 or N = 0      ValueError: with no human label there is nothing to correct (report the judge-only
                        figure); with no judged item there is nothing to correct with (report human-only).
    n = 1               the estimate is returned, the interval is not (ci None): one label gives no
                        variance for the rectifier. The human-only interval is withheld likewise.
    judge constant      every weighted judge term ĝ equal (e.g. an unweighted judge that gave every item
                        the same verdict): the tuning ratio is 0/0; λ̂ = 0 is used (every λ gives the same
                        estimate unweighted, and λ = 0 has the smallest variance).
    all labels equal    unweighted, Cov(Y, Ŷ) = 0 so λ̂ = 0, the estimate is that label and se = 0; any
                        se = 0 withholds the interval (ci None, with the reason): a zero-width CLT interval
                        (e.g. [0, 0] from 50 labels that found no harm) is not evidence of anything.
    non-finite input    ValueError: a judged item without a usable verdict must be resolved by the caller
                        (trustmh counts it at its worst) before it gets here; weights must be finite, > 0.

The weighted variance treats the n weighted terms as independent draws (with-replacement approximation,
as ppi-python does). For a stratified sample with fixed allocation this is conservative: it counts the
spread of the stratum means as noise.

References
    A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan, T. Zrnic. Prediction-powered inference.
        Science 382(6671):669–674, 2023. doi:10.1126/science.adi6000.
    [ADZ23] A. N. Angelopoulos, J. C. Duchi, T. Zrnic. PPI++: Efficient prediction-powered inference.
        arXiv:2311.01453, 2023.
    ppi-python 0.2.3 (`ppi_py.ppi_mean_pointestimate`, `ppi_py.ppi_mean_ci`): the test oracle
        (tests/test_stats_ppi.py; equal within 1e-9). Note its default α is 0.1; trustmh's is 0.05.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy.special import ndtri

from trustmh.stats.clustered import ASSUMED_ICC, MIN_CLUSTERS, _t_quantile, clopper_pearson_bounds
from trustmh.stats.power import design_effect


@dataclass(frozen=True)
class PPIBatch:
    """`ppi_mean_batch`'s arrays, each of the batch shape (the inputs' shape less the last axis).
    Undefined intervals are NaN (n < 2 or se = 0)."""

    estimate: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    se: np.ndarray
    lam: np.ndarray
    judge_estimate: np.ndarray
    judge_lo: np.ndarray
    judge_hi: np.ndarray
    judge_se: np.ndarray
    human_estimate: np.ndarray
    human_lo: np.ndarray
    human_hi: np.ndarray
    human_se: np.ndarray


@dataclass(frozen=True)
class MeanInterval:
    """One mean with its CLT interval; `ci` None when it is not defined (see `reason`)."""

    estimate: float
    ci: tuple[float, float] | None
    se: float
    n: int
    reason: str | None = None


@dataclass(frozen=True)
class PPIMean:
    """The judge-corrected mean (PPI++ unless a fixed λ was asked for) beside the judge-only and human-only
    means. `ci` None when it is not defined (see `reason`)."""

    estimate: float
    ci: tuple[float, float] | None
    se: float
    lam: float
    lam_tuned: bool
    n: int
    N: int
    alpha: float
    weighted: bool
    judge_only: MeanInterval
    human_only: MeanInterval
    reason: str | None = None
    # where the items share a unit (`clustered_corrected_mean`): the units and the effective n the interval is on
    clusters: int | None = None
    effective_n: float | None = None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("ci",):
            out[key] = list(self.ci) if self.ci is not None else None
        for part in ("judge_only", "human_only"):
            ci = getattr(self, part).ci
            out[part]["ci"] = list(ci) if ci is not None else None
        return out


# From this many human labels on, PPI++'s power-tuned λ; below, plain PPI (λ = 1). See the module docstring.
TUNED_MIN_N = 200


def inverse_probability_weights(inclusion: np.ndarray | list[float]) -> np.ndarray:
    """Horvitz–Thompson weights 1/π_i from recorded inclusion probabilities π_i ∈ (0, 1]."""
    pi = np.asarray(inclusion, dtype=float)
    if not np.all(np.isfinite(pi)) or np.any(pi <= 0) or np.any(pi > 1):
        raise ValueError("inclusion probabilities must lie in (0, 1]")
    return 1.0 / pi


def _as_float(name: str, x: Any) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim == 0:
        raise ValueError(f"{name} must be an array, not a scalar")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite values (resolve judge failures before correcting)")
    return arr


def _normalised(w: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    """Weights scaled to sum to the last axis' length (ppi-python's `construct_weight_vector`)."""
    size = shape[-1]
    if w is None:
        return np.ones(shape)
    arr = _as_float(name, w)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be positive")
    arr = np.broadcast_to(arr, shape)
    return arr / arr.sum(axis=-1, keepdims=True) * size


def _tuned_lambda(Y: np.ndarray, Yhat: np.ndarray, Yhat_u: np.ndarray, w: np.ndarray,
                  wu: np.ndarray) -> np.ndarray:
    n, N = Y.shape[-1], Yhat_u.shape[-1]
    theta1 = (wu * Yhat_u).mean(-1, keepdims=True) + (w * (Y - Yhat)).mean(-1, keepdims=True)
    g = w * (Y - theta1)
    gh = w * (Yhat - theta1)
    ghu = wu * (Yhat_u - theta1)
    cov = ((g - g.mean(-1, keepdims=True)) * (gh - gh.mean(-1, keepdims=True))).mean(-1)
    pooled = np.concatenate([gh, ghu], axis=-1)
    var = pooled.var(-1, ddof=1) if n + N > 1 else np.zeros(pooled.shape[:-1])
    constant = np.ptp(pooled, axis=-1) == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(constant, 0.0, cov / ((1 + n / N) * np.where(constant, 1.0, var)))
    return np.clip(lam, 0.0, 1.0)


def _interval(est: np.ndarray, se: np.ndarray, z: float, defined: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ok = defined & (se > 0)
    return np.where(ok, est - z * se, np.nan), np.where(ok, est + z * se, np.nan)


def ppi_mean_batch(Y: Any, Yhat: Any, Yhat_unlabeled: Any, *, weights: Any = None, weights_unlabeled: Any = None,
                   lam: float | None = None, alpha: float = 0.05) -> PPIBatch:
    """`ppi_mean` along the last axis of arrays with any leading batch shape (e.g. (repetitions, n) in a
    simulation): Y and Yhat (..., n), Yhat_unlabeled (..., N), weights broadcastable to (..., n) and
    (..., N). Same formulas and degenerate rules as the module docstring; undefined intervals are NaN."""
    Y_, Yh, Yu = _as_float("Y", Y), _as_float("Yhat", Yhat), _as_float("Yhat_unlabeled", Yhat_unlabeled)
    if Y_.shape != Yh.shape:
        raise ValueError(f"Y {Y_.shape} and Yhat {Yh.shape} must have the same shape (the same labelled items)")
    if Y_.shape[:-1] != Yu.shape[:-1]:
        raise ValueError(f"batch shapes differ: Y {Y_.shape}, Yhat_unlabeled {Yu.shape}")
    n, N = Y_.shape[-1], Yu.shape[-1]
    if n == 0:
        raise ValueError("no human label: nothing to correct (report the judge-only figure)")
    if N == 0:
        raise ValueError("no unlabelled judged item: nothing to correct with (report the human-only figure)")
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    if lam is not None and not np.isfinite(lam):
        raise ValueError("lam must be finite or None")
    w = _normalised(weights, Y_.shape, "weights")
    wu = _normalised(weights_unlabeled, Yu.shape, "weights_unlabeled")
    z = float(ndtri(1 - alpha / 2))
    batch = Y_.shape[:-1]

    lam_arr = _tuned_lambda(Y_, Yh, Yu, w, wu) if lam is None else np.full(batch, float(lam))
    lk = lam_arr[..., None]
    imputed = wu * lk * Yu
    rectifier = w * (Y_ - lk * Yh)
    estimate = imputed.mean(-1) + rectifier.mean(-1)
    se = np.sqrt(imputed.var(-1) / N + rectifier.var(-1) / n)
    enough = np.full(batch, n >= 2)
    lo, hi = _interval(estimate, se, z, enough)

    judge_terms = wu * Yu
    judge_est, judge_se = judge_terms.mean(-1), judge_terms.std(-1) / np.sqrt(N)
    judge_lo, judge_hi = _interval(judge_est, judge_se, z, np.full(batch, True))
    human_terms = w * Y_
    human_est, human_se = human_terms.mean(-1), human_terms.std(-1) / np.sqrt(n)
    human_lo, human_hi = _interval(human_est, human_se, z, enough)
    return PPIBatch(estimate, lo, hi, se, lam_arr, judge_est, judge_lo, judge_hi, judge_se,
                    human_est, human_lo, human_hi, human_se)


def _why_no_interval(n: int, se: float, labels: np.ndarray, what: str) -> str | None:
    if n < 2:
        return f"{n} human label: no variance estimate, so no {what} interval"
    if se > 0:
        return None
    if np.all(labels == labels[0]):
        return (f"every human label is {labels[0]:g}: the {what} CLT interval has zero width and is not "
                "reported")
    return f"zero estimated variance: the {what} CLT interval has zero width and is not reported"


def _ci(lo: np.ndarray, hi: np.ndarray) -> tuple[float, float] | None:
    return None if np.isnan(lo) else (float(lo), float(hi))


def ppi_mean(Y: Any, Yhat: Any, Yhat_unlabeled: Any, *, weights: Any = None, weights_unlabeled: Any = None,
             lam: float | None = None, alpha: float = 0.05) -> PPIMean:
    """The judge-corrected mean of the human label (PPI++, or PPI with a fixed `lam`), with its 1 − α CLT
    interval, the λ used, n and N, and the judge-only and human-only means for comparison.

    Y, Yhat: (n,) human labels and the judge's predictions on the same items; Yhat_unlabeled: (N,) the
    judge's predictions on the unlabelled (in trustmh: all judged) items; weights: (n,) e.g.
    `inverse_probability_weights(π)` for a stratified review sample. Formula, degenerate cases and
    references: the module docstring."""
    Y_ = _as_float("Y", Y)
    if Y_.ndim != 1:
        raise ValueError("ppi_mean takes 1-D inputs; use ppi_mean_batch for leading batch axes")
    b = ppi_mean_batch(Y_, Yhat, Yhat_unlabeled, weights=weights, weights_unlabeled=weights_unlabeled, lam=lam,
                       alpha=alpha)
    n, N = Y_.shape[0], np.shape(Yhat_unlabeled)[0]
    se, judge_se, human_se = float(b.se), float(b.judge_se), float(b.human_se)
    judge = MeanInterval(float(b.judge_estimate), _ci(b.judge_lo, b.judge_hi), judge_se, N,
                         None if judge_se > 0 else "the judge gave every item the same score: zero-width "
                                                   "interval, not reported")
    human = MeanInterval(float(b.human_estimate), _ci(b.human_lo, b.human_hi), human_se, n,
                         _why_no_interval(n, human_se, Y_, "human-only"))
    return PPIMean(float(b.estimate), _ci(b.lo, b.hi), se, float(b.lam), lam is None, n, N, alpha,
                   weights is not None or weights_unlabeled is not None, judge, human,
                   _why_no_interval(n, se, Y_, "corrected"))


def corrected_mean(Y: Any, Yhat: Any, Yhat_unlabeled: Any, *, weights: Any = None, weights_unlabeled: Any = None,
                   alpha: float = 0.05) -> PPIMean:
    """trustmh's judge-corrected mean: PPI++ (power-tuned λ) from TUNED_MIN_N human labels on, plain PPI
    (λ = 1) below that, where the tuned interval under-covers (module docstring)."""
    n = int(np.shape(Y)[0])
    return ppi_mean(Y, Yhat, Yhat_unlabeled, weights=weights, weights_unlabeled=weights_unlabeled,
                    lam=None if n >= TUNED_MIN_N else 1.0, alpha=alpha)


def clustered_corrected_mean(Y: Any, Yhat: Any, Yhat_unlabeled: Any, clusters: Sequence[object],
                             clusters_unlabeled: Sequence[object], *, weights: Any = None,
                             alpha: float = 0.05, scale: tuple[float, float] | None = None) -> PPIMean:
    """`corrected_mean` when the judged items share a unit (a conversation's design cell joined with its
    stimulus, docs/statistics.md#the-unit): the same estimate, its variance cluster-robust over the units
    (docs/statistics.md#clustered-ppi). The estimate is linear in per-item terms, judge terms
    a_j = (w̃_j λ Ŷ̃_j − mean)/N over all N judged items and rectifier terms b_i = (w_i (Y_i − λ Ŷ_i) − mean)/n
    over the labelled ones; their sums per unit, ψ_c, give v = C/(C − 1) Σ_c ψ_c², never below the
    independent variance. A rate (every label and verdict 0 or 1) then takes the gate's clustered interval:
    Clopper–Pearson on the effective n θ̂(1 − θ̂)/v shrunk by (z/t_{C−1})² (Korn–Graubard), and, where the
    rarer outcome lies in one unit only (the data cannot show the spread), at least the design effect of the
    assumed correlation (`stats.clustered.ASSUMED_ICC`); a rating on a bounded `scale` (the delusion check's
    0–2 mean) the same rule on the rating put on [0, 1] (`stats.clustered.clustered_interval` does so without
    labels): a skewed mean near an end of its scale covered 0.90 as θ̂ ± t_{C−1}·√v, which a rating without a
    scale keeps (docs/statistics.md#clustered-ppi). Fewer than `stats.clustered.MIN_CLUSTERS` units count one
    item each (a rating: no interval). `clusters`: the labelled items' units (as Y); `clusters_unlabeled`: every
    judged item's (as Yhat_unlabeled)."""

    res = corrected_mean(Y, Yhat, Yhat_unlabeled, weights=weights, alpha=alpha)
    Y_, Yh, Yu = (np.asarray(v, dtype=float) for v in (Y, Yhat, Yhat_unlabeled))
    n, N = Y_.size, Yu.size
    if len(clusters) != n or len(clusters_unlabeled) != N:
        raise ValueError("one unit per labelled item and per judged item")
    names = {c: k for k, c in enumerate(dict.fromkeys([*map(str, clusters_unlabeled), *map(str, clusters)]))}
    cu = np.array([names[str(c)] for c in clusters_unlabeled], dtype=int)
    cl = np.array([names[str(c)] for c in clusters], dtype=int)
    C = len(names)
    if res.ci is None or res.se <= 0 or C < 2:
        return res
    w = _normalised(weights, Y_.shape, "weights")
    imputed = res.lam * Yu
    rectifier = w * (Y_ - res.lam * Yh)
    psi = np.bincount(cu, weights=(imputed - imputed.mean()) / N, minlength=C)
    psi += np.bincount(cl, weights=(rectifier - rectifier.mean()) / n, minlength=C)
    variance = max(C / (C - 1) * float((psi**2).sum()), res.se**2)
    level = 1 - alpha
    q = _t_quantile(level, C - 1)
    binary = bool(np.isin(Y_, (0.0, 1.0)).all() and np.isin(Yu, (0.0, 1.0)).all())
    theta = float(res.estimate)
    if binary and 0 < theta < 1:
        sizes = np.bincount(cu, minlength=C)
        rare = (Yu if theta <= 0.5 else 1 - Yu)
        rare_l = (Y_ if theta <= 0.5 else 1 - Y_)
        carrying = np.union1d(cu[rare > 0], cl[rare_l > 0]).size
        if carrying < 2:
            independent = theta * (1 - theta) / N
            variance = max(variance, independent * design_effect(sizes[sizes > 0].tolist(), ASSUMED_ICC))
        n_eff = theta * (1 - theta) / variance * (_t_quantile(level, math.inf) / q) ** 2
        if C < MIN_CLUSTERS:
            n_eff = min(n_eff, float(C))
        ci = clopper_pearson_bounds(theta, n_eff, level)
    elif C < MIN_CLUSTERS:
        return replace(res, ci=None, se=math.sqrt(variance), clusters=C, effective_n=float(C),
                       reason=f"{C} units, fewer than {MIN_CLUSTERS}: too few for a clustered interval")
    elif scale is not None and scale[0] < theta < scale[1]:
        lo, span = float(scale[0]), float(scale[1]) - float(scale[0])
        share = (theta - lo) / span  # the rating as a share of its scale, its variance with it
        # the part of the variance the clustering adds takes Satterthwaite's degrees of freedom, as without labels
        # (`stats.clustered.clustered_interval`): a few units carrying the spread make it uncertain
        df = min(C - 1.0, float((psi**2).sum()) ** 2 / float((psi**4).sum()) - 1)
        excess = variance - res.se**2
        q = math.sqrt((res.se**2 * q**2 + excess * _t_quantile(level, df) ** 2) / variance)
        n_eff = share * (1 - share) / (variance / span**2) * (_t_quantile(level, math.inf) / q) ** 2
        b_lo, b_hi = clopper_pearson_bounds(share, n_eff, level)
        ci = (lo + b_lo * span, lo + b_hi * span)
        n_eff = float(np.var(Yu)) / variance
    else:
        half = q * math.sqrt(variance)
        ci = (theta - half, theta + half)
        n_eff = float(np.var(Yu)) / variance
    return replace(res, ci=(float(ci[0]), float(ci[1])), se=math.sqrt(variance), clusters=C,
                   effective_n=float(n_eff))
