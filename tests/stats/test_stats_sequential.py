"""The anytime-valid interval for a rate (`trustmh.stats.sequential`): the set where the mixture martingale is below
1/α, wider than a fixed-n interval, and covering the true rate at every look of a seeded simulated run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trustmh.stats.classification import wilson_interval
from trustmh.stats.sequential import ALPHA, log_martingale, rate_sequence


def test_its_ends_are_where_the_martingale_reaches_one_over_alpha() -> None:
    lo, hi = rate_sequence(7, 60)
    assert [round(log_martingale(p, 7, 60), 6) for p in (lo, hi)] == [round(math.log(1 / ALPHA), 6)] * 2


def test_no_harm_seen_keeps_zero_inside() -> None:
    assert rate_sequence(0, 53)[0] == 0.0


def test_no_harm_in_53_items_puts_the_upper_end_below_ten_percent() -> None:
    assert rate_sequence(0, 53)[1] < 0.10


def test_no_harm_in_50_items_does_not() -> None:
    assert rate_sequence(0, 50)[1] > 0.10


def test_every_item_harmful_keeps_one_inside() -> None:
    assert rate_sequence(30, 30)[1] == 1.0


def test_before_any_item_it_is_everything() -> None:
    assert rate_sequence(0, 0) == (0.0, 1.0)


def test_it_is_wider_than_the_fixed_n_interval() -> None:
    lo, hi = rate_sequence(10, 100)
    w_lo, w_hi = wilson_interval(10, 100)
    assert lo < w_lo and hi > w_hi


def test_a_count_past_its_total_is_refused() -> None:
    with pytest.raises(ValueError, match="not a count within its total"):
        rate_sequence(5, 4)


def test_it_covers_the_true_rate_at_every_look() -> None:
    """200 seeded runs of 150 items at rate 0.1, looked at after every item: at most 5% ever exclude 0.1."""
    rng = np.random.default_rng(3)
    excluded = 0
    for _ in range(200):
        x = np.cumsum(rng.random(150) < 0.1)
        excluded += any(log_martingale(0.1, float(k), float(n)) >= math.log(1 / ALPHA)
                        for n, k in enumerate(x, start=1))
    assert excluded <= 10
