"""Seeded bootstrap (docs/statistics.md#align-bootstraps item 4, §5.2–5.3): the legacy index vectors, cluster draws,
vectorised = plain loop, BCa = scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from trustmh.stats import bootstrap as bs
from trustmh.stats.icc import faithful_bootstrap, icc_a1, icc_c1, icc_c1_a1

SETTINGS = settings(max_examples=30, deadline=None)


# ------------------------------------------------------------------------------- legacy index vectors

@pytest.mark.parametrize("n", [3, 9, 10])
def test_legacy_index_matrix_reproduces_the_global_rng_recipe(n: int) -> None:
    saved = np.random.get_state()
    try:
        np.random.seed(42)
        seeds = np.random.randint(0, 100000, 1000)
        expected = []
        for s in seeds:
            np.random.seed(s)
            expected.append(np.random.choice(n, size=n, replace=True))
        for s, row in zip(seeds[:50], expected[:50], strict=True):  # the documented identity
            assert np.array_equal(np.random.RandomState(s).randint(0, n, n), row)
    finally:
        np.random.set_state(saved)
    M = bs.legacy_index_matrix(n)
    assert M.shape == (1000, n)
    assert M.dtype == np.int64
    assert np.array_equal(M, np.stack(expected))


def test_legacy_index_matrix_is_cached_read_only_and_leaves_global_state_alone() -> None:
    bs._legacy_index_matrix.cache_clear()
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    M = bs.legacy_index_matrix(7, n_boot=200, seed=5)
    assert np.array_equal(np.random.get_state()[1], before)
    assert bs.legacy_index_matrix(7, n_boot=200, seed=5) is M
    with pytest.raises(ValueError):
        M[0, 0] = 1
    assert not np.array_equal(bs.legacy_index_matrix(7, n_boot=200, seed=6), M)
    assert np.array_equal(bs.legacy_index_matrix(7, n_boot=1000, seed=5)[:200], M)  # same seed stream
    with pytest.raises(ValueError):
        bs.legacy_index_matrix(0)


def _literal_faithful_loop(Y: np.ndarray, B: int = 1000) -> tuple[list[float], list[float], tuple, tuple]:
    """docs/statistics.md#legacy-bootstrap, literally (global RNG and all)."""
    n = Y.shape[0]
    saved = np.random.get_state()
    C: list[float] = []
    A: list[float] = []
    try:
        np.random.seed(42)
        seeds = np.random.randint(0, 100000, B)
        for s in seeds:
            np.random.seed(s)
            idx = np.random.choice(n, size=n, replace=True)
            c, a = icc_c1(Y[idx]), icc_a1(Y[idx])
            if np.isnan(c) or np.isnan(a):
                continue
            if np.isfinite(c) and 0 <= c <= 1:
                C.append(c)
            if np.isfinite(a) and 0 <= a <= 1:
                A.append(a)
    finally:
        np.random.set_state(saved)

    def ci(L: list[float]) -> tuple[float, float]:
        return tuple(np.percentile(L, [2.5, 97.5])) if len(L) >= 10 else (np.nan, np.nan)

    return C, A, ci(C), ci(A)


def test_vectorised_faithful_bootstrap_equals_the_literal_loop() -> None:
    rng = np.random.default_rng(8)
    cells = rng.integers(1, 6, size=(5, 9, 2)).astype(float) + rng.normal(0, 0.3, size=(5, 9, 2))
    cells[1, :, 1] = cells[1, :, 0] + 0.5  # constant shift: ICC(C,1) = 1 exactly on every draw
    cells[2, :, :] = rng.integers(1, 3, size=(9, 2))  # coarse: ties, negatives, undefined draws
    M = bs.legacy_index_matrix(9)
    c, a = icc_c1_a1(cells[:, M, :])  # (5, 1000) in one call
    dropped = np.isnan(c) | np.isnan(a)
    keep_c = ~dropped & np.isfinite(c) & (c >= 0) & (c <= 1)
    keep_a = ~dropped & np.isfinite(a) & (a >= 0) & (a <= 1)
    c_lo, c_hi = bs.percentile_ci_nan(np.where(keep_c, c, np.nan), min_valid=10)
    a_lo, a_hi = bs.percentile_ci_nan(np.where(keep_a, a, np.nan), min_valid=10)
    for j in range(cells.shape[0]):
        C, A, (rc_lo, rc_hi), (ra_lo, ra_hi) = _literal_faithful_loop(cells[j])
        assert np.array_equal(c[j][keep_c[j]], np.array(C))  # same kept replicates, bit-equal values
        assert np.array_equal(a[j][keep_a[j]], np.array(A))
        for ours, ref in ((c_lo[j], rc_lo), (c_hi[j], rc_hi), (a_lo[j], ra_lo), (a_hi[j], ra_hi)):
            assert np.array_equal(ours, ref, equal_nan=True)  # bit-equal
    # The packaged version gives the same, cell by cell.
    fb = faithful_bootstrap(cells)
    assert np.array_equal(fb["c1_lo"], c_lo, equal_nan=True)
    assert np.array_equal(fb["a1_hi"], a_hi, equal_nan=True)
    assert np.array_equal(fb["n_boot_valid_c1"], keep_c.sum(axis=1))
    assert np.array_equal(fb["n_boot_valid_a1"], keep_a.sum(axis=1))
    assert np.array_equal(fb["c1_reps"], np.where(keep_c, c, np.nan), equal_nan=True)
    one = faithful_bootstrap(cells[3])
    assert one["c1_lo"] == c_lo[3]
    assert one["n_boot_valid_a1"] == keep_a[3].sum()


