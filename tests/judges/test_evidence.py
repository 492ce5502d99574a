"""The labels a judged check needs (trustmh.judges.evidence.labels_needed), on stated figures."""

from __future__ import annotations

import math

import pytest

from trustmh.judges.evidence import labels_needed
from trustmh.stats.sequential import round_z


def _rate(p: float = 0.1, n_eff: float = 104, n_items: int = 104, min_n: int = 30, agreement: float = 0.8):  # noqa: ANN202
    return labels_needed(kind="labels", spread=p * (1 - p), n_effective=n_eff, n_items=n_items, width=0.15,
                         min_n=min_n, agreement=agreement, rate=p)


def test_the_count_is_plain_ppis_variance_solved_for_the_width_of_the_first_round() -> None:
    # the labels are drawn from the judged items: their error term carries the finite-population factor 1/n − 1/N
    budget = (0.15 / (2 * round_z(1))) ** 2 - 0.09 / 104
    assert _rate().n == math.ceil(1 / (budget / (2 * 0.09 * 0.2) + 1 / 104))


def test_labelling_most_of_a_small_set_counts_for_its_finite_size() -> None:
    # without the factor 1/n − 1/N the count was ceil(2·0.09·0.2 / budget), more than labelling every item needs
    budget = (0.15 / (2 * round_z(1))) ** 2 - 0.09 / 104
    assert _rate().n < math.ceil(2 * 0.09 * 0.2 / budget)


def test_a_better_judge_needs_fewer_labels() -> None:
    assert _rate(agreement=0.9).n < _rate().n


def test_min_n_sets_the_count_when_it_is_the_largest() -> None:
    assert (_rate(min_n=100).n, _rate(min_n=100).binding) == (100, "min_n")


def test_a_rare_harm_is_set_by_the_pairs_agreement() -> None:
    # at a 2% rate the pair's κ is the hard part to measure, not the width
    assert _rate(p=0.02, n_eff=2000, n_items=2000).binding == "pair agreement"


def test_a_set_whose_judge_only_interval_is_already_too_wide_has_no_count() -> None:
    assert _rate(p=0.5, n_eff=100).n is None


def test_more_labels_than_items_is_no_count() -> None:
    # a 2% rate's pair agreement needs 118 labels (test_a_rare_harm_is_set_by_the_pairs_agreement), the set has 100
    assert _rate(p=0.02, n_eff=2000, n_items=100).n is None


# Issue 50: a rate whose items share units is sized on the interval the gate reads on conversations
# (`stats.ppi.clustered_corrected_mean`): Clopper-Pearson on the clustered effective n, the 1/π weights of labels
# spread evenly over the units.
def test_labels_spread_evenly_over_equal_units_carry_no_weight_effect() -> None:
    from trustmh.judges.evidence import even_allocation_effect

    assert even_allocation_effect([4] * 10, 20) == pytest.approx(1.0)


def test_labels_spread_evenly_over_unequal_units_weigh_the_large_ones_up() -> None:
    from trustmh.judges.evidence import even_allocation_effect

    assert even_allocation_effect([8] * 16 + [1] * 24, 48) > 1.4


def test_sized_on_the_clustered_interval_a_rate_needs_more_labels_than_on_the_normal_one() -> None:
    sizes = [8] * 16 + [1] * 24
    plain = labels_needed(kind="labels", spread=0.09, n_effective=152, n_items=152, width=0.15, min_n=30, rate=0.1)
    clustered = labels_needed(kind="labels", spread=0.09, n_effective=152, n_items=152, width=0.15, min_n=30,
                              rate=0.1, sizes=sizes)
    assert clustered.n > plain.n


def test_when_the_clustered_judge_only_interval_is_too_wide_no_count_is_given() -> None:
    # every item labelled leaves the people's own figure on the same effective n: no count of labels narrows it
    got = labels_needed(kind="labels", spread=0.09, n_effective=60, n_items=152, width=0.15, min_n=30, rate=0.1,
                        sizes=[8] * 16 + [1] * 24)
    assert (got.n, "more items, not labels" in got.binding) == (None, True)


def test_a_clustered_interval_too_wide_for_labels_states_its_width() -> None:
    # the plan's Wilson width can fit where the gate's clustered Clopper-Pearson does not: the line says how wide
    from trustmh.judges.evidence import _clustered_width

    got = labels_needed(kind="labels", spread=0.09, n_effective=71, n_items=152, width=0.15, min_n=30, rate=0.1,
                        sizes=[2] * 76)
    assert f"({_clustered_width(0.1, 0.09 / 71, 76):.3f}, clustered on 76 units" in got.binding
