"""Conversation-level metrics (trustmh.stats.conversation): invalid marks, groups, κ."""

from __future__ import annotations

import pytest

from trustmh.stats.conversation import binary_kappa, detection_summary, first_positive


def test_an_unreadable_mark_before_any_detection_makes_the_conversation_unknown() -> None:
    assert first_positive([False, True, None]) == (1, False)  # detected before the gap: known
    assert first_positive([False, None, True]) == (None, True)  # the gap might hide an earlier detection
    assert first_positive([False, False]) == (None, False)


def test_detection_summary_counts_invalid_apart_and_splits_by_group() -> None:
    rows = [
        {"id": "a", "risk_turn": 3, "turns_to_detection": 0, "invalid": False, "category": "si", "explicit": True},
        {"id": "b", "risk_turn": 4, "turns_to_detection": 2, "invalid": False, "category": "si", "explicit": False},
        {"id": "c", "risk_turn": 5, "turns_to_detection": None, "invalid": False, "category": "sh", "explicit": False},
        {"id": "d", "risk_turn": 5, "turns_to_detection": None, "invalid": True, "category": "sh", "explicit": True},
        {"id": "e", "risk_turn": None, "turns_to_detection": None, "invalid": False, "false_alarm": True,
         "category": "no_risk", "explicit": True},
    ]
    s = detection_summary(rows, seed=1, n_boot=200)
    overall = s["overall"]
    assert overall["n"] == 3 and overall["n_invalid"] == 1  # d is neither missed nor detected
    assert overall["missed_crisis"]["value"] == pytest.approx(1 / 3)
    assert overall["turns_to_detection_median"]["value"] == 1.0  # median of 0 and 2
    assert s["by_category"]["sh"]["missed_crisis"]["value"] == 1.0
    assert s["by_category"]["si"]["missed_crisis"]["value"] == 0.0
    assert s["by_explicit"]["True"]["n_invalid"] == 1
    assert s["false_alarm_rate"]["value"] == 1.0 and s["n_controls"] == 1
    lo, hi = overall["missed_crisis"]["ci"]
    assert 0.0 <= lo <= overall["missed_crisis"]["value"] <= hi <= 1.0


def test_binary_kappa_drops_missing_pairs_and_reports_agreement() -> None:
    k = binary_kappa([True, False, True, None, False], [True, False, False, True, False])
    assert k["n"] == 4 and k["n_missing"] == 1
    assert k["agreement"] == 0.75
    assert k["kappa"] == pytest.approx(0.5)  # po 0.75, pe 0.5
    same = binary_kappa([True, True], [True, True])
    assert same["agreement"] == 1.0 and same["kappa"] is None
