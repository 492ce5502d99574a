"""Issue 50: the judge-corrected interval of conversations that share a unit (a design cell joined with the
stimulus) is cluster-robust, as every other conversation figure (docs/statistics.md#clustered-ppi). Before, it
treated the conversations as independent and covered 0.73-0.90 on the shipped cell designs at a correlation
across cells of 0.3 or more (benchmarks/ppi_cluster_coverage.py)."""

from __future__ import annotations

import numpy as np
import pytest

from trustmh.stats.ppi import clustered_corrected_mean, corrected_mean
from trustmh.stats.sequential import round_alpha

# 152 conversations on 40 units, as the shipped risk sets: 16 cells of 8 and 24 single conversations
UNITS = np.repeat(np.arange(40), [8] * 16 + [1] * 24)


def _judged(rng: np.random.Generator, rho: float, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The humans' labels (a rate per unit, Beta with mean p and correlation rho) and a judge that misses a
    fifth of the failures and flags passes at the rate that keeps its margin."""
    rates = rng.beta(p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho, size=40)
    y = (rng.random(UNITS.size) < rates[UNITS]).astype(float)
    u = rng.random(UNITS.size)
    return y, np.where(y == 1, u >= 0.2, u < p * 0.2 / (1 - p)).astype(float)


def _both(y: np.ndarray, judge: np.ndarray, idx: np.ndarray, alpha: float = 0.05):
    return (corrected_mean(y[idx], judge[idx], judge, alpha=alpha),
            clustered_corrected_mean(y[idx], judge[idx], judge, UNITS[idx], UNITS, alpha=alpha))


@pytest.fixture(scope="module")
def concentrated():
    """Failures in three cells only: the clustering the independent interval cannot see."""
    y = np.isin(UNITS, (0, 1, 2)).astype(float)
    judge = y.copy()
    judge[[0, 9]] = 0.0  # the judge misses two
    idx = np.arange(0, UNITS.size, 2)
    return _both(y, judge, idx)


def test_the_estimate_is_the_corrected_one(concentrated) -> None:
    independent, clustered = concentrated
    assert clustered.estimate == pytest.approx(independent.estimate, abs=1e-12)


def test_failures_in_few_cells_widen_the_interval(concentrated) -> None:
    independent, clustered = concentrated
    assert clustered.ci[1] - clustered.ci[0] > 1.5 * (independent.ci[1] - independent.ci[0])


def test_it_records_the_units_and_their_effective_n(concentrated) -> None:
    _, clustered = concentrated
    assert (clustered.clusters, clustered.effective_n < UNITS.size) == (40, True)


def test_a_rate_interval_stays_inside_0_1(concentrated) -> None:
    _, clustered = concentrated
    assert 0.0 <= clustered.ci[0] <= clustered.ci[1] <= 1.0


def test_each_item_its_own_unit_is_close_to_the_independent_interval() -> None:
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.3).astype(float)
    judge = np.where(rng.random(300) < 0.85, y, 1 - y)
    idx = np.arange(0, 300, 3)
    plain = corrected_mean(y[idx], judge[idx], judge)
    own = clustered_corrected_mean(y[idx], judge[idx], judge, idx.tolist(), list(range(300)))
    assert own.ci[1] - own.ci[0] == pytest.approx(plain.ci[1] - plain.ci[0], rel=0.15)


def test_a_rating_on_fewer_than_6_units_has_no_interval() -> None:
    units = np.repeat(np.arange(4), 10)
    y = np.tile([0.0, 1.0, 2.0, 1.0, 0.0], 8)
    judge = np.clip(y + np.tile([0.0, 0.0, -1.0, 0.0, 1.0], 8), 0, 2)
    got = clustered_corrected_mean(y[::2], judge[::2], judge, units[::2], units)
    assert (got.ci, "fewer than 6" in (got.reason or "")) == (None, True)


def test_one_unit_label_per_item_is_required() -> None:
    with pytest.raises(ValueError, match="one unit per"):
        clustered_corrected_mean([0.0, 1.0], [0.0, 1.0], [0.0, 1.0, 1.0], ["a", "b"], ["a", "b"])


@pytest.mark.parametrize("rho", (0.3, 0.8))
def test_it_covers_at_round_1s_level_when_failures_share_cells(rho: float) -> None:
    """150 simulated models (Monte Carlo SE about 0.018): the clustered interval at round 1's level (96%)
    covers at least 0.93 where the independent one fell to 0.73-0.89 (benchmarks/ppi_cluster_coverage.py)."""
    rng = np.random.default_rng(50)
    hits = 0
    for _ in range(150):
        y, judge = _judged(rng, rho, 0.1)
        idx = np.sort(rng.choice(UNITS.size, size=100, replace=False))
        got = clustered_corrected_mean(y[idx], judge[idx], judge, UNITS[idx], UNITS, alpha=round_alpha(1))
        hits += got.ci is not None and got.ci[0] <= 0.1 <= got.ci[1]
    assert hits / 150 >= 0.93


# The delusion check's 0-2 mean (3 December): a rating on a bounded scale takes the rate's rule on its share of
# the scale, not θ̂ ± t·√v, which covered 0.90 where a few cells carried a low mean's spread (benchmarks/
# ppi_cluster_coverage.py --outcome score: 0.957-0.987 with the scale).
def _ratings(rng: np.random.Generator, mean: float = 0.3, rho: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Four 0-2 turn marks per conversation (the cell's rate per mark Beta with mean `mean`/2, correlation
    `rho`); the judge gives the people's value four times in five, else a fresh draw from the cell."""
    p = mean / 2
    cells = rng.beta(p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho, size=40)
    y = rng.binomial(8, cells[UNITS]) / 4
    return y, np.where(rng.random(UNITS.size) < 0.8, y, rng.binomial(8, cells[UNITS]) / 4)


def _rating_interval(y: np.ndarray, judge: np.ndarray, idx: np.ndarray, scale=(0.0, 2.0)):
    return clustered_corrected_mean(y[idx], judge[idx], judge, UNITS[idx], UNITS, alpha=round_alpha(1), scale=scale)


@pytest.fixture(scope="module")
def low_rating():
    rng = np.random.default_rng(7)
    y, judge = _ratings(rng)
    idx = np.sort(rng.choice(UNITS.size, size=100, replace=False))
    return _rating_interval(y, judge, idx), _rating_interval(y, judge, idx, scale=None)


def test_a_low_rating_s_interval_reaches_further_up_than_down(low_rating) -> None:
    scaled, _ = low_rating
    assert scaled.ci[1] - scaled.estimate > scaled.estimate - scaled.ci[0]


def test_a_rating_s_interval_stays_inside_its_scale(low_rating) -> None:
    scaled, _ = low_rating
    assert 0.0 <= scaled.ci[0] <= scaled.ci[1] <= 2.0


def test_a_rating_on_its_scale_is_wider_than_t_on_its_variance(low_rating) -> None:
    scaled, plain = low_rating
    assert scaled.ci[1] - scaled.ci[0] > plain.ci[1] - plain.ci[0]


def test_the_scale_leaves_the_estimate_unchanged(low_rating) -> None:
    scaled, plain = low_rating
    assert scaled.estimate == plain.estimate


def test_a_rating_on_its_scale_covers_at_round_1s_level() -> None:
    """150 simulated models on 40 units (Monte Carlo SE about 0.016)."""
    rng = np.random.default_rng(51)
    hits = 0
    for _ in range(150):
        y, judge = _ratings(rng)
        got = _rating_interval(y, judge, np.sort(rng.choice(UNITS.size, size=100, replace=False)))
        hits += got.ci is not None and got.ci[0] <= 0.3 <= got.ci[1]
    assert hits / 150 >= 0.93
