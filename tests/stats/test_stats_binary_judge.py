"""Sensitivity and specificity of a binary judge on the harmful class, by hand."""

from __future__ import annotations

import math

import pytest

from trustmh.stats.classification import binary_judge_agreement

Z = 1.959963984540054

# harmful: 2 flagged, 1 missed, 1 unusable verdict (a miss); harmless: 3 left alone, 1 flagged, 1 unusable
# verdict (a false alarm); one item without a human label
HUMAN = [1, 1, 1, 1, 0, 0, 0, 0, 0, None]
JUDGE = [1, 1, 0, None, 0, 0, 1, None, 0, 1]


def _wilson(k: int, n: int) -> tuple[float, float]:
    p = k / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / (1 + Z**2 / n)
    return centre - half, centre + half


@pytest.fixture(scope="module")
def agreement():
    return binary_judge_agreement(HUMAN, JUDGE)


def test_confusion_counts(agreement) -> None:
    assert (agreement.tp, agreement.fn, agreement.tn, agreement.fp) == (2, 2, 3, 2)


def test_sensitivity(agreement) -> None:
    assert agreement.sensitivity.value == 2 / 4


def test_sensitivity_wilson_interval(agreement) -> None:
    assert agreement.sensitivity.ci == pytest.approx(_wilson(2, 4), abs=1e-12)


def test_specificity(agreement) -> None:
    assert agreement.specificity.value == 3 / 5


def test_specificity_wilson_interval(agreement) -> None:
    assert agreement.specificity.ci == pytest.approx(_wilson(3, 5), abs=1e-12)


def test_missing_counts(agreement) -> None:
    assert (agreement.n, agreement.n_unlabelled, agreement.n_judge_invalid) == (9, 1, 2)


def test_perfect_judge_on_few_items_keeps_a_wide_interval() -> None:
    # 3 of 3 harmful items flagged: Wilson's lower bound is z²/(n+z²), far from 1
    sens = binary_judge_agreement([1, 1, 1], [1, 1, 1]).sensitivity
    assert sens.ci[0] == pytest.approx(3 / (3 + Z**2), abs=1e-12)


def test_no_harmful_item_leaves_sensitivity_undefined() -> None:
    sens = binary_judge_agreement([0, 0], [0, 1]).sensitivity
    assert (sens.value, sens.ci, sens.reason) == (None, None, "no item the humans labelled harmful")


def test_booleans_are_labels() -> None:
    assert binary_judge_agreement([True, False], [True, True]).fp == 1


def test_non_binary_label_is_refused() -> None:
    with pytest.raises(ValueError, match="0/1"):
        binary_judge_agreement([2], [1])


def test_to_json_carries_the_interval(agreement) -> None:
    assert agreement.to_json()["sensitivity"]["ci"] == list(agreement.sensitivity.ci)
