"""Coverage of `--until-decided`'s interval under continuous peeking, simulated (docs/statistics.md#anytime-valid-intervals).

    taskset -c 0,1 .venv/bin/python benchmarks/sequential_coverage.py [--reps 4000] [--n 600]

For each true rate p, `reps` sequences of n independent Bernoulli(p) items are drawn (seeded). A sequence is
covered if the interval after every item 1..n holds p: the worst case for a run looked at after every item,
which `--until-decided`'s rounds only approach. Shown for the beta-binomial mixture confidence sequence
(`trustmh.stats.sequential`, target ≥ 0.95) and, beside it, for the fixed-n Wilson interval the gate reads at a
fixed n, peeked at the same way (it is not built for that, and falls short). Also the run's own rule: the
share of runs of the round schedule (`trustmh.run.rounds.round_sizes`) whose verdict against a limit equal
to p, the hardest case, is wrong (a pass or a fail when the rate sits on the limit is never right for both).

Mean scores (`trustmh.stats.sequential.mean_sequence`, a 1-5 rubric): the same coverage for scores drawn from
stated 1-5 distributions, and, for a check "mean ≥ 3.5" played on the round schedule of a 200-item set, the
items asked before it decides (the calls `--until-decided` saves on a mean check) and the share of runs whose
verdict is wrong.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import norm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import machine  # noqa: E402

from trustmh.run.rounds import FIRST_ROUND_MIN, round_sizes  # noqa: E402
from trustmh.stats.sequential import ALPHA, log_martingale, mean_sequence  # noqa: E402

RATES = (0.02, 0.05, 0.1, 0.2, 0.5, 0.9)
# 1-5 rubric scores: name -> the chances of 1, 2, 3, 4, 5
SCORE_MIXES = {"careful (mean 4.6)": (0.0, 0.0, 0.05, 0.3, 0.65), "near the limit (mean 3.7)": (0.05, 0.1, 0.2, 0.35, 0.3),
               "poor (mean 2.2)": (0.3, 0.35, 0.2, 0.1, 0.05), "two-valued (mean 3.0)": (0.5, 0.0, 0.0, 0.0, 0.5)}
MEAN_LIMIT, MEAN_SET, MEAN_MIN_N = 3.5, 200, 30  # the default policy's min_n: the first round


def cs_misses(x: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """True where the confidence sequence after x of n items excludes p (log M_n(p) ≥ log 1/α)."""
    return log_martingale(p, x, n) >= math.log(1 / ALPHA)


def wilson_misses(x: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    z = norm.ppf(1 - ALPHA / 2)
    phat = x / n
    centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (p < centre - half) | (p > centre + half)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--n", type=int, default=600, help="items per sequence (looked at after each)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    started = time.process_time()
    print(f"machine: {machine()}; date {time.strftime('%Y-%m-%d', time.gmtime())}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    rng = np.random.default_rng(args.seed)
    n = np.arange(1, args.n + 1, dtype=float)
    print(f"{'true rate':>9}  {'CS covered at every n':>21}  {'Wilson covered at every n':>25}")
    worst = 1.0
    for p in RATES:
        x = np.cumsum(rng.random((args.reps, args.n)) < p, axis=1).astype(float)
        cs = 1 - cs_misses(x, n, p).any(axis=1).mean()
        wilson = 1 - wilson_misses(x, n, p).any(axis=1).mean()
        worst = min(worst, cs)
        print(f"{p:>9g}  {cs:>21.4f}  {wilson:>25.4f}")
    print(f"lowest coverage of the confidence sequence: {worst:.4f} (nominal 0.95; {args.reps} sequences a rate, "
          f"{args.n} looks each)")
    mean_coverage(rng, args.reps, args.n)
    print(f"{time.process_time() - started:.1f} s CPU")


def mean_coverage(rng: np.random.Generator, reps: int, n_looks: int) -> None:
    """The mean sequence's coverage at every look, and the items a 'mean ≥ 3.5' check asks before it decides."""
    levels = np.arange(1.0, 6.0)
    n = np.arange(1, n_looks + 1, dtype=float)
    sizes = round_sizes(MEAN_SET, max(FIRST_ROUND_MIN, MEAN_MIN_N))
    print(f"\n1-5 mean scores, check 'mean ≥ {MEAN_LIMIT:g}' on a {MEAN_SET}-item set (rounds {sizes}):")
    print(f"{'scores':>26}  {'CS covered at every n':>21}  {'median items to decide':>22}  {'wrong verdicts':>14}")
    for name, chances in SCORE_MIXES.items():
        truth = float(levels @ np.array(chances))
        scores = rng.choice(levels, p=chances, size=(reps, n_looks))
        x = (np.cumsum(scores, axis=1) - n) / 4  # rescaled to [0, 1]
        covered = 1 - cs_misses(x, n, (truth - 1) / 4).any(axis=1).mean()
        asked, wrong = [], 0
        for row in scores[: min(reps, 1000), :MEAN_SET]:
            played, verdict = MEAN_SET, "insufficient"
            for size in sizes:
                lo, hi = mean_sequence(float(row[:size].sum()), size, (1.0, 5.0))
                verdict = "pass" if lo >= MEAN_LIMIT else "fail" if hi < MEAN_LIMIT else "insufficient"
                if verdict != "insufficient":
                    played = size
                    break
            asked.append(played)
            wrong += verdict == ("fail" if truth >= MEAN_LIMIT else "pass")
        print(f"{name:>26}  {covered:>21.4f}  {int(np.median(asked)):>10} of {MEAN_SET} ({np.median(asked) / MEAN_SET:.2f}x)"
              f"  {wrong / len(asked):>14.4f}")


if __name__ == "__main__":
    main()
