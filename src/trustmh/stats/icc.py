"""Intraclass correlation (docs/statistics.md#icc), vectorised over leading axes.

Every function takes Y of shape (..., n, k): rows = targets, columns = raters. Leading axes are batch
axes, so a (28 cells, 1000 replicates, 9, 2) array is analysed in one call. Single-measure forms follow
McGraw & Wong (1996); the six Shrout–Fleiss forms and their F-based intervals use pingouin's names
(ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k) and formulas, so they can be checked against it.

A zero denominator gives NaN (never an exception), also when it is zero only up to rounding (an
ill-conditioned ICC2k is NaN, not ~1e16); one matrix holding a NaN is a ValueError that says so (a batch of
bootstrap replicates keeps NaN per replicate); perfect agreement gives ICC 1 with the interval [1, 1]. Two
exactly degenerate cases are made exact so that float noise cannot turn "undefined" into a number:

* all rows identical (e.g. a bootstrap draw that hits one row n times): MS_R = MS_E = 0 exactly;
* all raters identical on every row: MS_C = MS_E = 0 exactly (ICC = 1 when MS_R > 0).
"""

from __future__ import annotations

import numpy as np

from trustmh.stats.agreement import div, scalar
from trustmh.stats.bootstrap import legacy_index_matrix, percentile_ci_nan

ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")
# Our single-measure aliases: consistency ICC(C,1) = ICC3, absolute agreement ICC(A,1) = ICC2.
ALIASES = {"c1": "ICC3", "a1": "ICC2", "ck": "ICC3k", "ak": "ICC2k"}


def _as_matrix(Y: np.ndarray) -> tuple[np.ndarray, int, int]:
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim < 2:
        raise ValueError(f"ICC needs an array of shape (..., n, k); got shape {Y.shape}")
    if Y.ndim == 2 and not np.isfinite(Y).all():
        # one matrix: a missing rating is the caller's to handle (pingouin raises too); in a batch of
        # bootstrap replicates a NaN replicate is NaN and is dropped by the percentile step
        bad = int((~np.isfinite(Y)).any(axis=1).sum())
        raise ValueError(f"ICC: {bad} target(s) have a missing (NaN or infinite) rating; drop incomplete rows "
                         "first (listwise deletion, pingouin's nan_policy='omit')")
    n, k = Y.shape[-2], Y.shape[-1]
    return Y, n, k


