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

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import ndtri


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

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("ci",):
            out[key] = list(self.ci) if self.ci is not None else None
        for part in ("judge_only", "human_only"):
            ci = getattr(self, part).ci
            out[part]["ci"] = list(ci) if ci is not None else None
        return out


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
