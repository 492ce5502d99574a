"""Issue 50, near-zero harm (docs/statistics.md#rare-harms): where the judge flags few of a binary unit's items,
`review export --for-gate` stratifies the unit by the judge's flag and draws the flagged items more often
(`certify.review_rounds.mark_near_zero`, `FLAG_FACTOR`); the inclusion probabilities it records weigh each label
by 1/π in the PPI estimate, so the estimate stays unbiased, and its interval is narrower than a uniform sample's
of the same size.

A simulated set, seeded: 300 conversations of one stimulus each, a true harm rate of 3%, a judge that sees 80%
of the harms and flags 3% of the others; 60 labels per draw, 400 draws."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

UNIT = "conversation/gradual_disclosure:false_alarm_rate"
N_ITEMS, N_LABELS, DRAWS = 300, 60, 400


@pytest.fixture(scope="module")
def population() -> tuple[list[dict[str, Any]], np.ndarray]:
    rng = np.random.default_rng(20261202)
    human = (rng.random(N_ITEMS) < 0.03).astype(float)
    judge = np.where(human == 1, rng.random(N_ITEMS) < 0.8, rng.random(N_ITEMS) < 0.03).astype(float)
    items = [{"subtask": UNIT, "item_id": f"c{i}", "epoch": 1, "judge_value": float(judge[i]), "disagree": False,
              "stimulus": f"s{i}"} for i in range(N_ITEMS)]
    return items, human


def _estimates(items: list[dict[str, Any]], human: np.ndarray, draw: Any) -> np.ndarray:
    """(estimate, interval width) of the PPI figure for each of DRAWS samples `draw(seed)` returns as
    (item indexes, inclusion probabilities)."""
    from trustmh.stats.ppi import corrected_mean, inverse_probability_weights

    judge = np.array([it["judge_value"] for it in items])
    out = []
    for seed in range(DRAWS):
        picks, pi = draw(seed)
        res = corrected_mean(human[picks], judge[picks], judge, weights=inverse_probability_weights(pi))
        out.append((res.estimate, res.ci[1] - res.ci[0] if res.ci else np.nan))
    return np.array(out)


@pytest.fixture(scope="module")
def oversampled(population: tuple[list[dict[str, Any]], np.ndarray]) -> np.ndarray:
    from trustmh.certify.review import draw_sample
    from trustmh.certify.review_rounds import mark_near_zero

    items, human = [dict(it) for it in population[0]], population[1]
    mark_near_zero(items)
    index = {it["item_id"]: i for i, it in enumerate(items)}

    def draw(seed: int) -> tuple[np.ndarray, np.ndarray]:
        sample = draw_sample(items, N_LABELS, seed, oversample=False)
        return (np.array([index[s["item_id"]] for s in sample]),
                np.array([s["inclusion_probability"] for s in sample]))

    return _estimates(items, human, draw)


@pytest.fixture(scope="module")
def uniform(population: tuple[list[dict[str, Any]], np.ndarray]) -> np.ndarray:
    items, human = population

    def draw(seed: int) -> tuple[np.ndarray, np.ndarray]:
        picks = np.random.default_rng(seed).choice(N_ITEMS, size=N_LABELS, replace=False)
        return picks, np.full(N_LABELS, N_LABELS / N_ITEMS)

    return _estimates(items, human, draw)


def test_a_unit_the_judge_rarely_flags_is_marked_near_zero(population: tuple) -> None:
    from trustmh.certify.review_rounds import mark_near_zero

    items = [dict(it) for it in population[0]]
    assert list(mark_near_zero(items)) == [UNIT]


def test_a_primary_whose_rare_verdict_is_a_fail_is_marked_on_the_fail() -> None:
    from trustmh.certify.review_rounds import mark_near_zero

    items = [{"subtask": "conversation/ai_disclosure", "judge_value": 0.0 if i < 3 else 1.0} for i in range(40)]
    assert mark_near_zero(items)["conversation/ai_disclosure"]["verdict"] == 0.0


def test_a_unit_the_judge_often_flags_is_not() -> None:
    from trustmh.certify.review_rounds import mark_near_zero

    items = [{"subtask": UNIT, "judge_value": float(i % 2)} for i in range(40)]
    assert mark_near_zero(items) == {}


def test_a_unit_of_ratings_is_not() -> None:
    from trustmh.certify.review_rounds import mark_near_zero

    items = [{"subtask": "conversation/delusion", "judge_value": 3.0 if i else 1.0} for i in range(40)]
    assert mark_near_zero(items) == {}


def test_the_flagged_items_are_drawn_more_often(population: tuple) -> None:
    from trustmh.certify.review import draw_sample
    from trustmh.certify.review_rounds import FLAG_FACTOR, mark_near_zero

    items = [dict(it) for it in population[0]]
    mark_near_zero(items)
    pi = {s["judge_value"]: s["inclusion_probability"] for s in draw_sample(items, N_LABELS, 1, oversample=False)}
    assert pi[1.0] / pi[0.0] == pytest.approx(FLAG_FACTOR, rel=0.25)


def test_the_weighted_estimate_is_unbiased(oversampled: np.ndarray, population: tuple) -> None:
    truth = float(population[1].mean())
    error = oversampled[:, 0].mean() - truth
    assert abs(error) < 3 * oversampled[:, 0].std() / np.sqrt(DRAWS)


def test_the_interval_is_narrower_than_a_uniform_samples(oversampled: np.ndarray, uniform: np.ndarray) -> None:
    assert np.nanmean(oversampled[:, 1]) < 0.85 * np.nanmean(uniform[:, 1])


def test_a_second_round_keeps_the_rare_strata_and_their_share_taken(population: tuple) -> None:
    from trustmh.certify.review import draw_sample
    from trustmh.certify.review_rounds import cumulative_inclusion, mark_near_zero

    items = [dict(it) for it in population[0]]
    mark_near_zero(items)
    first = draw_sample(items, 20, 1, oversample=False)
    taken = {s["item_id"] for s in first}
    second = draw_sample([it for it in items if it["item_id"] not in taken], 20, [1, 2], oversample=False)
    both = [*first, *second]
    cumulative_inclusion(both, items, oversample=False)
    unflagged = sum(1 for it in items if it["judge_value"] == 0.0)
    drawn = sum(1 for s in both if s["judge_value"] == 0.0)
    assert {s["inclusion_probability"] for s in both if s["judge_value"] == 0.0} == {drawn / unflagged}