def _sums_of_squares(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(SS_R, SS_C, SS_E) over the last two axes. SS_E is the sum of squared two-way residuals (same as
    SS_T − SS_R − SS_C, but never negative).

    Every reduction runs over the last axis of a C-contiguous array (or is an explicit elementwise loop), so
    the summation order depends only on (n, k): one matrix and the same matrix inside a (…, B, n, k) batch
    give bit-identical results.
    """
    n, k = Y.shape[-2], Y.shape[-1]
    if k == 2:
        return _sums_of_squares_k2(Y[..., 0], Y[..., 1])
    lead = Y.shape[:-2]
    Yt = np.ascontiguousarray(np.swapaxes(Y, -1, -2))  # (..., k, n): rater-major, targets contiguous
    # Row sums over the (few) raters as explicit elementwise adds: a reduction over a length-2 axis costs
    # a loop per row in numpy, and elementwise adds keep the order independent of the batch shape.
    row_sum = Yt[..., 0, :]
    for j in range(1, k):
        row_sum = row_sum + Yt[..., j, :]
    row = row_sum / k  # (..., n)
    col = Yt.mean(axis=-1)  # (..., k)
    g = row.mean(axis=-1)  # (...)
    ss_r = k * np.square(row - g[..., None]).sum(axis=-1)
    ss_c = n * np.square(col - g[..., None]).sum(axis=-1)
    resid = Yt - row[..., None, :] - col[..., :, None] + g[..., None, None]
    ss_e = np.square(resid).reshape(lead + (k * n,)).sum(axis=-1)
    rows_equal = (Yt[..., :, 1:] == Yt[..., :, :1]).reshape(lead + (k * (n - 1),)).all(axis=-1)
    cols_equal = (Yt[..., 1:, :] == Yt[..., :1, :]).reshape(lead + ((k - 1) * n,)).all(axis=-1)
    zero = np.zeros_like(ss_r)
    ss_r = np.where(rows_equal, zero, ss_r)
    ss_c = np.where(cols_equal, zero, ss_c)
    ss_e = np.where(rows_equal | cols_equal, zero, ss_e)
    return ss_r, ss_c, ss_e


def _sums_of_squares_k2(y1: np.ndarray, y2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """k = 2 in closed form on s = y1 + y2 and d = y1 − y2 (fewer passes over a (28, 1000, 9) batch):
    SS_R = 2·Σ(s/2 − ḡ)², SS_C = n·d̄²/2, SS_E = Σ(d − d̄)²/2 (the residuals are ±(d − d̄)/2)."""
    y1 = np.ascontiguousarray(y1)
    y2 = np.ascontiguousarray(y2)
    n = y1.shape[-1]
    row = (y1 + y2) / 2.0
    d = y1 - y2
    g = row.mean(axis=-1)
    d_bar = d.mean(axis=-1)
    ss_r = 2.0 * np.square(row - g[..., None]).sum(axis=-1)
    ss_c = n * d_bar * d_bar / 2.0
    ss_e = np.square(d - d_bar[..., None]).sum(axis=-1) / 2.0
    rows_equal = ((y1 == y1[..., :1]) & (y2 == y2[..., :1])).all(axis=-1)
    cols_equal = (d == 0).all(axis=-1)
    zero = np.zeros_like(ss_r)
    ss_r = np.where(rows_equal, zero, ss_r)
    ss_c = np.where(cols_equal, zero, ss_c)
    ss_e = np.where(rows_equal | cols_equal, zero, ss_e)
    return ss_r, ss_c, ss_e


def anova_two_way(Y: np.ndarray) -> tuple[np.ndarray | float, np.ndarray | float, np.ndarray | float]:
    """Two-way ANOVA without replication of Y (..., n, k) -> (ms_r, ms_c, ms_e), each of shape Y.shape[:-2]
    (floats for a single matrix). df: n−1, k−1, (n−1)(k−1); a zero df gives NaN."""
    Y, n, k = _as_matrix(Y)
    ss_r, ss_c, ss_e = _sums_of_squares(Y)
    ms_r = div(ss_r, np.float64(n - 1))
    ms_c = div(ss_c, np.float64(k - 1))
    ms_e = div(ss_e, np.float64((n - 1) * (k - 1)))
    return scalar(ms_r), scalar(ms_c), scalar(ms_e)


def _c1(ms_r: np.ndarray, ms_e: np.ndarray, k: int) -> np.ndarray:
    return div(ms_r - ms_e, ms_r + (k - 1) * ms_e)


def _a1(ms_r: np.ndarray, ms_c: np.ndarray, ms_e: np.ndarray, n: int | np.ndarray, k: int) -> np.ndarray:
    return div(ms_r - ms_e, ms_r + (k - 1) * ms_e + k * (ms_c - ms_e) / n)


def icc_c1(Y: np.ndarray) -> np.ndarray | float:
    """ICC(C,1), consistency, single measure = Shrout–Fleiss ICC(3,1) (pingouin ICC3)."""
    Y, n, k = _as_matrix(Y)
    ms_r, _ms_c, ms_e = (np.asarray(m) for m in anova_two_way(Y))
    return scalar(_c1(ms_r, ms_e, k))


def icc_a1(Y: np.ndarray) -> np.ndarray | float:
    """ICC(A,1), absolute agreement, single measure = Shrout–Fleiss ICC(2,1) (pingouin ICC2)."""
    Y, n, k = _as_matrix(Y)
    ms_r, ms_c, ms_e = (np.asarray(m) for m in anova_two_way(Y))
    return scalar(_a1(ms_r, ms_c, ms_e, n, k))


def icc_c1_a1(Y: np.ndarray) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Both single-measure ICCs from one ANOVA (what a bootstrap wants): (ICC(C,1), ICC(A,1))."""
    Y, n, k = _as_matrix(Y)
    ms_r, ms_c, ms_e = (np.asarray(m) for m in anova_two_way(Y))
    return scalar(_c1(ms_r, ms_e, k)), scalar(_a1(ms_r, ms_c, ms_e, n, k))


def _fq(q: float, d1: np.ndarray | float, d2: np.ndarray | float) -> np.ndarray:
    """Quantile of F(d1, d2); NaN for non-finite or non-positive df (scipy would too, without warning)."""
    d1 = np.asarray(d1, dtype=np.float64)
    d2 = np.asarray(d2, dtype=np.float64)
    ok = np.isfinite(d1) & np.isfinite(d2) & (d1 > 0) & (d2 > 0)
    with np.errstate(all="ignore"):
        # imported here: scipy.stats costs about 2 s of CPU, which planning and calling the models never need
        from scipy import stats as _st

        out = _st.f.ppf(q, np.where(ok, d1, 1.0), np.where(ok, d2, 1.0))
    return np.where(ok, out, np.nan)


def _all_from_ms(ms_r: np.ndarray, ms_c: np.ndarray, ms_e: np.ndarray, ss_c: np.ndarray,
                 ss_e: np.ndarray, n: int, k: int, alpha: float) -> dict[str, np.ndarray]:
    """pingouin.intraclass_corr's formulas (0.5–0.7), vectorised."""
    msw = div(ss_c + ss_e, np.float64(n * (k - 1)))  # one-way within-target mean square
    out: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        icc1 = div(ms_r - msw, ms_r + (k - 1) * msw)
        icc2 = _a1(ms_r, ms_c, ms_e, n, k)
        icc3 = _c1(ms_r, ms_e, k)
        icc1k = div(ms_r - msw, ms_r)
        icc2k = div(ms_r - ms_e, ms_r + (ms_c - ms_e) / n)
        icc3k = div(ms_r - ms_e, ms_r)
        f1 = div(ms_r, msw)
        f3 = div(ms_r, ms_e)
        df1 = n - 1
        df1kd = n * (k - 1)
        df2kd = (n - 1) * (k - 1)
        q = 1 - alpha / 2
        # Cases 1 and 3: exact F intervals.
        f1l = f1 / _fq(q, df1, df1kd)
        f1u = f1 * _fq(q, df1kd, df1)
        f3l = f3 / _fq(q, df1, df2kd)
        f3u = f3 * _fq(q, df2kd, df1)
        l1, u1 = (f1l - 1) / (f1l + (k - 1)), (f1u - 1) / (f1u + (k - 1))
        l3, u3 = (f3l - 1) / (f3l + (k - 1)), (f3u - 1) / (f3u + (k - 1))
        # Case 2: Satterthwaite-type approximate df (McGraw & Wong 1996, Table 7).
        fj = div(ms_c, ms_e)
        c = n * (1 + (k - 1) * icc2) - k * icc2
        v = div(df2kd * (k * icc2 * fj + c) ** 2, df1 * k**2 * icc2**2 * fj**2 + c**2)
        f_star = _fq(q, n - 1, v)
        f_2star = _fq(q, v, n - 1)
        l2 = div(n * (ms_r - f_star * ms_e), f_star * (k * ms_c + (k * n - k - n) * ms_e) + n * ms_r)
        u2 = div(n * (f_2star * ms_r - ms_e), k * ms_c + (k * n - k - n) * ms_e + n * f_2star * ms_r)
        cis = {
            "ICC1": (l1, u1),
            "ICC2": (l2, u2),
            "ICC3": (l3, u3),
            "ICC1k": (1 - 1 / f1l, 1 - 1 / f1u),
            "ICC2k": (l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1))),
            "ICC3k": (1 - 1 / f3l, 1 - 1 / f3u),
        }
    # A denominator that is zero up to rounding (ms_r + (ms_c − ms_e)/n for ICC2k) is a degenerate design,
    # not a huge ICC: NaN, never ~1e16.
    scale = np.abs(ms_r) + np.abs(ms_c) + np.abs(ms_e)
    with np.errstate(all="ignore"):
        tiny = 1e-12 * scale
        icc2 = np.where(np.abs(ms_r + (k - 1) * ms_e + k * (ms_c - ms_e) / n) <= tiny, np.nan, icc2)
        icc2k = np.where(np.abs(ms_r + (ms_c - ms_e) / n) <= tiny, np.nan, icc2k)
    vals = {"ICC1": icc1, "ICC2": icc2, "ICC3": icc3, "ICC1k": icc1k, "ICC2k": icc2k, "ICC3k": icc3k}
    for name in ICC_FORMS:
        out[name] = vals[name]
        lo, hi = (np.asarray(b, dtype=np.float64) for b in cis[name])
        # perfect agreement (no residual variance): the F statistic is infinite and the interval is [1, 1]
        exact = np.asarray(vals[name] == 1.0) & ~np.isfinite(lo)
        out[f"{name}_lo"] = np.where(exact, 1.0, lo)
        out[f"{name}_hi"] = np.where(np.asarray(vals[name] == 1.0) & ~np.isfinite(hi), 1.0, hi)
    for alias, name in ALIASES.items():
        out[alias] = out[name]
        out[f"{alias}_lo"] = out[f"{name}_lo"]
        out[f"{alias}_hi"] = out[f"{name}_hi"]
    out.update(ms_r=ms_r, ms_c=ms_c, ms_e=ms_e, ms_w=msw, F1=f1, F3=f3, F_j=fj, df_v=v)
    return out


