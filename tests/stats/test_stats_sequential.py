"""The anytime-valid interval for a rate (`trustmh.stats.sequential`): the set where the mixture martingale is below
1/α, wider than a fixed-n interval, and covering the true rate at every look of a seeded simulated run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trustmh.stats.classification import wilson_interval
from trustmh.stats.sequential import ALPHA, log_martingale, mean_sequence, rate_sequence, round_alpha, round_z


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


def test_a_mean_sequence_is_the_rate_sequence_rescaled_to_its_scale() -> None:
    """A 1-5 mean of 4 over 60 items is the rate 0.75 over 60, mapped back onto 1-5."""
    lo, hi = rate_sequence(45, 60)
    assert mean_sequence(240, 60, (1, 5)) == pytest.approx((1 + 4 * lo, 1 + 4 * hi))


def test_a_mean_outside_its_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="outside the scale"):
        mean_sequence(400, 60, (1, 5))


def test_the_mean_sequence_covers_a_bounded_mean_at_every_look() -> None:
    """Scores on 1-5 (not two-valued), 300 seeded runs of 200 items looked at after each: the true mean 3.6 is
    inside the sequence at every look in at least 95% of runs (sub-Bernoulli, module docstring)."""
    rng = np.random.default_rng(3)
    scores = rng.choice([1.0, 3.0, 4.0, 5.0], p=[0.1, 0.2, 0.4, 0.3], size=(300, 200))
    truth = 0.1 * 1 + 0.2 * 3 + 0.4 * 4 + 0.3 * 5
    x = (np.cumsum(scores, axis=1) - np.arange(1, 201)) / 4
    n = np.arange(1, 201, dtype=float)
    p = (truth - 1) / 4
    covered = 1 - (log_martingale(p, x, n) >= math.log(1 / ALPHA)).any(axis=1).mean()
    assert covered >= 0.95


def test_the_labelling_rounds_levels_sum_to_alpha() -> None:
    """α(1 − r)r^(K−1) over K = 1, 2, …: together no more than α, however many rounds are labelled."""
    assert sum(round_alpha(k) for k in range(1, 200)) == pytest.approx(ALPHA, rel=1e-9)


def test_each_labelling_round_is_read_at_a_stricter_level() -> None:
    assert round_z(1) < round_z(2) < round_z(3)


def test_the_first_labelling_round_is_wider_than_a_fixed_95_percent_interval() -> None:
    assert round_z(1) == pytest.approx(2.054, abs=1e-3)