def test_faithful_loop_with_undefined_draws() -> None:
    """n = 3: one draw in nine hits a single row, giving NaN; those draws are dropped for both forms."""
    Y = np.array([[1.0, 2.0], [3.0, 3.5], [4.0, 5.0]])
    M = bs.legacy_index_matrix(3)
    c, a = icc_c1_a1(Y[M])
    C, A, _, _ = _literal_faithful_loop(Y)
    dropped = np.isnan(c) | np.isnan(a)
    assert dropped.sum() > 50
    keep_c = ~dropped & (c >= 0) & (c <= 1)
    assert np.array_equal(c[keep_c], np.array(C))
    assert len(A) == int((~dropped & (a >= 0) & (a <= 1)).sum())


def test_percentile_ci_nan_equals_percentile_on_the_kept_list() -> None:
    rng = np.random.default_rng(1)
    reps = rng.normal(size=(3, 500))
    reps[0, ::3] = np.nan
    reps[1, :495] = np.nan  # too few -> NaN
    lo, hi = bs.percentile_ci_nan(reps)
    kept = reps[0][np.isfinite(reps[0])]
    assert (lo[0], hi[0]) == tuple(np.percentile(kept, [2.5, 97.5]))
    # percentile_ci asks for 100·(1 − level)/2 = 2.5000000000000022, not 2.5: equal to ~1 ulp.
    assert (lo[2], hi[2]) == pytest.approx(bs.percentile_ci(reps[2]), abs=1e-12)
    assert np.isnan(lo[1])
    assert np.isnan(hi[1])


# ------------------------------------------------------------------------------------- cluster draws

def _add_at_counts(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """The original np.add.at implementation of draw_counts."""
    idx = np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))
    counts = np.zeros((n_boot, n_clusters))
    np.add.at(counts, (np.repeat(np.arange(n_boot), n_clusters), idx.ravel()), 1.0)
    return counts


@SETTINGS
@given(n_clusters=st.integers(1, 300), n_boot=st.integers(1, 50), seed=st.integers(0, 2**32 - 1))
def test_cluster_draw_counts(n_clusters: int, n_boot: int, seed: int) -> None:
    W = bs.cluster_draw_counts(n_clusters, n_boot, seed)
    assert np.array_equal(W, _add_at_counts(n_clusters, n_boot, seed))
    assert np.array_equal(W, bs.draw_counts(n_clusters, n_boot, seed))
    assert np.all(W.sum(axis=1) == n_clusters)
    draws = bs.cluster_indices(n_clusters, n_boot, seed)
    assert np.array_equal(W, np.stack([np.bincount(d, minlength=n_clusters) for d in draws]).astype(float))
    assert np.array_equal(W, bs.cluster_draw_counts(n_clusters, n_boot, seed))  # seeded: identical


def test_cluster_totals() -> None:
    rng = np.random.default_rng(3)
    per = rng.normal(size=(40, 6))
    T = bs.cluster_totals(per, seed=9, n_boot=25)
    W = bs.cluster_draw_counts(40, 25, 9)
    assert np.allclose(T, W @ per, rtol=0, atol=1e-12)
    per3 = rng.normal(size=(40, 5, 5))
    T3 = bs.cluster_totals(per3, seed=9, n_boot=25, counts=W)
    assert T3.shape == (25, 5, 5)
    assert np.allclose(T3, np.einsum("bc,cij->bij", W, per3), rtol=0, atol=1e-12)


# ------------------------------------------------------------------------------- general bootstrap

