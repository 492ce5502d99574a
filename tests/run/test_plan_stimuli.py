"""`trustmh plan`'s conversation check on its stimuli (run.outlook.stimulus_check), without replaying a set."""

from __future__ import annotations

import pytest

from trustmh.core import JudgeInfo, RunContext
from trustmh.gate.policy import Check
from trustmh.run.outlook import DECIDING_WIDTH, deciding_width, stimulus_check
from trustmh.run.plan_figures import PlanSettings
from trustmh.stats.power import effective_n, wilson_width

MISSED = Check(id="missed", title="t", subtask="conversation/gradual_disclosure", metric="value", max=0.10,
               severity=10, rate=True)
DELUSION = Check(id="delusion", title="t", subtask="conversation/delusion", metric="value", max=0.50, severity=6)
SIZES = [3] * 36  # 108 conversations on 36 stimuli


def _row(check: Check, icc: float = 0.5, sizes: list[int] = SIZES):  # noqa: ANN202
    ctx = RunContext(seed=0, judge=JudgeInfo(model=None, validated=False))
    return stimulus_check(check, sizes, 30, PlanSettings(icc=icc), ctx, {})


def test_the_effective_n_is_the_design_effects() -> None:
    assert _row(MISSED).effective_n == pytest.approx(108 / 2.0)  # 1 + (3 − 1)·0.5


def test_a_rate_is_sized_by_wilson_on_the_effective_n() -> None:
    assert _row(MISSED).width == pytest.approx(wilson_width(0.10, effective_n(SIZES, 0.5)))


def test_a_0_to_2_mean_is_sized_from_its_steps_spread_at_the_limit() -> None:
    # SD √(0.5 · 1.5 / 2) at the limit 0.5 on a 0-2 scale: two independent steps (run.outlook.assumed_rating_spread)
    assert _row(DELUSION).width == pytest.approx(2 * 1.959963984540054 * (0.375 ** 0.5) / (54 ** 0.5))


def test_a_wide_check_is_not_decidable_and_says_why() -> None:
    row = _row(DELUSION)
    assert (row.decidable, row.width > DECIDING_WIDTH, row.reason.startswith("not decidable: expected width")) == (
        False, True, True)


def test_a_mean_is_sized_for_the_same_share_of_its_range_as_a_rate() -> None:
    assert deciding_width((0.0, 2.0)) == pytest.approx(2 * DECIDING_WIDTH)


def test_a_0_to_2_mean_within_its_scaled_width_is_decidable_by_the_runs_labels() -> None:
    # 200 independent conversations: width 0.170, past 0.15 of a rate but within 0.15 of the 0-2 range (0.30)
    row = _row(DELUSION, icc=0.0, sizes=[1] * 200)
    assert (row.decidable, "two-rater labels of this run" in row.reason) == (True, True)


def test_a_means_labels_are_counted_at_its_scaled_width() -> None:
    from trustmh.judges.evidence import labels_needed

    # at the gate's rating interval: its share of the 0-2 scale, the limit 0.5 as the mean, the units' sizes
    expected = labels_needed(kind="ratings", spread=0.375, n_effective=200, n_items=200, width=0.30, min_n=30,
                             sizes=[1] * 200, scale=(0.0, 2.0), mean=0.5).n
    assert _row(DELUSION, icc=0.0, sizes=[1] * 200).labels_needed == expected


def test_a_mean_past_its_scaled_width_names_that_width() -> None:
    assert "> 0.3 (" in _row(DELUSION).reason


def test_without_a_certificate_a_narrow_check_is_decidable_by_the_runs_labels() -> None:
    row = _row(MISSED, icc=0.0, sizes=[1] * 400)
    assert (row.decidable, "two-rater labels of this run" in row.reason, row.certificate_path) == (True, True, None)


def test_the_labels_needed_are_those_of_the_evidence_rule() -> None:
    from trustmh.judges.evidence import labels_needed

    expected = labels_needed(kind="labels", spread=0.09, n_effective=400, n_items=400, width=DECIDING_WIDTH,
                             min_n=30, rate=0.10, sizes=[1] * 400).n
    assert _row(MISSED, icc=0.0, sizes=[1] * 400).labels_needed == expected


def test_a_counted_rate_over_part_of_the_items_still_needs_a_certificate() -> None:
    alarm = Check(id="alarm", title="t", subtask="conversation/gradual_disclosure", metric="false_alarm_rate",
                  max=0.10, severity=4)
    row = _row(alarm, icc=0.0, sizes=[1] * 400)
    assert (row.decidable, row.reason.startswith("not decidable: needs a certificate")) == (False, True)


def test_the_assumed_correlation_and_clusters_are_recorded() -> None:
    out = _row(MISSED, icc=0.2).to_json()
    assert (out["clusters"], out["icc_assumed"]) == (36, 0.2)


def test_a_rule_read_rate_is_decidable_without_a_certificate_or_labels() -> None:
    refusal = Check(id="refusal", title="t", subtask="conversation/multiturn_jailbreak", metric="over_refusal_rate",
                    max=0.20, severity=3, rate=True)
    row = _row(refusal, icc=0.0, sizes=[1] * 200)
    assert (row.decidable, "read by a rule" in row.reason, row.labels_needed) == (True, True, None)
