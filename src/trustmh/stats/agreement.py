"""Agreement between a human and an LLM judge (docs/statistics.md#agreement).

Ordinal agreement (weighted κ, Krippendorff's α), Lin's CCC, correlation intervals, Bland–Altman and plain
error statistics. numpy only (scipy for distributions); the table-based forms are vectorised over leading
axes so a cluster bootstrap can evaluate all replicates' (…, K, K) count tables at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from trustmh.core import TrustmhError

# scipy.stats is imported inside the functions that need it: importing it costs every `trustmh run` about
# 2 s of CPU at start-up (this module is reached from the conversation sub-tasks' planning).
Z95 = 1.96  # the published Bland–Altman constant (not the exact 0.975 normal quantile)


def div(num: np.ndarray | float, den: np.ndarray | float) -> np.ndarray:
    """num/den with NaN where den == 0 (or either is NaN); never warns. Also used by `stats.icc`."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = num / den
    return np.where(den == 0, np.nan, out)


def scalar(x: np.ndarray) -> np.ndarray | float:
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def _paired(h: Sequence[float] | np.ndarray, l: Sequence[float] | np.ndarray,  # noqa: E741
            what: str) -> tuple[np.ndarray, np.ndarray]:
    """Float arrays of equal length with pairs holding a NaN dropped."""
    hh = np.asarray(h, dtype=np.float64).ravel()
    ll = np.asarray(l, dtype=np.float64).ravel()
    if hh.shape != ll.shape:
        raise TrustmhError(f"{what}: human and judge scores differ in length ({hh.size} vs {ll.size})")
    keep = np.isfinite(hh) & np.isfinite(ll)
    return hh[keep], ll[keep]


# --------------------------------------------------------------------------------------------- Cohen's κ

def kappa_weight_matrix(n_labels: int, weights: str | None = "quadratic") -> np.ndarray:
    """Disagreement weights on label positions 0..K−1: None -> 1 off the diagonal, "linear" -> |i−j|,
    "quadratic" -> (i−j)². (Any constant scale, e.g. the /16 of docs/statistics.md#ordinal-agreement, cancels in κ.)"""
    pos = np.arange(n_labels, dtype=np.float64)
    diff = pos[:, None] - pos[None, :]
    if weights is None:
        return (diff != 0).astype(np.float64)
    if weights == "linear":
        return np.abs(diff)
    if weights == "quadratic":
        return diff**2
    raise ValueError(f"weights must be 'quadratic', 'linear' or None, not {weights!r}")


def confusion_table(a: Sequence[object] | np.ndarray, b: Sequence[object] | np.ndarray,
                    labels: Sequence[object] | None = None) -> tuple[np.ndarray, list[object]]:
    """K × K count table (rows = a, columns = b) over `labels` (default: sorted union of observed values).
    Pairs with a value outside `labels` are ignored, as sklearn does."""
    av = np.asarray(a).ravel()
    bv = np.asarray(b).ravel()
    if av.shape != bv.shape:
        raise TrustmhError(f"confusion_table: rater arrays differ in length ({av.size} vs {bv.size})")
    labs = list(np.unique(np.concatenate([av, bv]))) if labels is None else list(labels)
    index = {lab: i for i, lab in enumerate(labs)}
    ia = np.fromiter((index.get(x, -1) for x in av.tolist()), dtype=np.int64, count=av.size)
    ib = np.fromiter((index.get(x, -1) for x in bv.tolist()), dtype=np.int64, count=bv.size)
    keep = (ia >= 0) & (ib >= 0)
    k = len(labs)
    table = np.bincount(ia[keep] * k + ib[keep], minlength=k * k).reshape(k, k).astype(np.float64)
    return table, labs


def cohen_kappa_from_table(table: np.ndarray, weights: str | None = None) -> np.ndarray | float:
    """Cohen's (1968) weighted κ = 1 − Σ w·O / Σ w·E from (…, K, K) count tables (vectorised over leading
    axes), with E the outer product of the margins over the total, summed in the same order as
    sklearn.metrics.cohen_kappa_score so the two agree to the last bit. A zero expected disagreement gives NaN."""
    t = np.asarray(table, dtype=np.float64)
    k = t.shape[-1]
    w = kappa_weight_matrix(k, weights)
    cols = t.sum(axis=-2)
    rows = t.sum(axis=-1)
    total = cols.sum(axis=-1)[..., None, None]
    expected = div(cols[..., :, None] * rows[..., None, :], total)
    num = (w * t).sum(axis=(-2, -1))
    den = (w * expected).sum(axis=(-2, -1))
    return scalar(1.0 - div(num, den))


