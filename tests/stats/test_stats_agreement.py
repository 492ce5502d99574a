"""Agreement statistics (docs/statistics.md#agreement, §5.5) against the reference libraries and
the written-out formulas."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from trustmh.core import TrustmhError
from trustmh.stats import agreement as ag

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning:statsmodels")
SETTINGS = settings(max_examples=50, deadline=None)
SCALE = [1, 2, 3, 4, 5]


def _pairs(seed: int, n: int, spread: int, values: list[int] = SCALE) -> tuple[np.ndarray, np.ndarray]:
    """Correlated ordinal pairs on `values` (spread 0 = identical raters)."""
    rng = np.random.default_rng(seed)
    i = rng.integers(0, len(values), size=n)
    j = np.clip(i + rng.integers(-spread, spread + 1, size=n), 0, len(values) - 1)
    v = np.asarray(values)
    return v[i], v[j]


pair_args = {"seed": st.integers(0, 2**32 - 1), "n": st.integers(2, 300), "spread": st.integers(0, 4)}


# ------------------------------------------------------------------------------------------------- κ

@SETTINGS
@given(**pair_args, weights=st.sampled_from(["quadratic", "linear", None]), fixed=st.booleans())
def test_cohen_kappa_equals_sklearn(seed: int, n: int, spread: int, weights: str | None, fixed: bool) -> None:
    a, b = _pairs(seed, n, spread)
    labels = SCALE if fixed else None
    observed = set(a.tolist()) | set(b.tolist())
    assume(len(observed) > 1)
    ours = ag.cohen_kappa(a, b, weights=weights, labels=labels)
    ref = cohen_kappa_score(a, b, weights=weights, labels=labels)
    assert ours == pytest.approx(ref, abs=1e-9, rel=0)


def test_cohen_kappa_labels_matter_and_table_form_is_vectorised() -> None:
    a = np.array([1, 1, 2, 5, 5, 2, 1, 5])
    b = np.array([1, 2, 2, 5, 2, 5, 1, 5])
    # Without labels, 3 and 4 are not categories and 2→5 is one step; on the 1–5 scale it is three.
    assert ag.cohen_kappa(a, b, weights="quadratic") != pytest.approx(ag.cohen_kappa(a, b, weights="quadratic", labels=SCALE))
    tables = []
    for seed in range(6):
        x, y = _pairs(seed, 80, 2)
        tables.append(ag.confusion_table(x, y, SCALE)[0])
    T = np.stack(tables).reshape(2, 3, 5, 5)
    for w in ("quadratic", "linear", None):
        batch = ag.cohen_kappa_from_table(T, w)
        assert batch.shape == (2, 3)
        for i in range(2):
            for j in range(3):
                assert batch[i, j] == ag.cohen_kappa_from_table(T[i, j], w)
    # §4.3's normalised weights (i − j)²/16 and |i − j|/4 give the same κ (scale cancels).
    x, y = _pairs(1, 80, 2)
    t = ag.confusion_table(x, y, SCALE)[0]
    p = t / t.sum()
    e = np.outer(p.sum(1), p.sum(0))
    idx = np.arange(5)
    w16 = (idx[:, None] - idx[None, :]) ** 2 / 16
    assert ag.cohen_kappa(x, y, weights="quadratic", labels=SCALE) == pytest.approx(1 - (w16 * p).sum() / (w16 * e).sum(), abs=1e-12)
    assert np.isnan(ag.cohen_kappa([2, 2, 2], [2, 2, 2], weights="quadratic"))


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n_sub=st.integers(2, 60), n_rat=st.integers(2, 8),
       n_cat=st.integers(2, 6), method=st.sampled_from(["fleiss", "randolph"]))
def test_fleiss_kappa_equals_statsmodels(seed: int, n_sub: int, n_rat: int, n_cat: int, method: str) -> None:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(n_cat), size=n_sub)
    table = np.stack([rng.multinomial(n_rat, p) for p in probs])
    ref = sm_fleiss_kappa(table, method=method)
    assume(np.isfinite(ref))
    assert ag.fleiss_kappa(table, method=method) == pytest.approx(ref, abs=1e-9, rel=0)


def test_fleiss_kappa_from_ratings_and_bad_tables() -> None:
    ratings = np.array([[1, 1, 2], [2, 2, 2], [3, 1, 3], [1, 2, 3]])
    table = ag.ratings_to_table(ratings, categories=[1, 2, 3])
    assert table.tolist() == [[2, 1, 0], [0, 3, 0], [1, 0, 2], [1, 1, 1]]
    assert ag.fleiss_kappa(table) == pytest.approx(sm_fleiss_kappa(table), abs=1e-12)
    with pytest.raises(TrustmhError, match="same number"):
        ag.fleiss_kappa(np.array([[2, 1], [1, 1]]))


# ------------------------------------------------------------------------------------------------- α

@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), coders=st.integers(2, 5), units=st.integers(2, 60),
       missing=st.floats(0, 0.4), level=st.sampled_from(["nominal", "ordinal", "interval", "ratio"]),
       gaps=st.booleans())
def test_krippendorff_alpha_equals_package(seed: int, coders: int, units: int, missing: float, level: str,
                                           gaps: bool) -> None:
    rng = np.random.default_rng(seed)
    values = np.array([1, 3, 4, 7, 9]) if gaps else np.arange(1, 6)
    truth = rng.integers(0, values.size, size=units)
    idx = np.clip(truth + rng.integers(-1, 2, size=(coders, units)), 0, values.size - 1)
    data = values[idx].astype(float)
    data[rng.random(data.shape) < missing] = np.nan
    pairable = (np.isfinite(data).sum(axis=0) >= 2).sum()
    assume(pairable >= 1 and np.unique(data[:, np.isfinite(data).sum(axis=0) >= 2][np.isfinite(
        data[:, np.isfinite(data).sum(axis=0) >= 2])]).size >= 2)
    ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ag.krippendorff_alpha(data, level=level) == pytest.approx(ref, abs=1e-9, rel=0)


@SETTINGS
@given(**pair_args, values=st.sampled_from([SCALE, [1, 2, 4, 5], [2, 5]]))
def test_kripp_alpha_ordinal_from_counts_equals_package(seed: int, n: int, spread: int, values: list[int]) -> None:
    h, llm = _pairs(seed, n, spread, values)
    assume(len(set(h.tolist()) | set(llm.tolist())) > 1)
    counts = ag.confusion_table(h, llm, SCALE)[0]  # empty categories stay in the 5 × 5 table
    ref = krippendorff.alpha(reliability_data=np.stack([h, llm]).astype(float), level_of_measurement="ordinal")
    assert ag.kripp_alpha_ordinal_from_counts(counts) == pytest.approx(ref, abs=1e-9, rel=0)
    assert ag.kripp_alpha_from_counts(counts, "ordinal") == ag.kripp_alpha_ordinal_from_counts(counts)
    ref_i = krippendorff.alpha(reliability_data=np.stack([h, llm]).astype(float), level_of_measurement="interval")
    assert ag.kripp_alpha_from_counts(counts, "interval") == pytest.approx(ref_i, abs=1e-9, rel=0)


def test_kripp_alpha_from_counts_is_vectorised() -> None:
    tables = np.stack([ag.confusion_table(*_pairs(s, 100, 2), SCALE)[0] for s in range(8)]).reshape(4, 2, 5, 5)
    batch = ag.kripp_alpha_ordinal_from_counts(tables)
    assert batch.shape == (4, 2)
    for i in range(4):
        for j in range(2):
            assert batch[i, j] == pytest.approx(ag.kripp_alpha_ordinal_from_counts(tables[i, j]), abs=1e-15)
    # Perfect agreement -> 1; a single category -> undefined.
    assert ag.kripp_alpha_ordinal_from_counts(np.diag([3.0, 0, 2, 0, 5])) == pytest.approx(1.0)
    assert np.isnan(ag.kripp_alpha_ordinal_from_counts(np.diag([0.0, 0, 4, 0, 0])))


# ------------------------------------------------------------------------------- continuous agreement

floats_pairs = st.builds(
    lambda seed, n, shift: (lambda rng: (lambda x: (x, 0.8 * x + shift + rng.normal(0, 0.7, n)))(
        rng.normal(3, 1, n)))(np.random.default_rng(seed)),
    seed=st.integers(0, 2**32 - 1), n=st.integers(5, 200), shift=st.floats(-2, 2))


@SETTINGS
@given(xy=floats_pairs)
def test_lin_ccc_both_variants(xy: tuple[np.ndarray, np.ndarray]) -> None:
    h, llm = xy
    n = h.size
    # Authors' variant: Pearson r and ddof-1 SDs.
    r = stats.pearsonr(h, llm).statistic
    sh, sl = np.std(h, ddof=1), np.std(llm, ddof=1)
    authors = 2 * r * sh * sl / (sh**2 + sl**2 + (llm.mean() - h.mean()) ** 2)
    assert ag.lin_ccc(h, llm) == pytest.approx(authors, abs=1e-12)
    # Lin (1989): moments divided by N, written with sums.
    mh, ml = sum(h) / n, sum(llm) / n
    sxy = sum((a - mh) * (b - ml) for a, b in zip(h, llm, strict=True)) / n
    sxx = sum((a - mh) ** 2 for a in h) / n
    syy = sum((b - ml) ** 2 for b in llm) / n
    assert ag.lin_ccc(h, llm, ddof=0) == pytest.approx(2 * sxy / (sxx + syy + (mh - ml) ** 2), abs=1e-12)
    # The two differ by the (n−1)/n factor on the variances only.
    assert ag.lin_ccc(h, llm, ddof=0) != ag.lin_ccc(h, llm, ddof=1) or np.isclose(h.mean(), llm.mean())


def test_lin_ccc_properties() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert ag.lin_ccc(x, x) == pytest.approx(1.0)
    assert ag.lin_ccc(x, x + 1) < 1.0  # location shift is penalised (unlike r)
    assert ag.lin_ccc(x, [np.nan, 2, 3, 4, 5]) == pytest.approx(ag.lin_ccc(x[1:], x[1:]))
    with pytest.raises(TrustmhError):
        ag.lin_ccc(x, x[:3])
    # a constant rater: no concordance in variation, 0 by Lin's formula (not an undefined-r NaN)
    assert ag.lin_ccc(x, np.full(5, 3.0)) == 0.0
    assert ag.lin_ccc(np.full(5, 3.0), x, ddof=0) == 0.0
    assert np.isnan(ag.lin_ccc(np.full(5, 3.0), np.full(5, 3.0)))  # 0/0: undefined, said as NaN


@SETTINGS
@given(xy=floats_pairs, level=st.sampled_from([0.9, 0.95, 0.99]))
def test_correlation_intervals(xy: tuple[np.ndarray, np.ndarray], level: float) -> None:
    x, y = xy
    n = x.size
    p = ag.pearson_ci(x, y, level)
    s = ag.spearman_ci(x, y, level)
    assert p.r == stats.pearsonr(x, y).statistic
    assert s.r == stats.spearmanr(x, y).statistic
    assert p.n == s.n == n
    z = stats.norm.ppf(0.5 + level / 2)
    if n > 3:
        assert (p.lo, p.hi) == pytest.approx((np.tanh(np.arctanh(p.r) - z / np.sqrt(n - 3)),
                                             np.tanh(np.arctanh(p.r) + z / np.sqrt(n - 3))), abs=1e-12)
        assert (s.lo, s.hi) == pytest.approx((np.tanh(np.arctanh(s.r) - z * np.sqrt(1.06 / (n - 3))),
                                             np.tanh(np.arctanh(s.r) + z * np.sqrt(1.06 / (n - 3)))), abs=1e-12)
        assert p.lo <= p.r <= p.hi
        assert s.lo <= s.r <= s.hi
    # statsmodels/scipy agree on the Pearson Fisher interval too.
    ref = stats.pearsonr(x, y).confidence_interval(confidence_level=level)
    assert (p.lo, p.hi) == pytest.approx((ref.low, ref.high), abs=1e-9)


def test_pearson_ci_coverage() -> None:
    rng = np.random.default_rng(5)
    rho, n, hits = 0.6, 40, 0
    cov = [[1, rho], [rho, 1]]
    for _ in range(1000):
        xy = rng.multivariate_normal([0, 0], cov, size=n)
        res = ag.pearson_ci(xy[:, 0], xy[:, 1])
        hits += res.lo <= rho <= res.hi
    assert 0.93 <= hits / 1000 <= 0.97
    assert np.isnan(ag.pearson_ci([1, 1, 1, 1], [1, 2, 3, 4]).r)


@SETTINGS
@given(xy=floats_pairs)
def test_bland_altman_and_error_stats(xy: tuple[np.ndarray, np.ndarray]) -> None:
    h, llm = xy
    n = h.size
    d = [b - a for a, b in zip(h, llm, strict=True)]
    bias = sum(d) / n
    sd = (sum((x - bias) ** 2 for x in d) / (n - 1)) ** 0.5
    ba = ag.bland_altman(h, llm)
    assert ba["n"] == n
    assert ba["bias"] == pytest.approx(bias, abs=1e-12)
    assert ba["sd"] == pytest.approx(sd, abs=1e-12)
    assert ba["loa_lo"] == pytest.approx(bias - 1.96 * sd, abs=1e-12)
    assert ba["loa_hi"] == pytest.approx(bias + 1.96 * sd, abs=1e-12)
    assert ba["se_bias"] == pytest.approx(sd / n**0.5, abs=1e-12)
    assert ba["se_loa"] == pytest.approx(sd * (3 / n) ** 0.5, abs=1e-12)
    assert ba["bias_lo"] == pytest.approx(bias - 1.96 * sd / n**0.5, abs=1e-12)
    assert ba["bias_hi"] == pytest.approx(bias + 1.96 * sd / n**0.5, abs=1e-12)
    es = ag.error_stats(h, llm)
    mse = sum(x * x for x in d) / n
    assert es["n_pairs"] == n
    assert es["bias"] == pytest.approx(bias, abs=1e-12)
    assert es["mse"] == pytest.approx(mse, abs=1e-12)
    assert es["rmse"] == pytest.approx(mse**0.5, abs=1e-12)
    assert es["human_mean"] == pytest.approx(sum(h) / n, abs=1e-12)
    assert es["llm_mean"] == pytest.approx(sum(llm) / n, abs=1e-12)
    assert es["human_sd"] == pytest.approx(stats.tstd(h), abs=1e-12)
    assert es["llm_sd"] == pytest.approx(stats.tstd(llm), abs=1e-12)
    assert es["scale_shift"] == pytest.approx(stats.tstd(llm) / stats.tstd(h), abs=1e-12)


def test_error_stats_sign_and_missing() -> None:
    h = [3, 3, 4, np.nan, 2]
    judge = [4, 5, 4, 1, np.nan]  # judge inflates
    es = ag.error_stats(h, judge)
    assert es["n_pairs"] == 3
    assert es["bias"] == pytest.approx(1.0)
    assert es["mse"] == pytest.approx(5 / 3)
    assert ag.error_stats([], [])["n_pairs"] == 0
    assert ag.bland_altman(h, judge)["n"] == 3


@pytest.mark.parametrize(("icc", "band"), [(0.95, "excellent"), (0.90, "excellent"), (0.8999, "good"),
                                           (0.75, "good"), (0.7499, "moderate"), (0.5, "moderate"),
                                           (0.4999, "poor"), (-0.3, "poor"), (float("nan"), "undefined")])
def test_koo_li_band(icc: float, band: str) -> None:
    assert ag.koo_li_band(icc) == band


def test_cohen_kappa_refuses_missing_pairs() -> None:
    with pytest.raises(ValueError, match="1 pair\\(s\\) have a missing rating"):
        ag.cohen_kappa([1, 2, float("nan")], [1, 2, 3])


def test_rating_agreement_unrounded_hand_computed() -> None:
    from trustmh.stats.agreement import rating_agreement

    judge = [4.666666666666667, 3.0, None, 1.0, 2.5]
    human = [5.0, 1.0, 4.0, float("nan"), 4.0]
    # pairs (4.667, 5) |d| = 1/3; (3, 1) 2; (2.5, 4) 1.5 -- the crisis study's table keeps the fractions
    got = rating_agreement(judge, human, rounded=False)
    assert got["n"] == 3
    assert got["mae"] == pytest.approx((1 / 3 + 2 + 1.5) / 3)
    assert got["rmse"] == pytest.approx(math.sqrt((1 / 9 + 4 + 2.25) / 3))
    assert got["within_1"] == pytest.approx(1 / 3)
    # rounded (the default): 4.667 -> 5, 2.5 -> 3 (half up): |d| = 0, 2, 1
    assert rating_agreement(judge, human)["mae"] == pytest.approx(1.0)


def test_agreement_rate_and_fleiss_against_statsmodels() -> None:
    import random

    from trustmh.stats.agreement import agreement_rate, fleiss_kappa, ratings_to_table

    assert agreement_rate(["x", "x", "y", "y"], ["x", "y", "y", "y"]) == 0.75
    # Wikipedia's worked example: 10 subjects, 14 raters, 5 categories, kappa 0.210
    wiki = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
            [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(np.array(wiki)) == pytest.approx(0.20993, abs=1e-5)
    ir = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = random.Random(3)
    cats = ["a", "b", "c", ""]
    truth = [rng.choice(cats[:3]) for _ in range(60)]
    ratings = [[t if rng.random() < 0.7 else rng.choice(cats) for _ in range(4)] for t in truth]
    table = ratings_to_table(np.array(ratings, dtype=object), cats)
    assert fleiss_kappa(table) == pytest.approx(ir.fleiss_kappa(table, method="fleiss"))
