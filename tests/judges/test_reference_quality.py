"""The reference-quality rule (trustmh.judges.reference_quality): humans' own agreement first, then the judge in
every rater's seat against the other raters' consensus, the worst seat's lower bound deciding."""

from __future__ import annotations

import numpy as np
import pytest

from trustmh.judges.reference_quality import (
    CANNOT_CERTIFY,
    CERTIFIED,
    FLOORS,
    MARGIN,
    NOT_CERTIFIED,
    TOO_SMALL,
    certify_criterion,
    human_agreement,
    overall_status,
)
from trustmh.stats.agreement import fleiss_kappa, krippendorff_alpha, ratings_to_table
from trustmh.stats.icc import icc_a1

N_BOOT = 300


def _ratings(noise: float, *, n: int = 60, raters: int = 4, seed: int = 1) -> dict[str, dict[str, int]]:
    """Synthetic 1-6 ratings: a true score per item plus each rater's noise (small noise = raters agree)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 7, n)
    return {f"i{i}": {f"C{r + 1}": int(np.clip(np.rint(truth[i] + rng.normal(0, noise)), 1, 6))
                      for r in range(raters)} for i in range(n)}


def _labels(flip: float, *, n: int = 80, seed: int = 2) -> dict[str, dict[str, str]]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, n)
    return {f"i{i}": {f"A{r}": ("yes" if (truth[i] ^ (rng.random() < flip)) else "no") for r in range(3)}
            for i in range(n)}


def _copy(humans: dict[str, dict[str, object]], rater: str) -> dict[str, object]:
    return {i: row[rater] for i, row in humans.items()}


AGREE = _ratings(0.35)
DISAGREE = _ratings(2.5)


def test_human_agreement_is_icc_a1_when_every_rater_rated_every_item() -> None:
    got = human_agreement(AGREE, "ratings", seed=0, n_boot=N_BOOT)
    matrix = np.array([[row[r] for r in sorted(row)] for row in AGREE.values()], dtype=float)
    assert (got["statistic"], got["value"]) == ("icc_a1", pytest.approx(float(icc_a1(matrix))))


def test_human_agreement_is_interval_alpha_when_a_rating_is_missing() -> None:
    humans = {i: dict(row) for i, row in AGREE.items()}
    humans["i0"]["C2"] = None
    got = human_agreement(humans, "ratings", seed=0, n_boot=N_BOOT)
    matrix = np.array([[np.nan if row[r] is None else row[r] for r in sorted(row)] for row in humans.values()])
    assert (got["statistic"], got["value"]) == ("krippendorff_alpha_interval",
                                                pytest.approx(krippendorff_alpha(matrix.T, level="interval")))


def test_human_agreement_is_fleiss_kappa_for_complete_labels() -> None:
    humans = _labels(0.05)
    got = human_agreement(humans, "labels", seed=0, n_boot=N_BOOT)
    codes = np.array([[0 if row[r] == "no" else 1 for r in sorted(row)] for row in humans.values()])
    assert (got["statistic"], got["value"]) == ("fleiss_kappa",
                                                pytest.approx(fleiss_kappa(ratings_to_table(codes, [0, 1]))))


def test_human_agreement_interval_is_seeded() -> None:
    a = human_agreement(DISAGREE, "ratings", seed=7, n_boot=N_BOOT)
    b = human_agreement(DISAGREE, "ratings", seed=7, n_boot=N_BOOT)
    assert a["ci"] == b["ci"]


def test_items_rated_by_fewer_than_two_raters_are_left_out_and_counted() -> None:
    humans = {i: dict(row) for i, row in AGREE.items()}
    humans["i3"] = {"C1": 4, "C2": None, "C3": None, "C4": None}
    got = human_agreement(humans, "ratings", seed=0, n_boot=N_BOOT)
    assert (got["n_items"], got["n_items_unpairable"]) == (59, 1)


def test_copying_one_rater_where_raters_disagree_cannot_be_certified() -> None:
    verdict = certify_criterion(DISAGREE, _copy(DISAGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.status == CANNOT_CERTIFY


def test_the_cannot_certify_reason_gives_the_humans_figure_and_the_floor() -> None:
    verdict = certify_criterion(DISAGREE, _copy(DISAGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    human = verdict.figures["humans"]["value"]
    assert f"icc_a1 {human:.2f}" in verdict.reason and f"floor {FLOORS['ratings']:g}" in verdict.reason


def test_cannot_certify_still_reports_the_judge_figures() -> None:
    verdict = certify_criterion(DISAGREE, _copy(DISAGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.figures["comparisons"]["C1"]["judge"]["value"] is not None


def test_copying_one_rater_where_raters_agree_is_certified() -> None:
    verdict = certify_criterion(AGREE, _copy(AGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.status == CERTIFIED, verdict.reason


def test_a_constant_judge_is_not_certified() -> None:
    verdict = certify_criterion(AGREE, {i: 4 for i in AGREE}, "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.status == NOT_CERTIFIED, verdict.reason


def test_an_exact_copy_in_its_raters_seat_scores_what_that_rater_scores() -> None:
    seat = certify_criterion(AGREE, _copy(AGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT).figures["comparisons"]["C1"]
    assert seat["judge"]["value"] == pytest.approx(seat["humans"]["value"])


def test_the_worst_seat_decides() -> None:
    figures = certify_criterion(AGREE, _copy(AGREE, "C2"), "ratings", seed=0, n_boot=N_BOOT).figures
    lows = {r: e["difference"]["ci"][0] for r, e in figures["comparisons"].items()}
    assert figures["worst_comparison"] == min(lows, key=lows.__getitem__)


def test_with_two_raters_a_noisy_copy_of_one_loses_in_that_raters_seat() -> None:
    humans = _ratings(1.0, n=200, raters=2, seed=5)
    rng = np.random.default_rng(9)
    copy = {i: v + float(rng.normal(0, 0.5)) for i, v in _copy(humans, "C1").items()}
    seats = certify_criterion(humans, copy, "ratings", seed=0, n_boot=N_BOOT).figures["comparisons"]
    assert seats["C1"]["difference"]["value"] < 0


def test_a_seat_interval_is_never_narrower_than_a_human_level_judges() -> None:
    humans = _ratings(1.0, n=200, raters=2, seed=5)
    figures = certify_criterion(humans, _copy(humans, "C1"), "ratings", seed=0, n_boot=N_BOOT).figures
    lo, hi = figures["comparisons"]["C1"]["difference"]["ci"]
    assert hi - lo >= 2 * 1.95 * figures["power"]["difference_sd"]


def test_unreadable_judge_values_count_against_the_judge() -> None:
    judge = _copy(AGREE, "C1")
    for i in list(judge)[:20]:
        judge[i] = None
    verdict = certify_criterion(AGREE, judge, "ratings", seed=0, n_boot=N_BOOT, scale=(1, 6))
    assert (verdict.status, verdict.figures["n_judge_invalid"]) == (NOT_CERTIFIED, 20)


def test_a_margin_is_recorded_and_loosens_the_comparison() -> None:
    near = {i: min(6, v + 1) if k % 3 == 0 else v for k, (i, v) in enumerate(_copy(AGREE, "C1").items())}
    strict = certify_criterion(AGREE, near, "ratings", seed=0, n_boot=N_BOOT, margin=0.0)
    loose = certify_criterion(AGREE, near, "ratings", seed=0, n_boot=N_BOOT, margin=0.5)
    assert (strict.status, loose.status, loose.figures["margin"]) == (NOT_CERTIFIED, CERTIFIED, 0.5)


def test_the_default_margin_is_recorded() -> None:
    verdict = certify_criterion(AGREE, _copy(AGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.figures["margin"] == MARGIN == 0.05


def test_labels_copy_certified_where_annotators_agree_on_a_large_reference() -> None:
    humans = _labels(0.03, n=1500)
    verdict = certify_criterion(humans, _copy(humans, "A0"), "labels", seed=0, n_boot=N_BOOT)
    assert verdict.status == CERTIFIED, verdict.reason


def test_labels_constant_judge_not_certified() -> None:
    humans = _labels(0.03)
    verdict = certify_criterion(humans, {i: "no" for i in humans}, "labels", seed=0, n_boot=N_BOOT)
    assert verdict.status == NOT_CERTIFIED, verdict.reason


def test_labels_where_annotators_disagree_cannot_certify() -> None:
    humans = _labels(0.45)
    verdict = certify_criterion(humans, _copy(humans, "A0"), "labels", seed=0, n_boot=N_BOOT)
    assert verdict.status == CANNOT_CERTIFY


def test_one_rater_cannot_certify() -> None:
    humans = {i: {"C1": row["C1"]} for i, row in AGREE.items()}
    verdict = certify_criterion(humans, _copy(AGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT)
    assert verdict.status == CANNOT_CERTIFY and "fewer than two raters" in verdict.reason


def test_overall_status_fail_outranks_cannot_certify() -> None:
    assert overall_status([CERTIFIED, CANNOT_CERTIFY, NOT_CERTIFIED]) == NOT_CERTIFIED


def test_overall_status_cannot_certify_is_never_a_pass() -> None:
    assert overall_status([CERTIFIED, CANNOT_CERTIFY]) == CANNOT_CERTIFY


def test_overall_status_all_certified() -> None:
    assert overall_status([CERTIFIED, CERTIFIED]) == CERTIFIED


def test_a_small_reference_says_it_is_too_small_and_how_many_items_would_do() -> None:
    verdict = certify_criterion(_labels(0.03), _copy(_labels(0.03), "A0"), "labels", seed=0, n_boot=N_BOOT)
    need = verdict.figures["power"]["items_for_target"]
    assert (verdict.status, verdict.reason.startswith(TOO_SMALL), f"about {need} items" in verdict.reason) == (
        CANNOT_CERTIFY, True, True)


def test_a_judge_shown_worse_is_not_certified_even_on_a_small_reference() -> None:
    humans = _labels(0.03)
    verdict = certify_criterion(humans, {i: "no" for i in humans}, "labels", seed=0, n_boot=N_BOOT)
    assert verdict.status == NOT_CERTIFIED


def test_a_one_class_reference_is_refused_with_a_reason() -> None:
    humans = {f"i{i}": {"A": "no", "B": "no"} for i in range(50)}
    verdict = certify_criterion(humans, {i: "no" for i in humans}, "labels", seed=0, n_boot=N_BOOT)
    assert (verdict.status, "one label only" in verdict.reason) == (CANNOT_CERTIFY, True)


def test_two_shared_positives_in_120_items_give_no_certainty() -> None:
    humans = {f"i{i}": {"A": int(i < 2), "B": int(i < 2)} for i in range(120)}
    humans_figure = certify_criterion(humans, _copy(humans, "A"), "labels", seed=0, n_boot=N_BOOT).figures["humans"]
    assert humans_figure["ci"][0] < FLOORS["labels"]


def test_positive_and_negative_agreement_stand_beside_kappa() -> None:
    # A vs B: 8 both-yes, 2 A-only, 2 B-only, 88 both-no: positive agreement 16/20, negative 176/180
    pattern = [(1, 1)] * 8 + [(1, 0)] * 2 + [(0, 1)] * 2 + [(0, 0)] * 88
    humans = {f"i{i}": {"A": a, "B": b} for i, (a, b) in enumerate(pattern)}
    seat = certify_criterion(humans, _copy(humans, "A"), "labels", seed=0, n_boot=N_BOOT).figures["comparisons"]["A"]
    assert seat["specific_agreement"]["humans"] == {"0": pytest.approx(176 / 180), "1": pytest.approx(16 / 20)}


def test_clusters_are_the_bootstrap_unit_and_are_counted() -> None:
    clusters = {i: f"c{k // 5}" for k, i in enumerate(AGREE)}
    figures = certify_criterion(AGREE, _copy(AGREE, "C1"), "ratings", seed=0, n_boot=N_BOOT, clusters=clusters).figures
    assert figures["n_clusters"] == 12


def test_the_humans_agreement_is_measured_on_the_whole_reference_when_the_judge_saw_a_sample() -> None:
    sample = dict(list(_copy(AGREE, "C1").items())[:10])
    whole = human_agreement(AGREE, "ratings", seed=0, n_boot=N_BOOT)["value"]
    figures = certify_criterion(AGREE, sample, "ratings", seed=0, n_boot=N_BOOT).figures
    assert (figures["humans"]["value"], figures["n_items_judged"]) == (pytest.approx(whole), 10)


def test_a_reference_certified_on_a_sample_is_a_trial() -> None:
    from trustmh.judges.reference_quality import certify_reference

    sample = dict(list(_copy(AGREE, "C1").items())[:10])
    quality = certify_reference(AGREE, sample, label_type="ordinal", seed=0, n_boot=N_BOOT)
    assert (quality["trial"], quality["n_reference_items"], quality["n_judged_items"]) == (True, 60, 10)