def _pearson_vec(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xm = x - x.mean(axis=-1, keepdims=True)
    ym = y - y.mean(axis=-1, keepdims=True)
    return (xm * ym).sum(axis=-1) / np.sqrt((xm * xm).sum(axis=-1) * (ym * ym).sum(axis=-1))


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_bootstrap_vectorised_equals_plain_loop(method: str) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=60)
    y = x + rng.normal(size=60)
    vec = bs.bootstrap((x, y), _pearson_vec, seed=17, n_boot=300, method=method)
    loop = bs.bootstrap((x, y), lambda a, b: float(_pearson_vec(a, b)), seed=17, n_boot=300, method=method,
                        vectorised=False)
    assert np.allclose(vec.replicates, loop.replicates, rtol=0, atol=1e-12)
    assert vec.lo == pytest.approx(loop.lo, abs=1e-12)
    assert vec.hi == pytest.approx(loop.hi, abs=1e-12)
    # A literal loop with the documented draws.
    draws = bs.cluster_indices(60, 300, 17)
    literal = np.array([np.corrcoef(x[d], y[d])[0, 1] for d in draws])
    assert np.allclose(vec.replicates, literal, rtol=0, atol=1e-12)
    again = bs.bootstrap((x, y), _pearson_vec, seed=17, n_boot=300, method=method)
    assert np.array_equal(again.replicates, vec.replicates)
    assert (again.lo, again.hi) == (vec.lo, vec.hi)
    other = bs.bootstrap((x, y), _pearson_vec, seed=18, n_boot=300, method=method)
    assert not np.array_equal(other.replicates, vec.replicates)


