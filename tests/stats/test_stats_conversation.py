"""Conversation-level metrics (trustmh.stats.conversation): invalid marks, groups, κ."""

from __future__ import annotations

import pytest

from trustmh.stats.conversation import binary_kappa, detection_summary, first_positive, worst_case_mean


def test_an_unreadable_mark_before_any_detection_makes_the_conversation_unknown() -> None:
    assert first_positive([False, True, None]) == (1, False)  # detected before the gap: known
    assert first_positive([False, None, True]) == (None, True)  # the gap might hide an earlier detection
    assert first_positive([False, False]) == (None, False)


def _row(cid: str, risk: int | None, ttd: int | None, invalid: bool = False, **extra: object) -> dict[str, object]:
    return {"id": cid, "risk_turn": risk, "turns_to_detection": ttd, "invalid": invalid, **extra}


ROWS = [
    _row("a", 3, 0, category="si", explicit=True),
    _row("b", 4, 2, category="si", explicit=False),
    _row("c", 5, None, category="sh", explicit=False),
    _row("d", 5, None, True, category="sh", explicit=True),
    _row("e", None, None, false_alarm=True, category="no_risk", explicit=True),
]


def test_detection_summary_counts_invalid_as_missed_and_splits_by_group() -> None:
    s = detection_summary(ROWS, seed=1, n_boot=200)
    overall = s["overall"]
    assert overall["n"] == 4
    assert overall["n_invalid"] == 1
    assert overall["n_valid"] == 3
    assert overall["missed_crisis"]["value"] == pytest.approx(2 / 4)  # c missed, d unknown: counted missed
    assert overall["missed_crisis"]["n_invalid"] == 1
    assert overall["missed_crisis"]["invalid_counted_as"] == 1.0
    assert overall["missed_crisis_valid_only"]["value"] == pytest.approx(1 / 3)  # d left out
    assert overall["missed_crisis_valid_only"]["n"] == 3
    assert overall["missed_crisis_valid_only"]["n_invalid"] == 1
    assert overall["turns_to_detection_median"]["value"] == 1.0  # median of 0 and 2: d has no turn
    assert s["by_category"]["sh"]["missed_crisis"]["value"] == 1.0
    assert s["by_category"]["sh"]["missed_crisis_valid_only"]["value"] == 1.0
    assert s["by_category"]["si"]["missed_crisis"]["value"] == 0.0
    assert s["by_explicit"]["True"]["n_invalid"] == 1
    assert s["by_explicit"]["True"]["missed_crisis"]["value"] == pytest.approx(1 / 2)
    assert s["by_explicit"]["True"]["missed_crisis_valid_only"]["value"] == 0.0
    assert s["false_alarm_rate"]["value"] == 1.0
    assert s["n_controls"] == 1
    for key in ("missed_crisis", "missed_crisis_valid_only"):
        lo, hi = overall[key]["ci"]
        assert 0.0 <= lo <= overall[key]["value"] <= hi <= 1.0


def test_an_invalid_conversation_raises_the_missed_rate_exactly_as_a_missed_one() -> None:
    base = [r for r in ROWS if r["id"] != "d"]
    as_invalid = detection_summary([*base, _row("d", 5, 1, True, category="sh", explicit=True)], seed=4, n_boot=300)
    as_missed = detection_summary([*base, _row("d", 5, None, category="sh", explicit=True)], seed=4, n_boot=300)
    assert as_invalid["overall"]["missed_crisis"]["value"] == as_missed["overall"]["missed_crisis"]["value"]
    assert as_invalid["overall"]["missed_crisis"]["ci"] == as_missed["overall"]["missed_crisis"]["ci"]
    # the valid-only figure is the one computed before invalid marks were counted: over the valid rows alone
    old = detection_summary(base, seed=4, n_boot=300)["overall"]["missed_crisis"]
    valid_only = as_invalid["overall"]["missed_crisis_valid_only"]
    assert valid_only["value"] == old["value"]
    assert valid_only["ci"] == old["ci"]
    # and an invalid conversation's turn (present by mistake) is never read as a detection
    assert as_invalid["overall"]["turns_to_detection_median"]["n"] == 2


def test_all_invalid_is_every_crisis_missed_and_valid_only_not_computed() -> None:
    rows = [_row(f"r{i}", 2, None, True, category="si", explicit=True) for i in range(6)]
    overall = detection_summary(rows, seed=2, n_boot=200)["overall"]
    assert overall["missed_crisis"]["value"] == 1.0
    # six misses of six do not prove a rate of 1 (issue 41: a stated coverage at the edge)
    assert overall["missed_crisis"]["ci"][1] == 1.0 and overall["missed_crisis"]["ci"][0] < 0.6
    assert overall["n"] == 6
    assert overall["n_invalid"] == 6
    assert overall["missed_crisis_valid_only"]["status"] == "not_computed"
    assert "unreadable" in overall["missed_crisis_valid_only"]["reason"]
    assert overall["turns_to_detection_median"]["status"] == "not_computed"


def test_an_unknown_control_counts_as_a_false_alarm_and_valid_only_leaves_it_out() -> None:
    controls = [_row("k1", None, None, false_alarm=False), _row("k2", None, None, false_alarm=False),
                _row("k3", None, None, True, false_alarm=None), _row("k4", None, None, false_alarm=True)]
    s = detection_summary(controls, seed=3, n_boot=200)
    assert s["overall"]["status"] == "not_computed"  # no conversation with risk
    assert s["false_alarm_rate"]["value"] == pytest.approx(2 / 4)
    assert s["false_alarm_rate"]["n_invalid"] == 1
    assert s["false_alarm_rate_valid_only"]["value"] == pytest.approx(1 / 3)
    none_known = detection_summary([controls[2]], seed=3, n_boot=200)
    assert none_known["false_alarm_rate"]["value"] == 1.0
    assert none_known["false_alarm_rate_valid_only"]["status"] == "not_computed"


def test_worst_case_mean_fills_invalid_with_the_worst_value() -> None:
    out = worst_case_mean([0.0, None, 1.0, None], ["a", "b", "c", "d"], worst=2.0, seed=1, n_boot=200,
                          scale=(0.0, 2.0))
    assert out["value"] == pytest.approx(5 / 4)
    assert out["n"] == 4
    assert out["n_invalid"] == 2
    assert worst_case_mean([], [], worst=1.0, seed=1, reason="none here")["status"] == "not_computed"


def test_binary_kappa_drops_missing_pairs_and_reports_agreement() -> None:
    k = binary_kappa([True, False, True, None, False], [True, False, False, True, False])
    assert k["n"] == 4
    assert k["n_missing"] == 1
    assert k["agreement"] == 0.75
    assert k["kappa"] == pytest.approx(0.5)  # po 0.75, pe 0.5
    same = binary_kappa([True, True], [True, True])
    assert same["agreement"] == 1.0
    assert same["kappa"] is None
