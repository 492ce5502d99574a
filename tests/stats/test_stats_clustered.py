"""The clustered interval of a conversation figure (trustmh.stats.clustered) and the design effect behind
`trustmh plan` (trustmh.stats.power)."""

from __future__ import annotations

import numpy as np
import pytest

from trustmh.stats.clustered import clopper_pearson_bounds, clustered_interval
from trustmh.stats.power import design_effect, effective_n, weighted_cluster_size


def test_items_that_are_their_own_clusters_keep_their_n_up_to_the_small_sample_factor() -> None:
    values = [1.0] * 20 + [0.0] * 80
    got = clustered_interval(values, [f"c{i}" for i in range(100)])
    assert got["effective_n"] == pytest.approx(99.0)  # n · (C − 1)/C


def test_a_shared_stimulus_answered_alike_counts_about_once() -> None:
    # 10 stimuli, 5 conversations each, every stimulus answered the same way in all its conversations
    values = [float(c % 2) for c in range(10) for _ in range(5)]
    got = clustered_interval(values, [f"s{c}" for c in range(10) for _ in range(5)])
    assert got["effective_n"] == pytest.approx(9.0)  # 50 / (5 · 10/9)


def test_the_clusters_are_counted() -> None:
    got = clustered_interval([0.0, 1.0, 0.0, 1.0], ["a", "a", "b", "c"])
    assert (got["n"], got["clusters"]) == (4, 3)


def test_no_miss_at_all_assumes_the_clustering_and_says_so() -> None:
    got = clustered_interval([0.0] * 107, [f"s{i // 3}" for i in range(107)])
    assert (got["icc_estimated"], got["icc_assumed"]) == (None, 0.5)


def test_no_miss_at_all_still_has_an_upper_bound_above_zero() -> None:
    got = clustered_interval([0.0] * 107, [f"s{i // 3}" for i in range(107)])
    assert got["ci"][0] == 0.0 and got["ci"][1] > 0.03


def test_clustering_widens_the_interval() -> None:
    values = [float(c % 4 == 0) for c in range(40) for _ in range(4)]
    clustered = clustered_interval(values, [f"s{c}" for c in range(40) for _ in range(4)])["ci"]
    independent = clustered_interval(values, [f"i{i}" for i in range(160)])["ci"]
    assert clustered[1] - clustered[0] > 1.5 * (independent[1] - independent[0])


def test_a_0_to_2_mean_is_reported_and_bounded_on_its_scale() -> None:
    got = clustered_interval([0, 1, 2, 2, 0, 1] * 10, [f"s{i // 3}" for i in range(60)], scale=(0.0, 2.0))
    assert got["value"] == pytest.approx(1.0) and 0.0 <= got["ci"][0] < 1.0 < got["ci"][1] <= 2.0


def test_a_value_outside_the_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the scale 0–2"):
        clustered_interval([0.0, 3.0], ["a", "b"], scale=(0.0, 2.0))


def test_clopper_pearson_on_whole_counts_matches_the_exact_interval() -> None:
    from statsmodels.stats.proportion import proportion_confint

    assert clopper_pearson_bounds(5 / 107, 107) == pytest.approx(proportion_confint(5, 107, method="beta"))


def test_coverage_on_a_delusion_like_design_at_correlation_one_half() -> None:
    # the shipped delusion design's shape: 38 stimuli of unequal size; the benchmark runs 500 models a cell
    rng = np.random.default_rng(41)
    sizes = [11, 9, 8, 8, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6] + [5] * 10 + [4, 4] + [3] * 5 + [2] * 4 + [1] * 3
    labels = np.repeat(np.arange(len(sizes)), sizes)
    covered = 0
    for _ in range(200):
        pis = rng.beta(0.2, 0.8, size=len(sizes))  # mean 0.2, within-stimulus correlation 0.5
        y = np.concatenate([rng.binomial(1, p, m) for p, m in zip(pis, sizes, strict=True)]).astype(float)
        lo, hi = clustered_interval(y, labels)["ci"]
        covered += lo <= 0.2 <= hi
    assert covered / 200 >= 0.92


def test_the_design_effect_uses_the_size_an_item_sees() -> None:
    assert weighted_cluster_size([1, 3]) == pytest.approx(10 / 4)


def test_design_effect_and_effective_n() -> None:
    assert (design_effect([2] * 50, 0.5), effective_n([2] * 50, 0.5)) == (pytest.approx(1.5), pytest.approx(100 / 1.5))
