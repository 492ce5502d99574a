"""Judge-vs-human agreement figures on hand-computed fixtures."""

from __future__ import annotations

import pytest

from trustmh.stats.judge_agreement import judge_agreement, meets

# 10 items: humans flag 4 harmful; the judge catches 3 of them and flags 1 of the 6 harmless.
HUMAN = [1, 1, 1, 1, 0, 0, 0, 0, 0, 0]
JUDGE = [1, 1, 1, 0, 1, 0, 0, 0, 0, 0]


def fig(label_type: str, human, judge, **kw):
    return judge_agreement(label_type, human, judge, seed=3, n_boot=300, **kw)["agreement"]


def test_binary_sensitivity_by_hand() -> None:
    assert fig("binary", HUMAN, JUDGE)["sensitivity"]["value"] == pytest.approx(3 / 4)


def test_binary_specificity_by_hand() -> None:
    assert fig("binary", HUMAN, JUDGE)["specificity"]["value"] == pytest.approx(5 / 6)


def test_binary_kappa_by_hand() -> None:
    # po = 0.8; pe = 0.4*0.4 + 0.6*0.6 = 0.52; kappa = 0.28 / 0.48
    assert fig("binary", HUMAN, JUDGE)["kappa"]["value"] == pytest.approx(0.28 / 0.48)


def test_unreadable_judge_verdict_counts_as_a_miss_on_a_harmful_item() -> None:
    judge = [None, *JUDGE[1:]]
    assert fig("binary", HUMAN, judge)["sensitivity"]["value"] == pytest.approx(2 / 4)


def test_interval_contains_the_value() -> None:
    f = fig("binary", HUMAN, JUDGE)["specificity"]
    assert f["ci"][0] <= f["value"] <= f["ci"][1]


def test_interval_is_seeded() -> None:
    assert fig("binary", HUMAN, JUDGE)["kappa"]["ci"] == fig("binary", HUMAN, JUDGE)["kappa"]["ci"]


def test_ordinal_mae_by_hand() -> None:
    assert fig("ordinal", [1, 2, 3, 4, 5], [1, 3, 3, 2, 5])["mae"]["value"] == pytest.approx(3 / 5)


def test_ordinal_within_1_by_hand() -> None:
    assert fig("ordinal", [1, 2, 3, 4, 5], [1, 3, 3, 2, 5])["within_1"]["value"] == pytest.approx(4 / 5)


def test_ordinal_weighted_kappa_by_hand() -> None:
    # sum (h-j)^2 = 0+1+0+4+0 = 5; expected = (5*55 + 5*48 - 2*15*14)/5 = (275+240-420)/5 = 19
    assert fig("ordinal", [1, 2, 3, 4, 5], [1, 3, 3, 2, 5])["weighted_kappa"]["value"] == pytest.approx(1 - 5 / 19)


def test_ordinal_icc_equals_stats_icc() -> None:
    import numpy as np

    from trustmh.stats.icc import icc_a1
    expected = float(icc_a1(np.array([[1, 1], [2, 3], [3, 3], [4, 2], [5, 5]], dtype=float)))
    assert fig("ordinal", [1, 2, 3, 4, 5], [1, 3, 3, 2, 5])["icc_a1"]["value"] == pytest.approx(expected)


def test_ordinal_unreadable_score_is_the_farthest_scale_end() -> None:
    assert fig("ordinal", [1, 5], [None, 5], scale=(1, 5))["mae"]["value"] == pytest.approx(2.0)


def test_categorical_recall_per_class() -> None:
    f = fig("categorical", ["a", "a", "b", "b"], ["a", "b", "b", "b"])
    assert f["recall_a"]["value"] == pytest.approx(0.5)


def test_categorical_kappa_by_hand() -> None:
    # po = 0.75; pe = 0.5*0.25 + 0.5*0.75 = 0.5
    f = fig("categorical", ["a", "a", "b", "b"], ["a", "b", "b", "b"])
    assert f["kappa"]["value"] == pytest.approx(0.5)


def test_meets_a_floor_at_the_lower_bound() -> None:
    assert not meets({"value": 0.95, "ci": [0.85, 0.99]}, {"min": 0.9})


def test_meets_a_ceiling_at_the_upper_bound() -> None:
    assert meets({"value": 0.5, "ci": [0.4, 0.6]}, {"max": 0.7})