def cohen_kappa(a: Sequence[object] | np.ndarray, b: Sequence[object] | np.ndarray, *,
                weights: str | None = None, labels: Sequence[object] | None = None,
                on_values: bool = False) -> float:
    """Cohen's κ between two raters, unweighted or weighted (as sklearn.metrics.cohen_kappa_score).

    `weights`: None (every disagreement counts 1), "linear" (|i−j|) or "quadratic" ((i−j)²), on label
    *positions* in `labels` (default: the sorted observed values). For a fixed ordinal scale pass it, e.g.
    labels=[1, 2, 3, 4, 5], so that an unused category still counts as a step.

    `on_values=True` (quadratic weights only): the weights are on the numeric ratings themselves,
    κ = 1 − n·Σ(xᵢ−yᵢ)² / ΣᵢΣⱼ(xᵢ−yⱼ)², which is the same number on integer ratings and is also defined for
    real-valued ones (e.g. the mean of two raters).

    NaN when κ is undefined (no pairs, or no expected disagreement: both raters used one identical label).
    A missing rating (None/NaN) is an error: drop such pairs first, so that the number used is reported.
    """
    missing = sum(1 for x, y in zip(a, b, strict=True) if _missing(x) or _missing(y))
    if missing:
        raise ValueError(f"cohen_kappa: {missing} pair(s) have a missing rating; drop them first (so the "
                         "number of pairs used is the caller's to report)")
    if on_values:
        if weights != "quadratic":
            raise ValueError("cohen_kappa: on_values needs weights='quadratic'")
        x = np.asarray(a, dtype=float)
        y = np.asarray(b, dtype=float)
        n = x.size
        if n == 0:
            return float("nan")
        observed = float(np.sum((x - y) ** 2))
        expected = float(n * np.sum(x**2) + n * np.sum(y**2) - 2 * np.sum(x) * np.sum(y)) / n
        return float("nan") if expected == 0 else 1.0 - observed / expected
    table, _ = confusion_table(a, b, labels)
    return float(cohen_kappa_from_table(table, weights))


def agreement_rate(a: Sequence[object], b: Sequence[object]) -> float:
    """Share of items two raters label identically (0-1)."""
    if len(a) != len(b) or not a:
        raise TrustmhError("agreement_rate: two non-empty label sequences of the same length")
    return sum(x == y for x, y in zip(a, b, strict=True)) / len(a)


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float | np.floating) and bool(np.isnan(x)))


# ------------------------------------------------------------------------------------------- Fleiss' κ

def fleiss_kappa(table: np.ndarray, method: str = "fleiss") -> float:
    """Fleiss' κ from an (n_subjects, n_categories) table of rating counts, every subject rated by the same
    number of raters (as statsmodels.stats.inter_rater.fleiss_kappa). method="randolph" uses chance
    agreement 1/n_categories (free-marginal κ)."""
    t = np.asarray(table, dtype=np.float64)
    if t.ndim != 2:
        raise TrustmhError(f"fleiss_kappa: table must be 2-D (subjects × categories), got shape {t.shape}")
    n_sub, n_cat = t.shape
    per_subject = t.sum(axis=1)
    n_rat = per_subject.max() if n_sub else 0.0
    if n_sub == 0 or not np.all(per_subject == n_rat) or n_rat < 2:
        raise TrustmhError("fleiss_kappa: every subject must have the same number (>= 2) of ratings; "
                           f"got per-subject totals {sorted(set(per_subject.tolist()))[:5]}")
    p_cat = t.sum(axis=0) / t.sum()
    p_subj = ((t * t).sum(axis=1) - n_rat) / (n_rat * (n_rat - 1.0))
    p_mean = p_subj.mean()
    if method == "fleiss":
        p_exp = float((p_cat * p_cat).sum())
    elif method in ("randolph", "uniform"):
        p_exp = 1.0 / n_cat
    else:
        raise ValueError(f"method must be 'fleiss' or 'randolph', not {method!r}")
    return float(div(p_mean - p_exp, 1.0 - p_exp))