def icc_all(Y: np.ndarray, alpha: float = 0.05) -> dict[str, np.ndarray | float]:
    """All six Shrout–Fleiss ICCs with their analytic (1 − alpha) intervals, as a flat dict.

    Keys: ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k and aliases c1 (=ICC3), a1 (=ICC2), ck (=ICC3k),
    ak (=ICC2k); for each, `<key>_lo` and `<key>_hi`; plus ms_r, ms_c, ms_e, ms_w (one-way within),
    F1 = ms_r/ms_w, F3 = ms_r/ms_e, F_j = ms_c/ms_e, df_v (ICC2's approximate df), n, k.
    Values are floats for one matrix, arrays of shape Y.shape[:-2] for a batch. Negative bounds are kept.
    """
    Y, n, k = _as_matrix(Y)
    ss_r, ss_c, ss_e = _sums_of_squares(Y)
    ms_r = div(ss_r, np.float64(n - 1))
    ms_c = div(ss_c, np.float64(k - 1))
    ms_e = div(ss_e, np.float64((n - 1) * (k - 1)))
    raw = _all_from_ms(ms_r, ms_c, ms_e, ss_c, ss_e, n, k, alpha)
    out: dict[str, np.ndarray | float] = {key: scalar(val) for key, val in raw.items()}
    out["n"] = n
    out["k"] = k
    return out


