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


# The disk cache of the simulation (`_reference_power`): a small reference, so each simulation is quick.
SMALL = ("ratings", 30, 2, 0.65, 0.5, 0.05, 1, (0.5, 0.5), 40)


def _fresh_process() -> None:
    """Forget the in-process cache, as the next `trustmh plan` starts without it."""
    from trustmh.judges.reference_power import _reference_power

    _reference_power.cache_clear()


def _simulations_counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    from trustmh.judges import reference_power as rp

    calls: list[tuple] = []
    real = rp._simulated

    def counted(*args: object) -> dict:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(rp, "_simulated", counted)
    return calls


def test_a_later_process_reads_the_simulated_figures_bit_for_bit() -> None:
    from trustmh.judges.reference_power import _reference_power, _simulated

    _fresh_process()
    _reference_power(*SMALL)
    _fresh_process()
    assert _reference_power(*SMALL) == _simulated(*SMALL)


def test_a_later_process_does_not_simulate_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.judges.reference_power import _reference_power

    _fresh_process()
    _reference_power(*SMALL)
    _fresh_process()
    calls = _simulations_counted(monkeypatch)
    _reference_power(*SMALL)
    assert calls == []


@pytest.mark.parametrize("changed", [1, 2, 3, 4, 5, 6, 7, 8])
def test_a_changed_input_is_simulated_again(monkeypatch: pytest.MonkeyPatch, changed: int) -> None:
    from trustmh.judges.reference_power import _reference_power

    _fresh_process()
    _reference_power(*SMALL)
    _fresh_process()
    calls = _simulations_counted(monkeypatch)
    other = list(SMALL)
    other[changed] = (0.6, 0.4) if changed == 7 else other[changed] + (1 if isinstance(other[changed], int) else 0.01)
    _reference_power(*other)
    assert len(calls) == 1


def test_changed_simulation_code_is_simulated_again(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # noqa: ANN001
    from trustmh.judges import reference_power as rp

    _fresh_process()
    rp._reference_power(*SMALL)
    _fresh_process()
    edited = tmp_path / "reference_power.py"
    edited.write_bytes(rp._SIMULATION_SOURCES[0].read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(rp, "_SIMULATION_SOURCES", (edited, *rp._SIMULATION_SOURCES[1:]))
    calls = _simulations_counted(monkeypatch)
    rp._reference_power(*SMALL)
    assert len(calls) == 1


def test_an_unreadable_cache_entry_is_simulated_again(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.judges import reference_power as rp

    _fresh_process()
    rp._reference_power(*SMALL)
    rp._disk_path(rp._disk_key(SMALL)).write_text("[1, 2", encoding="utf-8")
    _fresh_process()
    calls = _simulations_counted(monkeypatch)
    rp._reference_power(*SMALL)
    assert len(calls) == 1