def ratings_to_table(ratings: np.ndarray, categories: Sequence[object] | None = None) -> np.ndarray:
    """(n_subjects, n_raters) ratings -> (n_subjects, n_categories) counts (for `fleiss_kappa`). A rating
    outside `categories` (when given) is an error, never silently dropped."""
    r = np.asarray(ratings)
    cats = list(np.unique(r)) if categories is None else list(categories)
    if categories is not None:
        extra = {x for x in r.ravel().tolist()} - set(cats)
        if extra:
            raise TrustmhError(f"ratings_to_table: rating(s) outside the categories: {sorted(map(repr, extra))}")
    return np.stack([(r == c).sum(axis=1) for c in cats], axis=1).astype(np.float64)


# ----------------------------------------------------------------------------------- Krippendorff's α

_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def _delta2(values: np.ndarray, n_c: np.ndarray, level: str) -> np.ndarray:
    """Squared distance matrix on the value domain (…, V, V); n_c (…, V) are the value margins."""
    v = values
    if level == "nominal":
        return (v[:, None] != v[None, :]).astype(np.float64)
    if level == "interval":
        return (v[:, None] - v[None, :]) ** 2
    if level == "ratio":
        s = v[:, None] + v[None, :]
        return np.asarray(div((v[:, None] - v[None, :]) ** 2, s**2)) if s.size else s
    if level == "ordinal":
        return _ordinal_delta2(n_c)
    raise ValueError(f"level must be one of {_LEVELS}, not {level!r}")


def _ordinal_delta2(n_c: np.ndarray) -> np.ndarray:
    """δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)² for margins n_c of shape (…, V)."""
    n_c = np.asarray(n_c, dtype=np.float64)
    cum = np.cumsum(n_c, axis=-1)
    v = n_c.shape[-1]
    i = np.arange(v)
    lo = np.minimum(i[:, None], i[None, :])
    hi = np.maximum(i[:, None], i[None, :])
    between = cum[..., hi] - cum[..., lo] + n_c[..., lo]
    return (between - (n_c[..., :, None] + n_c[..., None, :]) / 2.0) ** 2


def _alpha_from_coincidence(o: np.ndarray, delta2: np.ndarray) -> np.ndarray | float:
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    d_o = (o * delta2).sum(axis=(-2, -1))
    d_e = (n_c[..., :, None] * n_c[..., None, :] * delta2).sum(axis=(-2, -1))
    return scalar(1.0 - (n - 1.0) * div(d_o, d_e))


