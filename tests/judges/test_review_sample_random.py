"""Issue 50: a conversation review's sample is random over the stimuli. A sub-task's share is spread evenly over
its stimuli, so when it holds fewer labels than stimuli every stimulus has the same remainder; those that take
one are now chosen at random (seeded), where before the first in sorted order were always taken and the rest
never: the PPI estimate's validity rests on a random sample (docs/statistics.md#the-runs-own-labels)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

UNIT = "conversation/gradual_disclosure"
STIMULI, LABELS, DRAWS = 120, 30, 300


def _items() -> list[dict[str, Any]]:
    return [{"subtask": UNIT, "item_id": f"c{k}", "epoch": 1, "judge_value": 0.0, "disagree": False,
             "stimulus": f"s{k:03d}"} for k in range(STIMULI)]


@pytest.fixture(scope="module")
def draws() -> list[list[int]]:
    from trustmh.certify.review import draw_sample

    items = _items()
    return [sorted(int(s["item_id"][1:]) for s in draw_sample(items, LABELS, seed, oversample=False))
            for seed in range(DRAWS)]


def test_two_seeds_draw_different_stimuli(draws: list[list[int]]) -> None:
    assert draws[0] != draws[1]


def test_the_first_stimuli_in_sorted_order_are_drawn_at_their_share(draws: list[list[int]]) -> None:
    first = np.mean([sum(1 for k in d if k < LABELS) for d in draws]) / LABELS
    assert first == pytest.approx(LABELS / STIMULI, abs=0.05)  # was 1.0: always taken


def test_the_corrected_rate_is_unbiased_when_the_judge_misses_harm_late_in_the_order(draws: list[list[int]]) -> None:
    from trustmh.stats.ppi import corrected_mean

    human = np.array([1.0 if k >= 100 else 0.0 for k in range(STIMULI)])  # the judge (all 0) misses 20 harms
    judge = np.zeros(STIMULI)
    estimates = [corrected_mean(human[d], judge[d], judge).estimate for d in draws]
    assert abs(np.mean(estimates) - human.mean()) < 3 * np.std(estimates) / np.sqrt(DRAWS)
