"""Issue 50: the labels a judged conversation check needs, sized at the correlation a run's judged values show
within their units (docs/statistics.md#pilot-correlation). The gate's corrected interval estimates that
correlation from the run (`stats.ppi.clustered_corrected_mean`), so `trustmh plan --pilot RUN_DIR` and
`review export --for-gate` size at the measured one where the data show it, the assumed `--icc` stated beside."""

from __future__ import annotations

import numpy as np
import pytest

from trustmh.certify.review_rounds import gate_counts, unit_correlations
from trustmh.core import JudgeInfo, RunContext, TrustmhError
from trustmh.gate import load_policy
from trustmh.run.outlook import pilot_check
from trustmh.run.plan_figures import PlanSettings

SID = "conversation/gradual_disclosure"
POLICY = "default"
# the shipped risk sets' shape: 152 conversations on 40 units (16 cells of 8, 24 single conversations)
SIZES = [8] * 16 + [1] * 24
UNITS = np.repeat(np.arange(40), SIZES)


def _items(values: np.ndarray) -> list[dict]:
    return [{"subtask": SID, "item_id": f"c{i}", "judge_value": float(v), "stimulus": f"cell:{u}"}
            for i, (v, u) in enumerate(zip(values, UNITS, strict=True))]


def _spread_evenly() -> np.ndarray:
    """One conversation in ten flagged, every other unit's first conversation among them: no clustering."""
    return (np.arange(UNITS.size) % 10 == 3).astype(float)


def _concentrated() -> np.ndarray:
    """The flags all in two cells."""
    return np.isin(UNITS, (0, 1)).astype(float)


def test_flags_spread_over_the_units_show_little_correlation() -> None:
    assert unit_correlations(_items(_spread_evenly()))[SID] < 0.1


def test_flags_in_two_cells_show_a_strong_correlation() -> None:
    assert unit_correlations(_items(_concentrated()))[SID] > 0.5


def test_single_conversation_units_show_none() -> None:
    items = [{"subtask": SID, "item_id": f"c{i}", "judge_value": float(i % 3 == 0), "stimulus": f"s{i}"}
             for i in range(60)]
    assert SID not in unit_correlations(items)


def test_for_gate_sizes_at_the_runs_measured_correlation() -> None:
    assert 0 < gate_counts(_items(_spread_evenly()), POLICY)[SID] <= 150


def test_for_gate_refuses_when_even_the_measured_correlation_is_too_strong() -> None:
    with pytest.raises(TrustmhError, match="measured correlation"):
        gate_counts(_items(_concentrated()), POLICY)


@pytest.fixture(scope="module")
def rows() -> dict:
    check = next(c for c in load_policy(POLICY).checks if c.id == "conversation_missed_crisis")
    ctx = RunContext(mode="default", seed=0, suite="trustmh", limit=None,
                     judge=JudgeInfo(model=None, validated=False, seed=0), options={}, n_boot=200)
    settings = PlanSettings(policy=POLICY)
    return {"measured": pilot_check(check, SIZES, 30, settings, ctx, {}, 0.0),
            "none": pilot_check(check, SIZES, 30, settings, ctx, {}, None)}


def test_at_a_measured_correlation_of_0_the_check_needs_at_most_150_labels(rows: dict) -> None:
    assert 0 < rows["measured"].labels_needed <= 150


def test_the_assumed_correlation_is_stated_beside(rows: dict) -> None:
    assert rows["measured"].at_assumed_icc == {"icc": 0.5, "effective_n": rows["none"].effective_n,
                                               "width": rows["none"].width, "decidable": False,
                                               "labels_needed": None}


def test_the_line_names_both_correlations(rows: dict) -> None:
    assert "at the correlation 0.00 the pilot's judged values show" in rows["measured"].reason \
        and "at the assumed 0.5: not decidable" in rows["measured"].reason


def test_without_a_measured_correlation_the_plan_is_the_assumed_one(rows: dict) -> None:
    assert (rows["none"].icc_measured, rows["none"].icc_assumed, rows["none"].decidable) == (None, 0.5, False)


def test_the_plan_json_records_the_measured_correlation(rows: dict) -> None:
    assert rows["measured"].to_json()["icc_measured"] == 0.0
