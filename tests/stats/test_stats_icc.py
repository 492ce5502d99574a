"""ICC library (docs/statistics.md#icc, §5.1, §5.4, §5.7): against pingouin, a literal ANOVA, explicit
resampling, and the invariances the definitions imply."""

from __future__ import annotations

import contextlib

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from trustmh.stats import icc
from trustmh.stats.bootstrap import cluster_draw_counts, cluster_indices

FORMS = {  # ours -> pingouin 0.7 Type label
    "ICC1": "ICC(1,1)",
    "ICC2": "ICC(A,1)",
    "ICC3": "ICC(C,1)",
    "ICC1k": "ICC(1,k)",
    "ICC2k": "ICC(A,k)",
    "ICC3k": "ICC(C,k)",
}
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.dropna")
SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def _pingouin_unrounded():
    """pingouin rounds CI95 to 2 decimals by default (options['round.column.CI95'] = 2); switch it off."""
    old = pg.options.get("round.column.CI95", None)
    pg.options["round.column.CI95"] = None
    try:
        yield
    finally:
        pg.options["round.column.CI95"] = old


def _pingouin(Y: np.ndarray, rounded: bool = False) -> pd.DataFrame:
    n, k = Y.shape
    long = pd.DataFrame({"t": np.repeat(np.arange(n), k), "r": np.tile(np.arange(k), n), "y": Y.ravel()})
    if rounded:
        res = pg.intraclass_corr(data=long, targets="t", raters="r", ratings="y")
    else:
        with _pingouin_unrounded():
            res = pg.intraclass_corr(data=long, targets="t", raters="r", ratings="y")
    return res.set_index("Type")


