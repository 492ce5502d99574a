"""The labels a judged check needs (trustmh.judges.evidence.labels_needed), on stated figures."""

from __future__ import annotations

import math

from trustmh.judges.evidence import labels_needed
from trustmh.stats.sequential import round_z


def _rate(p: float = 0.1, n_eff: float = 104, n_items: int = 104, min_n: int = 30, agreement: float = 0.8):  # noqa: ANN202
    return labels_needed(kind="labels", spread=p * (1 - p), n_effective=n_eff, n_items=n_items, width=0.15,
                         min_n=min_n, agreement=agreement, rate=p)


def test_the_count_is_plain_ppis_variance_solved_for_the_width_of_the_first_round() -> None:
    budget = (0.15 / (2 * round_z(1))) ** 2 - 0.09 / 104
    assert _rate().n == math.ceil(2 * 0.09 * 0.2 / budget)


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
    assert _rate(n_items=40).n is None
