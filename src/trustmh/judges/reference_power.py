"""A reference's power: how likely it is to certify a judge exactly as good as one more of its raters
(docs/references.md#power).

Simulated from the reference's own size and agreement. Each simulated reference has the reference's items,
raters and agreement; the judge is one more rater drawn from the same model, so it is human-level by
construction. The model:

* ratings: item truth T ~ N(0, 1), rater value T + e with e ~ N(0, σ²), σ² = (1 − ICC)/ICC, so two raters'
  ICC is the reference's;
* labels: item truth drawn from the humans' label shares; a rater reports the truth with probability √κ and
  otherwise draws a label from the shares (two raters' κ is then κ).

Each simulated reference gets the rule's point figures (the humans' agreement and every comparison's
difference D_r, `stats.rater_comparison.comparison_points`); their spread over the simulations is the sampling
error the bootstrap estimates on one reference, so the simulated verdict is "certified" when the humans clear
the floor and every D_r clears −margin at point − z·SD. The same draws, rescaled by √(n/n'), give the
power at another size n' (sampling error shrinks as 1/√n), hence the items that would reach `TARGET_POWER`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from trustmh.stats.rater_comparison import comparison_points

# Below this power a failed certification says more about the reference than about the judge.
TARGET_POWER = 0.8
N_SIMULATIONS = 400
Z_95 = 1.959963984540054  # the rule reads the lower bound of a two-sided 95% interval
MAX_ITEMS = 20_000


def _simulate(kind: str, n_items: int, n_raters: int, agreement: float, shares: Sequence[float],
              n_sims: int, rng: np.random.Generator) -> np.ndarray:
    """(n_sims, n_items, n_raters + 1) values; the last column is the human-level judge."""
    if kind == "ratings":
        sigma = math.sqrt((1 - agreement) / agreement)
        truth = rng.normal(size=(n_sims, n_items, 1))
        return truth + rng.normal(scale=sigma, size=(n_sims, n_items, n_raters + 1))
    p = np.asarray(shares, dtype=float) / float(np.sum(shares))
    truth = rng.choice(len(p), p=p, size=(n_sims, n_items, 1))
    honest = rng.random((n_sims, n_items, n_raters + 1)) < math.sqrt(agreement)
    values = rng.choice(len(p), p=p, size=(n_sims, n_items, n_raters + 1)).astype(float)  # the guesses
    np.copyto(values, truth, where=honest)  # in place: one array of the simulation's size, not three
    return values


def _power_at(scale: float, humans: np.ndarray, diffs: np.ndarray, agreement: float, floor: float,
              margin: float) -> float:
    """Share of simulations certified when the sampling error is multiplied by `scale`."""
    h_sd = float(np.nanstd(humans))
    d_sd = np.nanstd(diffs, axis=0)
    h = agreement + (humans - agreement) * scale
    d = diffs * scale  # a human-level judge's differences are centred on 0
    floor_ok = h - Z_95 * h_sd * scale >= floor
    rule_ok = np.all(d - Z_95 * d_sd * scale >= -margin, axis=1)
    return float(np.mean(floor_ok & rule_ok))


def reference_power(kind: str, n_items: int, n_raters: int, agreement: float | None, *, floor: float,
                    margin: float, seed: int, shares: Sequence[float] = (0.5, 0.5),
                    n_sims: int = N_SIMULATIONS) -> dict[str, Any]:
    """{"power", "target", "items_for_target", "difference_sd", "n_sims", "model"}: the probability that this
    reference certifies a judge as good as one more of its raters, the items (rated by as many raters) that
    would give `TARGET_POWER` (None when no size up to MAX_ITEMS would), and the SD of such a judge's
    difference D_r on this reference. Undefined agreement: power None. Cached: several judges certified on
    one reference share one simulation."""
    return dict(_reference_power(kind, int(n_items), int(n_raters), None if agreement is None else float(agreement),
                                 float(floor), float(margin), int(seed), tuple(float(x) for x in shares), int(n_sims)))


@lru_cache(maxsize=32)
def _reference_power(kind: str, n_items: int, n_raters: int, agreement: float | None, floor: float,
                     margin: float, seed: int, shares: tuple[float, ...], n_sims: int) -> dict[str, Any]:
    out: dict[str, Any] = {"target": TARGET_POWER, "n_sims": n_sims, "seed": seed,
                           "model": f"simulated references of {n_items} items × {n_raters} raters at the humans' "
                                    f"agreement, the judge one more rater"}
    if agreement is None or not math.isfinite(agreement) or n_items < 2 or n_raters < 2:
        return {**out, "power": None, "items_for_target": None, "difference_sd": None}
    agreement = min(max(float(agreement), 0.02), 0.98)
    rng = np.random.default_rng(seed)
    n_codes = len(shares) if kind == "labels" else 0
    humans, diffs = _points(_simulate(kind, n_items, n_raters, agreement, shares, n_sims, rng), kind, n_codes)
    power = _power_at(1.0, humans, diffs, agreement, floor, margin)
    sd = float(np.nanmean(np.nanstd(diffs, axis=0)))  # the seats are exchangeable in the simulation
    need = _items_for_target(n_items, humans, diffs, agreement, floor, margin)
    if need is not None and need != n_items:  # re-simulated at that size: the rescaling is exact only near it
        humans, diffs = _points(_simulate(kind, need, n_raters, agreement, shares, n_sims, rng), kind, n_codes)
        need = _items_for_target(need, humans, diffs, agreement, floor, margin)
    return {**out, "power": power, "items_for_target": need, "difference_sd": sd}


# Simulations compared at a time: each is compared on its own, and the labels' one-hot tables of every
# simulation at once took about 150 MB at the 2,600 items `trustmh plan` sizes a new reference at.
SIMULATIONS_PER_CHUNK = 50


def _points(sims: np.ndarray, kind: str, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """`comparison_points` of the simulations, a chunk at a time (the same figures, bounded memory)."""
    parts = [comparison_points(sims[i:i + SIMULATIONS_PER_CHUNK], kind, n_codes)
             for i in range(0, len(sims), SIMULATIONS_PER_CHUNK)]
    return np.concatenate([h for h, _ in parts]), np.concatenate([d for _, d in parts])


def _items_for_target(n_items: int, humans: np.ndarray, diffs: np.ndarray, agreement: float, floor: float,
                      margin: float) -> int | None:
    """The smallest size whose rescaled power reaches TARGET_POWER (None: none up to MAX_ITEMS)."""
    def power(n: int) -> float:
        return _power_at(math.sqrt(n_items / n), humans, diffs, agreement, floor, margin)

    if power(MAX_ITEMS) < TARGET_POWER:
        return None
    lo, hi = 2, MAX_ITEMS
    while lo < hi:  # power rises with the items
        mid = (lo + hi) // 2
        if power(mid) >= TARGET_POWER:
            hi = mid
        else:
            lo = mid + 1
    return lo


# The human agreement assumed for a reference not yet labelled (`trustmh plan`): a good two-rater reference
# (ICC or κ 0.7), stated beside the count it gives.
ASSUMED_AGREEMENT = 0.7


def items_to_certify(kind: str, *, n_raters: int = 2, agreement: float = ASSUMED_AGREEMENT, floor: float,
                     margin: float, seed: int = 0) -> int | None:
    """Items a new reference of `n_raters` raters agreeing at `agreement` needs for power TARGET_POWER to certify
    a human-level judge (None when no size up to MAX_ITEMS would)."""
    shares = (0.5, 0.5) if kind == "ratings" else (0.7, 0.3)
    return reference_power(kind, 200, n_raters, agreement, floor=floor, margin=margin, seed=seed,
                           shares=shares)["items_for_target"]
