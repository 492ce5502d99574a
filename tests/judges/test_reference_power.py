"""A reference's power to certify a human-level judge (trustmh.judges.reference_power) and the rule on simulated
references (the fast version of benchmarks/certificate_power.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trustmh.judges.reference_power import TARGET_POWER, reference_power
from trustmh.judges.reference_quality import CERTIFIED, certify_criterion

ICC = 0.65
SIGMA = math.sqrt((1 - ICC) / ICC)


def _power(n: int, k: int = 2) -> dict:
    return reference_power("ratings", n, k, ICC, floor=0.5, margin=0.05, seed=1)


def test_two_raters_on_150_items_can_rarely_certify_a_human_level_judge() -> None:
    assert _power(150)["power"] < 0.15


def test_the_items_that_would_suffice_are_more_than_the_reference_has() -> None:
    assert _power(150)["items_for_target"] > 150


def test_power_rises_with_the_items() -> None:
    assert _power(150)["power"] < _power(1000)["power"]


def test_the_stated_size_reaches_the_target_power() -> None:
    need = _power(150)["items_for_target"]
    assert _power(need)["power"] >= TARGET_POWER - 0.07  # Monte Carlo error of 400 simulated references


def test_an_undefined_agreement_has_no_power() -> None:
    assert reference_power("ratings", 150, 2, None, floor=0.5, margin=0.05, seed=1)["power"] is None


def _reference(rng: np.random.Generator, n: int) -> tuple[dict, dict[str, dict]]:
    truth = rng.normal(size=n)
    raters = truth[:, None] + rng.normal(scale=SIGMA, size=(n, 2))
    judges = {"human": truth + rng.normal(scale=SIGMA, size=n),
              "copy": raters[:, 0] + rng.normal(scale=SIGMA / 2, size=n),
              "worse": truth + rng.normal(scale=1.5 * SIGMA, size=n)}
    humans = {f"i{i}": {"A": float(raters[i, 0]), "B": float(raters[i, 1])} for i in range(n)}
    return humans, {name: {f"i{i}": float(v[i]) for i in range(n)} for name, v in judges.items()}


@pytest.fixture(scope="module")
def certified_counts() -> dict[str, int]:
    """12 simulated references of 2 raters × 1500 items at ICC 0.65 (power about 0.9 for a human-level judge)."""
    rng = np.random.default_rng(41)
    counts = {"human": 0, "copy": 0, "worse": 0}
    for ref in range(12):
        humans, judges = _reference(rng, 1500)
        for name, judge in judges.items():
            counts[name] += certify_criterion(humans, judge, "ratings", seed=ref, n_boot=200).status == CERTIFIED
    return counts


@pytest.mark.slow  # about 45 s: 36 certifications with their power simulations
def test_a_noisy_copy_of_one_rater_is_certified_no_more_often_than_a_human_level_judge(certified_counts) -> None:  # noqa: ANN001
    assert certified_counts["copy"] <= certified_counts["human"]


@pytest.mark.slow  # about 45 s: 36 certifications with their power simulations
def test_a_judge_noisier_than_every_rater_is_not_certified(certified_counts) -> None:  # noqa: ANN001
    assert certified_counts["worse"] == 0


@pytest.mark.slow  # about 45 s: 36 certifications with their power simulations
def test_a_human_level_judge_is_certified_on_a_reference_with_the_power_to(certified_counts) -> None:  # noqa: ANN001
    assert certified_counts["human"] >= 8