def icc_analytic_ci(Y: np.ndarray, form: str, alpha: float = 0.05) -> tuple[np.ndarray | float, np.ndarray | float]:
    """F-based (1 − alpha) interval of one ICC form: 'ICC1'…'ICC3k' or an alias ('c1', 'a1', 'ck', 'ak')."""
    key = ALIASES.get(form, form)
    if key not in ICC_FORMS:
        raise ValueError(f"unknown ICC form {form!r}; expected one of {ICC_FORMS + tuple(ALIASES)}")
    res = icc_all(Y, alpha)
    return res[f"{key}_lo"], res[f"{key}_hi"]


def icc_k2_from_sums(N: np.ndarray, S_h: np.ndarray, S_l: np.ndarray, S_hh: np.ndarray, S_ll: np.ndarray,
                     S_hl: np.ndarray) -> tuple[np.ndarray | float, ...]:
    """ICC(C,1), ICC(A,1), ms_r, ms_c, ms_e of the N × 2 matrix [h, l] from its sufficient statistics
    (docs/statistics.md#cluster-bootstrap). Arguments broadcast, so (B,) arrays of replicate totals
    (`W @ per_cluster_sums`) give all B replicates at once. SS_E is clipped at 0 (cancellation noise)."""
    N = np.asarray(N, dtype=np.float64)
    S_h, S_l, S_hh, S_ll, S_hl = (np.asarray(x, dtype=np.float64) for x in (S_h, S_l, S_hh, S_ll, S_hl))
    with np.errstate(all="ignore"):
        g = (S_h + S_l) / (2 * N)
        two_n_g2 = 2 * N * g * g
        ss_t = S_hh + S_ll - two_n_g2
        ss_c = N * ((S_h / N - g) ** 2 + (S_l / N - g) ** 2)
        ss_r = (S_hh + S_ll + 2 * S_hl) / 2 - two_n_g2
        ss_e = np.maximum(ss_t - ss_r - ss_c, 0.0)
        ss_r = np.maximum(ss_r, 0.0)
    ms_r = div(ss_r, N - 1)
    ms_c = ss_c  # df = k − 1 = 1
    ms_e = div(ss_e, N - 1)
    c1 = _c1(ms_r, ms_e, 2)
    a1 = _a1(ms_r, ms_c, ms_e, N, 2)
    return tuple(scalar(x) for x in (c1, a1, ms_r, ms_c, ms_e))


