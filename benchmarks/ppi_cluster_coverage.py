"""Coverage of the judge-corrected interval when the judged conversations share a unit (issue 50).

Run: python benchmarks/ppi_cluster_coverage.py [--reps 400] [--seed 50] [--labels 100] [--sets gradual_disclosure]
     python benchmarks/ppi_cluster_coverage.py --outcome score --sets delusion --labels 150

`--outcome score` is the delusion check's figure, a 0-2 mean per conversation: each conversation's value is the
mean of four turn marks, each 0-2 (binomial(2, π_c) with the cell's π_c, mean m = 2p); the judge gives the
people's value with probability a (0.8; with "judge ρ" 0.3 drawn per cell around it) and otherwise a fresh draw
from the same cell, so its margin is the people's and its disagreement variance 2σ²(1 − a), what
`judges.evidence.labels_needed` assumes for ratings. "clustered" is `clustered_corrected_mean`'s rating
interval on the 0-2 scale (Clopper–Pearson on the effective n of the rating as a share of its scale, what
`review import` records); "t on v" beside it is θ̂ ± t_{C−1}·√v, the rating interval before 3 December.

The gate decides a judged check on the run's own two-rater labels through the judge-corrected interval
(docs/statistics.md#the-runs-own-labels). Design: the shipped sets' risk conversations as the sub-tasks load
them, grouped by their unit (the design cell joined with the stimulus). Each simulated model draws a failure
rate per design cell (π_c ~ Beta with mean p and correlation ρ across cells, as `cluster_coverage.py --unit
cell`); each conversation then fails with its cell's rate, and the truth is p. The judge misses 20% of the
failures and flags passes at the rate that keeps its margin equal to the humans' (agreement about 0.8 at
p = 0.1); with "judge ρ" 0.3 its miss rate is drawn per cell as well (its errors cluster too). The labels are
drawn as `review export` draws a conversation sub-task's: spread evenly over the units, 1/π weights. Intervals
at round 1's level (96%, `stats.sequential.round_alpha(1)`): "independent" is `stats.ppi.corrected_mean`, the
interval the gate read before issue 50's clustered correction (the conversations as independent items);
"clustered" is `stats.ppi.clustered_corrected_mean`, what `review import` records now.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cluster_coverage import cell_designs, simulate  # noqa: E402

from trustmh.stats.ppi import clustered_corrected_mean, corrected_mean  # noqa: E402
from trustmh.stats.sequential import round_alpha  # noqa: E402

RATES = (0.1, 0.2)
MEANS = (0.3, 0.5)  # 0-2 means: below and at the delusion check's limit
TURNS = 4  # judged turns a conversation's mean is over
AGREEMENT = 0.8
RHOS = (0.1, 0.3, 0.5, 0.8)
JUDGE_RHOS = (0.0, 0.3)


def draw(codes: np.ndarray, sizes: np.ndarray, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n labelled items spread evenly over the units (remainders at random), and their 1/π weights."""
    units = len(sizes)
    alloc = np.minimum(sizes, n // units)
    while alloc.sum() < min(n, sizes.sum()):
        room = np.flatnonzero(alloc < sizes)
        pick = rng.choice(room, size=min(n - int(alloc.sum()), room.size), replace=False)
        alloc[pick] += 1
    idx = np.concatenate([rng.choice(np.flatnonzero(codes == c), size=alloc[c], replace=False)
                          for c in range(units) if alloc[c]])
    return idx, sizes[codes[idx]] / alloc[codes[idx]]


def outcomes(outcome: str, sizes: np.ndarray, codes: np.ndarray, order: np.ndarray, truth: float, rho: float,
             judge_rho: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """One simulated model's (people's value, judge's value) per conversation (module docstring)."""
    if outcome == "rate":
        p = truth
        y = np.empty(codes.size)
        y[order] = simulate(sizes.tolist(), rho, p, "rate", rng)
        miss = np.full(codes.size, 0.2)
        if judge_rho:
            a, b = 0.2 * (1 - judge_rho) / judge_rho, 0.8 * (1 - judge_rho) / judge_rho
            miss = rng.beta(a, b, size=sizes.size)[codes]
        u = rng.random(codes.size)
        return y, np.where(y == 1, u >= miss, u < p * 0.2 / (1 - p)).astype(float)
    p = truth / 2
    pis = np.full(sizes.size, p) if rho == 0 else rng.beta(p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho,
                                                           size=sizes.size)
    y = rng.binomial(2 * TURNS, pis[codes]) / TURNS
    fresh = rng.binomial(2 * TURNS, pis[codes]) / TURNS
    agree = np.full(codes.size, AGREEMENT)
    if judge_rho:
        a, b = AGREEMENT * (1 - judge_rho) / judge_rho, (1 - AGREEMENT) * (1 - judge_rho) / judge_rho
        agree = rng.beta(a, b, size=sizes.size)[codes]
    return y, np.where(rng.random(codes.size) < agree, y, fresh)


def coverage(reps: int, seed: int, labels: int, sets: tuple[str, ...], outcome: str = "rate") -> float:
    rng = np.random.default_rng(seed)
    alpha = round_alpha(1)
    what = "rate p" if outcome == "rate" else "0-2 mean"
    keys = ("independent", "clustered") + (("t on v",) if outcome == "score" else ())
    print(f"| design | n / units | labels | {what} | ρ across cells | judge ρ | "
          + " | ".join(f"{k}: coverage (width)" for k in keys) + " |")
    print("|---" * (6 + len(keys)) + "|")
    scale = None if outcome == "rate" else (0.0, 2.0)
    worst = 1.0
    for name, (units, _, _) in cell_designs(sets).items():
        if not name.endswith(" risk"):
            continue
        codes = np.unique(np.asarray(units), return_inverse=True)[1]
        sizes = np.bincount(codes)
        order = np.argsort(codes, kind="stable")
        labels_of = np.asarray(units)
        for truth in (RATES if outcome == "rate" else MEANS):
            for rho in RHOS:
                for judge_rho in JUDGE_RHOS:
                    hits = dict.fromkeys(keys, 0)
                    widths: dict[str, list[float]] = {k: [] for k in keys}
                    for _ in range(reps):
                        y, judge = outcomes(outcome, sizes, codes, order, truth, rho, judge_rho, rng)
                        idx, w = draw(codes, sizes, labels, rng)
                        got_by = {"independent": corrected_mean(y[idx], judge[idx], judge, weights=w, alpha=alpha),
                                  "clustered": clustered_corrected_mean(y[idx], judge[idx], judge, labels_of[idx],
                                                                        labels_of, weights=w, alpha=alpha,
                                                                        scale=scale)}
                        if "t on v" in keys:
                            got_by["t on v"] = clustered_corrected_mean(y[idx], judge[idx], judge, labels_of[idx],
                                                                        labels_of, weights=w, alpha=alpha)
                        for key, got in got_by.items():
                            if got.ci is not None:
                                hits[key] += got.ci[0] <= truth <= got.ci[1]
                                widths[key].append(got.ci[1] - got.ci[0])
                    worst = min(worst, hits["clustered"] / reps)
                    print(f"| {name} | {codes.size} / {sizes.size} | {labels} | {truth:g} | {rho:g} | {judge_rho:g} | "
                          + " | ".join(f"{hits[k] / reps:.3f} ({np.mean(widths[k]) if widths[k] else float('nan'):.3f})"
                                       for k in keys) + " |", flush=True)
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--seed", type=int, default=50)
    ap.add_argument("--labels", type=int, default=100)
    ap.add_argument("--sets", nargs="+", default=["gradual_disclosure", "multiturn_jailbreak"])
    ap.add_argument("--outcome", choices=("rate", "score"), default="rate",
                    help="score: a 0-2 mean per conversation (the delusion check), module docstring")
    args = ap.parse_args(argv)
    start = time.process_time()
    worst = coverage(args.reps, args.seed, args.labels, tuple(args.sets), args.outcome)
    print(f"\nlowest clustered coverage {worst:.3f}; {args.reps} models a row, seed {args.seed}; "
          f"{dt.date.today()}, {platform.machine()}, Python {platform.python_version()}, "
          f"{time.process_time() - start:.0f} s CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