@pytest.mark.parametrize("equal_sizes", [True, False])
def test_cluster_bootstrap_vectorised_equals_loop_and_bootstrap_statistic(equal_sizes: bool) -> None:
    rng = np.random.default_rng(5)
    sizes = np.full(30, 4) if equal_sizes else rng.integers(1, 7, size=30)
    clusters = np.repeat(np.arange(30), sizes)
    rng.shuffle(clusters)  # rows of one cluster need not be adjacent
    v = rng.normal(size=clusters.size) + clusters * 0.1
    vec = bs.bootstrap(v, lambda s: s.mean(axis=-1), clusters=list(clusters), seed=3, n_boot=200)
    loop = bs.bootstrap(v, lambda s: float(s.mean()), clusters=list(clusters), seed=3, n_boot=200,
                        vectorised=False)
    assert np.allclose(vec.replicates, loop.replicates, rtol=0, atol=1e-12)
    # The existing per-replicate helper draws the same clusters.
    point, (lo, hi) = bs.bootstrap_statistic(lambda rows: float(v[rows].mean()), list(clusters), seed=3,
                                             n_boot=200)
    assert point == pytest.approx(vec.point, abs=1e-12)
    assert lo == pytest.approx(vec.lo, abs=1e-12)
    assert hi == pytest.approx(vec.hi, abs=1e-12)
    m_point, (m_lo, m_hi) = bs.bootstrap_mean(v, list(clusters), seed=3, n_boot=200)
    assert m_lo == pytest.approx(vec.lo, abs=1e-12)
    assert m_hi == pytest.approx(vec.hi, abs=1e-12)
    # BCa: jackknife leaves out one whole cluster (in order of first appearance).
    bca = bs.bootstrap(v, lambda s: s.mean(axis=-1), clusters=list(clusters), seed=3, n_boot=200, method="bca")
    bca_loop = bs.bootstrap(v, lambda s: float(s.mean()), clusters=list(clusters), seed=3, n_boot=200,
                            method="bca", vectorised=False)
    order = list(dict.fromkeys(clusters.tolist()))
    expected_jack = np.array([v[clusters != c].mean() for c in order])
    assert np.allclose(bca.jackknife, expected_jack, rtol=0, atol=1e-12)
    assert np.allclose(bca_loop.jackknife, expected_jack, rtol=0, atol=1e-12)
    assert bca.lo == pytest.approx(bca_loop.lo, abs=1e-12)
    assert bca.hi == pytest.approx(bca_loop.hi, abs=1e-12)
    assert bca.lo == pytest.approx(bs.bca_ci(vec.point, vec.replicates, expected_jack)[0], abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bca_equals_scipy_one_sample(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    x = rng.lognormal(size=40)  # skewed: BCa differs visibly from percentile
    ref = stats.bootstrap((x,), np.std, n_resamples=999, method="BCa", rng=np.random.default_rng(seed))
    ours = bs.bootstrap(x, lambda s: np.std(s, axis=-1), seed=seed, n_boot=999, method="bca")
    assert np.array_equal(ours.replicates, ref.bootstrap_distribution)
    assert ours.lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    pct = stats.bootstrap((x,), np.std, n_resamples=999, method="percentile", rng=np.random.default_rng(seed))
    ours_p = bs.bootstrap(x, lambda s: np.std(s, axis=-1), seed=seed, n_boot=999)
    assert ours_p.lo == pytest.approx(pct.confidence_interval.low, abs=1e-12)
    assert ours_p.hi == pytest.approx(pct.confidence_interval.high, abs=1e-12)
    assert abs(ours.lo - ours_p.lo) > 1e-6  # the test can tell BCa from percentile


def test_bca_equals_scipy_with_ties_at_the_point_estimate() -> None:
    """Median of coarse integers: many replicates equal the point estimate, so z0 depends on counting ties
    as half (scipy's 'mean' percentile of score)."""
    x = np.random.default_rng(0).integers(1, 8, size=30).astype(float)
    ref = stats.bootstrap((x,), np.median, n_resamples=999, method="BCa", rng=np.random.default_rng(4))
    ours = bs.bootstrap(x, lambda s: np.median(s, axis=-1), seed=4, n_boot=999, method="bca")
    assert np.mean(ours.replicates == ours.point) > 0.1
    assert np.isfinite(ours.lo)
    assert ours.lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_bca_equals_scipy_paired_statistic() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=35)
    y = 0.6 * x + rng.normal(size=35)
    ref = stats.bootstrap((x, y), lambda a, b, axis=-1: _pearson_vec(a, b), paired=True, vectorized=True,
                          n_resamples=500, method="BCa", rng=np.random.default_rng(11))
    ours = bs.bootstrap((x, y), _pearson_vec, seed=11, n_boot=500, method="bca")
    assert np.allclose(ours.replicates, ref.bootstrap_distribution, rtol=0, atol=1e-12)
    assert ours.lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert ours.hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_bca_ci_direct_and_degenerate() -> None:
    rng = np.random.default_rng(2)
    x = rng.exponential(size=50)
    draws = bs.cluster_indices(50, 2000, 1)
    reps = x[draws].mean(axis=1)
    jack = np.array([np.delete(x, i).mean() for i in range(50)])
    lo, hi = bs.bca_ci(float(x.mean()), reps, jack)
    assert lo < x.mean() < hi
    # Textbook formula written independently.
    from scipy.special import ndtr, ndtri

    z0 = ndtri((np.sum(reps < x.mean()) + np.sum(reps <= x.mean())) / (2 * reps.size))
    d = jack.mean() - jack
    a = np.sum(d**3) / (6 * np.sum(d**2) ** 1.5)
    q = ndtri(0.025)
    a1 = ndtr(z0 + (z0 + q) / (1 - a * (z0 + q)))
    a2 = ndtr(z0 + (z0 - q) / (1 - a * (z0 - q)))
    assert (lo, hi) == pytest.approx(tuple(np.percentile(reps, [100 * a1, 100 * a2])), abs=1e-12)
    # Degenerate distributions give NaN instead of raising.
    assert all(np.isnan(bs.bca_ci(1.0, np.ones(100), np.ones(10))))
    assert all(np.isnan(bs.bca_ci(1.0, np.ones(5), np.arange(10.0))))


def test_bootstrap_input_checks() -> None:
    with pytest.raises(ValueError):
        bs.bootstrap((np.arange(3.0), np.arange(4.0)), lambda a, b: a.mean(-1), seed=0)
    with pytest.raises(ValueError):
        bs.bootstrap(np.arange(3.0), lambda a: a.mean(-1), seed=0, method="basic")
    with pytest.raises(ValueError):
        bs.bootstrap(np.arange(3.0), lambda a: a.mean(-1), seed=0, clusters=[1, 2])


def test_batching_changes_nothing() -> None:
    """Chunked evaluation (explicit `batch`, and the automatic chunks of a large jackknife) gives the same
    replicates and bounds as one call; with n = 2500 the jackknife runs in several chunks."""
    rng = np.random.default_rng(21)
    x = rng.gamma(2.0, size=2500)
    whole = bs.bootstrap(x, lambda s: s.mean(axis=-1), seed=2, n_boot=400, method="bca", batch=400)
    chunked = bs.bootstrap(x, lambda s: s.mean(axis=-1), seed=2, n_boot=400, method="bca", batch=37)
    auto = bs.bootstrap(x, lambda s: s.mean(axis=-1), seed=2, n_boot=400, method="bca")
    assert np.array_equal(whole.replicates, chunked.replicates)
    assert np.array_equal(whole.replicates, auto.replicates)
    assert np.array_equal(whole.jackknife, auto.jackknife)
    assert auto.jackknife.shape == (2500,)
    assert (whole.lo, whole.hi) == (chunked.lo, chunked.hi) == (auto.lo, auto.hi)
    ref = stats.bootstrap((x,), np.mean, n_resamples=400, method="BCa", rng=np.random.default_rng(2))
    assert auto.lo == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert auto.hi == pytest.approx(ref.confidence_interval.high, abs=1e-12)