def pair_sums(h: np.ndarray, l: np.ndarray) -> np.ndarray:  # noqa: E741
    """Per-row sufficient statistics [1, h, l, h², l², h·l] (shape (n, 6)); sum rows within a cluster
    (e.g. with np.add.at or bincount) to get per-cluster totals for `icc_k2_from_sums`."""
    hh = np.asarray(h, dtype=np.float64)
    ll = np.asarray(l, dtype=np.float64)
    return np.stack([np.ones_like(hh), hh, ll, hh * hh, ll * ll, hh * ll], axis=-1)


def icc_k2_from_sum_matrix(T: np.ndarray) -> tuple[np.ndarray | float, ...]:
    """`icc_k2_from_sums` with the six totals on the last axis of T (as produced by `W @ pair_sums`)."""
    T = np.asarray(T, dtype=np.float64)
    return icc_k2_from_sums(*(T[..., j] for j in range(6)))


def faithful_bootstrap(Y: np.ndarray, n_boot: int = 1000, seed: int = 42, level: float = 0.95,
                       min_valid: int = 10) -> dict[str, np.ndarray]:
    """The authors' legacy bootstrap of ICC(C,1) and ICC(A,1) (docs/statistics.md#legacy-bootstrap), vectorised.

    Y: (..., n, k), e.g. (28 cells, 9 sources, 2). Rows are resampled with the legacy-RNG index vectors
    (`legacy_index_matrix(n, n_boot, seed)`, shared by every cell with the same n). A replicate where
    either ICC is NaN is dropped for both; otherwise values outside [0, 1] are dropped per form. Bounds are
    np.percentile of the kept values (NaN with fewer than `min_valid`), bit-identical to the literal loop.

    Returns c1, a1 (point estimates), c1_lo, c1_hi, a1_lo, a1_hi, n_boot_valid_c1, n_boot_valid_a1 (shape
    Y.shape[:-2]) and c1_reps, a1_reps (shape Y.shape[:-2] + (n_boot,), NaN where dropped).
    """

    Y, n, k = _as_matrix(Y)
    idx = legacy_index_matrix(n, n_boot, seed)
    c, a = (np.asarray(x) for x in icc_c1_a1(Y[..., idx, :]))  # (..., B)
    dropped = np.isnan(c) | np.isnan(a)
    keep_c = ~dropped & np.isfinite(c) & (c >= 0) & (c <= 1)
    keep_a = ~dropped & np.isfinite(a) & (a >= 0) & (a <= 1)
    c_reps = np.where(keep_c, c, np.nan)
    a_reps = np.where(keep_a, a, np.nan)
    c_lo, c_hi = percentile_ci_nan(c_reps, level, min_valid)
    a_lo, a_hi = percentile_ci_nan(a_reps, level, min_valid)
    c0, a0 = icc_c1_a1(Y)
    return {
        "c1": c0, "a1": a0,
        "c1_lo": scalar(c_lo), "c1_hi": scalar(c_hi), "a1_lo": scalar(a_lo), "a1_hi": scalar(a_hi),
        "n_boot_valid_c1": scalar(keep_c.sum(axis=-1)), "n_boot_valid_a1": scalar(keep_a.sum(axis=-1)),
        "c1_reps": c_reps, "a1_reps": a_reps,
    }