def _random_matrix(n: int, k: int, seed: int, top: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # A target effect plus noise, so ICCs spread over (-1, 1) rather than clustering at 0.
    base = rng.integers(1, top + 1, size=(n, 1))
    noise = rng.integers(-1, 2, size=(n, k)) * rng.integers(0, 2, size=(1, k))
    return np.clip(base + noise + rng.integers(0, 2, size=(n, k)), 0, top + 1).astype(float)


def _literal_anova(Y: np.ndarray) -> tuple[float, float, float]:
    """docs/align.md#align.1 written out with loops."""
    n, k = Y.shape
    g = sum(Y[i, j] for i in range(n) for j in range(k)) / (n * k)
    rm = [sum(Y[i, j] for j in range(k)) / k for i in range(n)]
    cm = [sum(Y[i, j] for i in range(n)) / n for j in range(k)]
    ss_r = k * sum((r - g) ** 2 for r in rm)
    ss_c = n * sum((c - g) ** 2 for c in cm)
    ss_t = sum((Y[i, j] - g) ** 2 for i in range(n) for j in range(k))
    ss_e = ss_t - ss_r - ss_c
    return ss_r / (n - 1), ss_c / (k - 1), ss_e / ((n - 1) * (k - 1))


matrices = st.builds(
    _random_matrix,
    n=st.sampled_from([3, 9, 500]),
    k=st.sampled_from([2, 3]),
    seed=st.integers(0, 2**32 - 1),
    top=st.sampled_from([2, 5, 100]),
)


@SETTINGS
@given(Y=matrices)
def test_every_form_and_ci_equals_pingouin(Y: np.ndarray) -> None:
    ms_r, _ms_c, ms_e = icc.anova_two_way(Y)
    assume(ms_r > 1e-9 and ms_e > 1e-9)  # pingouin divides by zero on degenerate matrices
    ref = _pingouin(Y)
    ours = icc.icc_all(Y)
    k = Y.shape[1]
    n = Y.shape[0]
    for form, label in FORMS.items():
        if form == "ICC2k" and abs(ours["ms_r"] + (ours["ms_c"] - ours["ms_e"]) / n) < 1e-9:
            continue  # ICC(A,k)'s denominator is 0 up to rounding: both sides are ±1e16 noise
        assert ours[form] == pytest.approx(ref.at[label, "ICC"], abs=1e-9, rel=1e-9), form
        lo, hi = ref.at[label, "CI95"]
        if form == "ICC2k":
            # ICC(A,k) bounds are l·k/(1 + l(k−1)) of ICC(A,1)'s: near the pole l = −1/(k−1) they are
            # ill-conditioned (±1e16 from 1e-16 differences), so compare only away from it.
            pole = min(abs(1 + ours["ICC2_lo"] * (k - 1)), abs(1 + ours["ICC2_hi"] * (k - 1)))
            if pole < 1e-6:
                continue
        assert ours[f"{form}_lo"] == pytest.approx(lo, abs=1e-9, rel=1e-9), form
        assert ours[f"{form}_hi"] == pytest.approx(hi, abs=1e-9, rel=1e-9), form
        assert icc.icc_analytic_ci(Y, form) == (ours[f"{form}_lo"], ours[f"{form}_hi"])
    assert icc.icc_c1(Y) == ours["ICC3"] == ours["c1"]
    assert icc.icc_a1(Y) == ours["ICC2"] == ours["a1"]
    assert ours["F3"] == pytest.approx(ref.at["ICC(C,1)", "F"], rel=1e-9)
    assert ours["F1"] == pytest.approx(ref.at["ICC(1,1)", "F"], rel=1e-9)


def test_pingouin_default_rounding_is_two_decimals() -> None:
    """What the installed pingouin does by default: CI95 rounded to 2 decimals (within 0.005 of ours)."""
    Y = _random_matrix(9, 2, seed=7, top=5)
    ref = _pingouin(Y, rounded=True)
    ours = icc.icc_all(Y)
    for form, label in FORMS.items():
        lo, hi = ref.at[label, "CI95"]
        assert abs(ours[f"{form}_lo"] - lo) <= 0.005 + 1e-12
        assert abs(ours[f"{form}_hi"] - hi) <= 0.005 + 1e-12


@SETTINGS
@given(Y=st.builds(_random_matrix, n=st.sampled_from([3, 4, 9, 25]), k=st.sampled_from([2, 3, 4]),
                   seed=st.integers(0, 2**32 - 1), top=st.sampled_from([5, 100])))
def test_anova_equals_literal_formulas(Y: np.ndarray) -> None:
    ours = icc.anova_two_way(Y)
    ref = _literal_anova(Y)
    for a, b in zip(ours, ref, strict=True):
        assert a == pytest.approx(b, abs=1e-9, rel=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_batch_is_bit_identical_to_one_matrix_at_a_time(k: int) -> None:
    rng = np.random.default_rng(11)
    Y = rng.integers(1, 6, size=(4, 12, 9, k)) + rng.normal(0, 0.1, size=(4, 12, 9, k))
    Y[0, 0] = 3.0  # a constant matrix: NaN inside a batch too
    c, a = icc.icc_c1_a1(Y)
    allv = icc.icc_all(Y)
    ms = icc.anova_two_way(Y)
    assert c.shape == a.shape == (4, 12)
    for i in range(4):
        for j in range(12):
            one = Y[i, j]
            assert np.array_equal(c[i, j], icc.icc_c1(one), equal_nan=True)
            assert np.array_equal(a[i, j], icc.icc_a1(one), equal_nan=True)
            single = icc.icc_all(one)
            for key in ("ICC1", "ICC2k", "ICC3_lo", "ICC2_hi"):
                assert np.array_equal(allv[key][i, j], single[key], equal_nan=True), key
            for m_batch, m_one in zip(ms, icc.anova_two_way(one), strict=True):
                assert np.array_equal(m_batch[i, j], m_one, equal_nan=True)
    assert np.isnan(c[0, 0])
    assert np.isnan(a[0, 0])


def test_zero_denominators_give_nan_and_exact_degenerate_cases() -> None:
    const = np.full((5, 2), 3.0)
    assert np.isnan(icc.icc_c1(const))
    assert np.isnan(icc.icc_a1(const))
    # Every bootstrap draw hit the same row: MS_R = MS_E = 0 exactly, so ICC(C,1) is undefined.
    same_row = np.tile([[3.7245, 4.1]], (9, 1))
    ms_r, ms_c, ms_e = icc.anova_two_way(same_row)
    assert ms_r == 0.0
    assert ms_e == 0.0
    assert ms_c > 0
    assert np.isnan(icc.icc_c1(same_row))
    # Raters identical on every row: perfect agreement, exactly 1 (not 1 ± 1e-16, which a [0, 1] filter
    # would drop).
    ident = np.repeat(np.array([[1.1], [2.3], [3.7], [4.9]]), 2, axis=1)
    assert icc.icc_c1(ident) == 1.0
    assert icc.icc_a1(ident) == 1.0
    # n = 1: no df for rows.
    assert np.isnan(icc.icc_c1(np.array([[1.0, 2.0]])))
    with pytest.raises(ValueError):
        icc.icc_c1(np.arange(3.0))
    with pytest.raises(ValueError):
        icc.icc_analytic_ci(ident, "ICC4")


# ----------------------------------------------------------------------------------------- invariances

finite_matrices = st.builds(
    lambda n, seed: np.random.default_rng(seed).normal(3.0, 1.0, size=(n, 2)) + np.linspace(0, 2, n)[:, None],
    n=st.integers(3, 40), seed=st.integers(0, 2**32 - 1))


@SETTINGS
@given(Y=finite_matrices, perm_seed=st.integers(0, 2**32 - 1))
def test_swapping_raters_and_permuting_rows_leave_iccs_unchanged(Y: np.ndarray, perm_seed: int) -> None:
    c, a = icc.icc_c1(Y), icc.icc_a1(Y)
    swapped = Y[:, ::-1]
    perm = Y[np.random.default_rng(perm_seed).permutation(Y.shape[0])]
    for other in (swapped, perm):
        assert icc.icc_c1(other) == pytest.approx(c, abs=1e-12)
        assert icc.icc_a1(other) == pytest.approx(a, abs=1e-12)


@SETTINGS
@given(Y=finite_matrices, shift=st.floats(0.05, 5.0))
def test_shifting_one_rater(Y: np.ndarray, shift: float) -> None:
    c, a = icc.icc_c1(Y), icc.icc_a1(Y)
    assume(c > 0.05)
    # Shift the rater with the larger mean upwards, so the mean difference widens.
    j = int(np.argmax(Y.mean(axis=0)))
    shifted = Y.copy()
    shifted[:, j] += shift
    assert icc.icc_c1(shifted) == pytest.approx(c, abs=1e-9)
    assert icc.icc_a1(shifted) < a


def test_analytic_ci_coverage_on_simulated_data() -> None:
    """ICC(C,1)'s F interval is exact under the two-way model; ICC(A,1)'s is approximate. 2000 datasets
    of n = 30, k = 2 with target variance 1, rater variance 0.25 and error variance 1:
    ICC(C,1) = 1/2, ICC(A,1) = 1/2.25."""
    rng = np.random.default_rng(2024)
    reps, n, k = 2000, 30, 2
    targets = rng.normal(0, 1, size=(reps, n, 1))
    raters = rng.normal(0, 0.5, size=(reps, 1, k))
    Y = targets + raters + rng.normal(0, 1, size=(reps, n, k))
    res = icc.icc_all(Y)
    cover_c = np.mean((res["c1_lo"] <= 0.5) & (res["c1_hi"] >= 0.5))
    cover_a = np.mean((res["a1_lo"] <= 1 / 2.25) & (res["a1_hi"] >= 1 / 2.25))
    assert 0.93 <= cover_c <= 0.97
    assert 0.91 <= cover_a <= 0.99


# ----------------------------------------------------------------------- sufficient statistics, k = 2

def _clustered_pairs(seed: int, n_conv: int = 60, n_src: int = 9) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    conv = np.repeat(np.arange(n_conv), n_src)
    h = rng.integers(1, 6, size=conv.size).astype(float)
    l = np.clip(h + rng.integers(-2, 3, size=conv.size) + 0.5 * rng.integers(0, 2, size=conv.size), 1, 5)  # noqa: E741
    keep = rng.random(conv.size) > 0.15  # missing pairs: clusters of unequal size
    return conv[keep], h[keep], l[keep]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_icc_k2_from_sums_equals_explicit_resampling(seed: int) -> None:
    conv, h, l = _clustered_pairs(seed)  # noqa: E741
    n_conv = int(conv.max()) + 1
    per_cluster = np.zeros((n_conv, 6))
    np.add.at(per_cluster, conv, icc.pair_sums(h, l))
    W = cluster_draw_counts(n_conv, 20, seed=seed + 100)
    draws = cluster_indices(n_conv, 20, seed=seed + 100)
    T = W @ per_cluster
    c_fast, a_fast, msr_fast, msc_fast, mse_fast = icc.icc_k2_from_sum_matrix(T)
    # Same thing through the keyword-style entry point.
    c_kw = icc.icc_k2_from_sums(T[:, 0], T[:, 1], T[:, 2], T[:, 3], T[:, 4], T[:, 5])[0]
    assert np.array_equal(c_kw, c_fast)
    for b in range(20):
        rows = np.concatenate([np.flatnonzero(conv == c) for c in draws[b]])
        Y = np.column_stack([h[rows], l[rows]])
        ms_r, ms_c, ms_e = icc.anova_two_way(Y)
        assert c_fast[b] == pytest.approx(icc.icc_c1(Y), abs=1e-10)
        assert a_fast[b] == pytest.approx(icc.icc_a1(Y), abs=1e-10)
        assert msr_fast[b] == pytest.approx(ms_r, abs=1e-10)
        assert msc_fast[b] == pytest.approx(ms_c, abs=1e-10)
        assert mse_fast[b] == pytest.approx(ms_e, abs=1e-10)
    # Point estimate from the full-sample totals.
    full = per_cluster.sum(axis=0)
    c0, a0, *_ = icc.icc_k2_from_sum_matrix(full)
    Y = np.column_stack([h, l])
    assert c0 == pytest.approx(icc.icc_c1(Y), abs=1e-10)
    assert a0 == pytest.approx(icc.icc_a1(Y), abs=1e-10)


def test_icc_k2_from_sums_degenerate_totals() -> None:
    # One pair only (N = 1): no df -> NaN; identical raters -> 1.
    c, a, *_ = icc.icc_k2_from_sums(1.0, 3.0, 4.0, 9.0, 16.0, 12.0)
    assert np.isnan(c)
    assert np.isnan(a)
    h = np.array([1.0, 2.0, 5.0])
    T = icc.pair_sums(h, h).sum(axis=0)
    c, a, *_ = icc.icc_k2_from_sum_matrix(T)
    assert c == pytest.approx(1.0, abs=1e-12)
    assert a == pytest.approx(1.0, abs=1e-12)


def test_pingouin_on_an_ill_conditioned_matrix() -> None:
    """A matrix where ICC(A,k)'s denominator is 0 up to rounding (found by hypothesis): the other forms and
    the well-conditioned bounds still agree with pingouin."""
    Y = np.array([[4.0, 3.0], [4.0, 4.0], [3.0, 4.0]])
    ref = _pingouin(Y)
    ours = icc.icc_all(Y)
    for form in ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC3k"):
        assert ours[form] == pytest.approx(ref.at[FORMS[form], "ICC"], abs=1e-9, rel=1e-9)
        assert ours[f"{form}_lo"] == pytest.approx(ref.at[FORMS[form], "CI95"][0], abs=1e-9, rel=1e-9)


def test_degenerate_inputs_say_so() -> None:
    """NaN in one matrix is an error that says why; perfect agreement has the interval [1, 1]; a denominator
    that is zero up to rounding gives NaN, never ~1e16."""
    from trustmh.stats.icc import icc_all

    with pytest.raises(ValueError, match="1 target\\(s\\) have a missing"):
        icc_all(np.array([[1.0, 2.0], [np.nan, 3.0], [4.0, 4.0]]))
    batch = np.stack([np.array([[1.0, 2.0], [2.0, 3.0], [4.0, 4.0]]), np.full((3, 2), np.nan)])
    assert np.isnan(icc_all(batch)["a1"][1])  # a NaN bootstrap replicate stays NaN, no error
    same = np.array([[1.0, 1.0], [3.0, 3.0], [5.0, 5.0], [2.0, 2.0]])
    res = icc_all(same)
    for form in ("ICC2", "ICC3", "ICC2k", "ICC3k"):
        assert res[form] == pytest.approx(1.0)
        assert (res[f"{form}_lo"], res[f"{form}_hi"]) == (1.0, 1.0)
    # ms_r + (ms_c − ms_e)/n is exactly 0 for [[1,1],[1,2],[2,1]]; after scaling it is ~1e-18 in floats
    ill = np.array([[1.0, 1.0], [1.0, 2.0], [2.0, 1.0]]) * 0.3 + 1.7  # unguarded: ~1.7e16
    ms_r, ms_c, ms_e = (icc_all(ill)[m] for m in ("ms_r", "ms_c", "ms_e"))
    assert abs(ms_r + (ms_c - ms_e) / 3) < 1e-15  # the design really is degenerate
    assert np.isnan(icc_all(ill)["ICC2k"])