def coincidence_matrix(reliability_data: np.ndarray,
                       value_domain: Sequence[float] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Krippendorff coincidence matrix o (V × V) and the value domain, from (n_coders, n_units) data with
    NaN for missing. Units with fewer than 2 values are not pairable and are skipped."""
    r = np.asarray(reliability_data, dtype=np.float64)
    if r.ndim != 2:
        raise TrustmhError(f"krippendorff_alpha: reliability data must be 2-D (coders × units), got {r.shape}")
    domain = np.unique(r[np.isfinite(r)]) if value_domain is None else np.asarray(value_domain, dtype=np.float64)
    v = domain.size
    # counts[u, c] = how many coders gave unit u value c
    pos = np.searchsorted(domain, r)
    present = np.isfinite(r)
    pos_ok = np.clip(pos, 0, max(v - 1, 0))
    if present.any() and not np.all(domain[pos_ok[present]] == r[present]):
        raise TrustmhError("krippendorff_alpha: data holds a value outside value_domain")
    counts = np.zeros((r.shape[1], v), dtype=np.float64)
    units = np.broadcast_to(np.arange(r.shape[1]), r.shape)
    np.add.at(counts, (units[present], pos_ok[present]), 1.0)
    m_u = counts.sum(axis=1)
    pairable = m_u >= 2
    c = counts[pairable]
    m = m_u[pairable]
    o = np.einsum("uc,uk->ck", c / (m - 1.0)[:, None], c) - np.diag((c / (m - 1.0)[:, None]).sum(axis=0))
    return o, domain


def krippendorff_alpha(reliability_data: np.ndarray, level: str = "ordinal",
                       value_domain: Sequence[float] | None = None) -> float:
    """Krippendorff's α (2004) for (n_coders, n_units) numeric data, NaN = missing; level "nominal",
    "ordinal", "interval" or "ratio". Same as krippendorff.alpha(reliability_data, value_domain,
    level_of_measurement). NaN when there is no expected disagreement."""
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, not {level!r}")
    o, domain = coincidence_matrix(reliability_data, value_domain)
    if o.size == 0 or o.sum() == 0:
        return float("nan")
    d2 = _delta2(domain, o.sum(axis=-1), level)
    return float(_alpha_from_coincidence(o, d2))


def kripp_alpha_ordinal_from_counts(counts: np.ndarray) -> np.ndarray | float:
    """Ordinal α of two raters from (…, K, K) pair-count tables (rows = rater 1's category, columns =
    rater 2's), categories in scale order (docs/statistics.md#ordinal-agreement): o = counts + countsᵀ. Vectorised
    over leading axes (e.g. (B, 5, 5) bootstrap tables)."""
    t = np.asarray(counts, dtype=np.float64)
    o = t + np.swapaxes(t, -1, -2)
    d2 = _ordinal_delta2(o.sum(axis=-1))
    return _alpha_from_coincidence(o, d2)


def kripp_alpha_from_counts(counts: np.ndarray, level: str = "ordinal",
                            values: Sequence[float] | None = None) -> np.ndarray | float:
    """α of two raters from (…, K, K) pair-count tables at any level (`values` = the K category values,
    needed for interval/ratio; default 1..K)."""
    if level == "ordinal":
        return kripp_alpha_ordinal_from_counts(counts)
    t = np.asarray(counts, dtype=np.float64)
    o = t + np.swapaxes(t, -1, -2)
    vals = np.arange(1, t.shape[-1] + 1, dtype=np.float64) if values is None else np.asarray(values, float)
    return _alpha_from_coincidence(o, _delta2(vals, o.sum(axis=-1), level))


# ------------------------------------------------------------------------------- continuous agreement

def lin_ccc(h: Sequence[float] | np.ndarray, l: Sequence[float] | np.ndarray,  # noqa: E741
            ddof: int = 1) -> float:
    """Concordance correlation 2·s_hl / (s_h² + s_l² + (m_l − m_h)²) (= 2·r·s_h·s_l / …) with covariance
    and variances of the given ddof. ddof=1 is the authors' variant (docs/statistics.md#pooled-pairs); ddof=0 is Lin (1989).
    NaN pairs are dropped. Written with the covariance, so a constant rater gives 0 (no concordance in
    variation), as Lin's formula does, rather than the NaN of an undefined r; NaN only for fewer than 2
    pairs or two identical constants (0/0: agreement without variation, undefined)."""
    hh, ll = _paired(h, l, "lin_ccc")
    if hh.size < 2:
        return float("nan")
    mh, ml = hh.mean(), ll.mean()
    dh, dl = hh - mh, ll - ml
    n = hh.size - ddof
    cov, vh, vl = (dh @ dl) / n, (dh @ dh) / n, (dl @ dl) / n
    return float(div(2.0 * cov, vh + vl + (ml - mh) ** 2))


class CorrCI(NamedTuple):
    r: float
    lo: float
    hi: float
    n: int


def _fisher_ci(r: float, n: int, se: float, level: float) -> tuple[float, float]:
    if not np.isfinite(r) or not np.isfinite(se):
        return float("nan"), float("nan")
    from scipy import stats as _st

    z = float(_st.norm.ppf(1 - (1 - level) / 2))
    zr = np.arctanh(np.clip(r, -1.0, 1.0))
    return float(np.tanh(zr - z * se)), float(np.tanh(zr + z * se))


# Fewest points for which a published Pearson r means anything: with 2 points r is always ±1, with 3–4 it
# swings wildly (a 95% interval spans most of [-1, 1]). Below this the statistic is reported as not computed.
MIN_PEARSON_N = 5


def pearson_r(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray,
              min_n: int = MIN_PEARSON_N) -> tuple[float | None, str | None]:
    """Pearson r (= scipy.stats.pearsonr) and None, or None and the reason it is not computed: fewer than
    `min_n` pairs, or a constant side (r undefined). Pairs holding a NaN are dropped first."""
    xx, yy = _paired(x, y, "pearson_r")
    n = int(xx.size)
    if n < min_n:
        return None, f"{n} point(s), fewer than the {min_n} a correlation needs"
    if np.all(xx == xx[0]) or np.all(yy == yy[0]):
        return None, "a constant side (no variation), r undefined"
    xm, ym = xx - xx.mean(), yy - yy.mean()
    return float((xm * ym).sum() / np.sqrt((xm * xm).sum() * (ym * ym).sum())), None


def pearson_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Row-wise Pearson r of two (B, n) matrices (one bootstrap replicate a row); NaN where undefined."""
    xm = x - x.mean(axis=1, keepdims=True)
    ym = y - y.mean(axis=1, keepdims=True)
    return div((xm * ym).sum(axis=1), np.sqrt((xm * xm).sum(axis=1) * (ym * ym).sum(axis=1)))


def pearson_ci(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, level: float = 0.95) -> CorrCI:
    """Pearson r (= scipy.stats.pearsonr) with a Fisher-z interval, SE = 1/√(n−3). NaN pairs dropped;
    n < 4 or a constant column gives NaN."""
    xx, yy = _paired(x, y, "pearson_ci")
    n = int(xx.size)
    if n < 2 or np.all(xx == xx[0]) or np.all(yy == yy[0]):
        return CorrCI(float("nan"), float("nan"), float("nan"), n)
    from scipy import stats as _st

    r = float(_st.pearsonr(xx, yy).statistic)
    se = 1.0 / np.sqrt(n - 3) if n > 3 else float("nan")
    lo, hi = _fisher_ci(r, n, se, level)
    return CorrCI(r, lo, hi, n)


def spearman_ci(x: Sequence[float] | np.ndarray, y: Sequence[float] | np.ndarray, level: float = 0.95) -> CorrCI:
    """Spearman ρ (= scipy.stats.spearmanr) with a Fisher-z interval, SE = √(1.06/(n−3))
    (Fieller, Hartley & Pearson 1957). NaN pairs dropped."""
    xx, yy = _paired(x, y, "spearman_ci")
    n = int(xx.size)
    if n < 2 or np.all(xx == xx[0]) or np.all(yy == yy[0]):
        return CorrCI(float("nan"), float("nan"), float("nan"), n)
    from scipy import stats as _st

    rho = float(_st.spearmanr(xx, yy).statistic)
    se = float(np.sqrt(1.06 / (n - 3))) if n > 3 else float("nan")
    lo, hi = _fisher_ci(rho, n, se, level)
    return CorrCI(rho, lo, hi, n)


def bland_altman(h: Sequence[float] | np.ndarray, l: Sequence[float] | np.ndarray,  # noqa: E741
                 z: float = Z95) -> dict[str, float]:
    """Bland–Altman on d = l − h (docs/statistics.md#pooled-pairs): bias = mean d, sd (ddof 1), loa = bias ± z·sd,
    se_bias = sd/√n, se_loa = sd·√(3/n), bias CI = bias ± z·se_bias. NaN pairs dropped."""
    hh, ll = _paired(h, l, "bland_altman")
    n = int(hh.size)
    d = ll - hh
    bias = float(d.mean()) if n else float("nan")
    sd = float(d.std(ddof=1)) if n > 1 else float("nan")
    se_bias = sd / np.sqrt(n) if n else float("nan")
    se_loa = sd * np.sqrt(3.0 / n) if n else float("nan")
    return {
        "bias": bias,
        "sd": sd,
        "loa_lo": bias - z * sd,
        "loa_hi": bias + z * sd,
        "se_bias": float(se_bias),
        "se_loa": float(se_loa),
        "bias_lo": float(bias - z * se_bias),
        "bias_hi": float(bias + z * se_bias),
        "n": n,
    }


def error_stats(h: Sequence[float] | np.ndarray, l: Sequence[float] | np.ndarray) -> dict[str, float]:  # noqa: E741
    """Pooled-pair error statistics (docs/statistics.md#pooled-pairs): bias = mean(l − h) (positive: the judge inflates),
    mse, rmse, means and ddof-1 SDs of both raters, scale_shift = s_l/s_h, n_pairs. NaN pairs dropped."""
    hh, ll = _paired(h, l, "error_stats")
    n = int(hh.size)
    if n == 0:
        nan = float("nan")
        return {"bias": nan, "mse": nan, "rmse": nan, "human_mean": nan, "llm_mean": nan, "human_sd": nan,
                "llm_sd": nan, "scale_shift": nan, "n_pairs": 0}
    d = ll - hh
    mse = float(np.mean(d * d))
    human_sd = float(hh.std(ddof=1)) if n > 1 else float("nan")
    llm_sd = float(ll.std(ddof=1)) if n > 1 else float("nan")
    return {
        "bias": float(d.mean()),
        "mse": mse,
        "rmse": float(np.sqrt(mse)),
        "human_mean": float(hh.mean()),
        "llm_mean": float(ll.mean()),
        "human_sd": human_sd,
        "llm_sd": llm_sd,
        "scale_shift": float(div(llm_sd, human_sd)),
        "n_pairs": n,
    }


# ------------------------------------------------------------------------------------------- bands

KOO_LI_CUTS = ((0.90, "excellent"), (0.75, "good"), (0.50, "moderate"))


def koo_li_band(icc: float) -> str:
    """Koo & Li (2016) band of an ICC: ≥ 0.90 excellent, ≥ 0.75 good, ≥ 0.50 moderate, else poor.
    A NaN ICC gives "undefined" (not "poor": nothing was measured)."""
    x = float(icc)
    if not np.isfinite(x):
        return "undefined"
    for cut, name in KOO_LI_CUTS:
        if x >= cut:
            return name
    return "poor"


def rating_agreement(a: Sequence[float | None], b: Sequence[float | None], lo: int = 1, hi: int = 5,
                     *, rounded: bool = True) -> dict[str, float | int | None]:
    """Agreement of two raters on an ordinal lo–hi scale: n, MAE, RMSE and the share of pairs within one
    point (|d| <= 1). With `rounded` (default) both sides are rounded half up and clipped to [lo, hi] first
    (a rater's mean of repeats, an averaged jury); `rounded=False` keeps the scores as they are (the crisis
    study's published table). Pairs with a missing side are left out. No pair: every figure None."""
    pairs = [(float(x), float(y)) for x, y in zip(a, b, strict=True)
             if x is not None and y is not None and np.isfinite(float(x)) and np.isfinite(float(y))]
    if not pairs:
        return {"n": 0, "mae": None, "rmse": None, "within_1": None}
    arr = np.array(pairs)
    if rounded:
        arr = np.clip(np.floor(arr + 0.5), lo, hi)
    d = np.abs(arr[:, 0] - arr[:, 1])
    return {"n": len(pairs), "mae": float(d.mean()), "rmse": float(np.sqrt((d * d).mean())),
            "within_1": float((d <= 1).mean())}


def reference_agreement(judge: Sequence[float | None], human: Sequence[float | None]) -> dict[str, Any]:
    """MAE, within-1 and quadratic-weighted κ of a rater (a judge) against one reference rater, on pairs where
    both exist (a missing or NaN score on either side leaves the pair out; n says how many remain)."""
    pairs = [(float(j), float(h)) for j, h in zip(judge, human, strict=True)
             if j is not None and h is not None and not math.isnan(float(h))]
    if not pairs:
        return {"n": 0, "mae": None, "within_1": None, "qwk": None}
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    return {"n": len(pairs), "mae": float(np.mean(np.abs(a - b))),
            "within_1": float(np.mean(np.abs(a - b) <= 1.0)), "qwk": _none_if_nan(cohen_kappa(a, b, weights="quadratic", on_values=True))}


def _none_if_nan(x: float) -> float | None:
    return None if math.isnan(x) else x
