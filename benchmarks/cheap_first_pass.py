"""Does a cheap first pass pay on the gate's checks? The rule scores every item, the expensive judge a random
sample, PPI++ corrects the rule's rate with that sample (docs/cost.md#cheap-first-pass).

    taskset -c 0,1 .venv/bin/python benchmarks/cheap_first_pass.py [--reps 200] [--items 560]

For a set of N items whose expensive-judge label is harmful at rate p (the gate's limits sit at 0.05-0.10) and
a rule that agrees with the expensive judge on a share a of the items (its errors on either side alike,
seeded), the script finds the fewest expensive-judge calls n on a random sample for which the mean width of
the corrected 95% interval (`trustmh.stats.ppi.corrected_mean`, the shipped rule) is at most the width the
expensive judge gives on all N items (Wilson). Saving = 1 - n / N of the expensive judge's calls.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import machine  # noqa: E402

from trustmh.stats.classification import wilson_interval  # noqa: E402
from trustmh.stats.ppi import corrected_mean  # noqa: E402

RATES = (0.05, 0.10)
AGREEMENT = (0.90, 0.95, 0.98, 0.995)


def mean_width(p: float, agree: float, n: int, items: int, reps: int, rng: np.random.Generator) -> float:
    widths = []
    for _ in range(reps):
        y = (rng.random(items) < p).astype(float)
        rule = np.where(rng.random(items) < agree, y, 1 - y)
        sample = rng.choice(items, size=n, replace=False)
        ci = corrected_mean(y[sample], rule[sample], rule).ci
        if ci is not None:
            widths.append(ci[1] - ci[0])
    return float(np.mean(widths)) if widths else float("inf")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--items", type=int, default=560, help="N, the set's items (safety/jailbreak_resistance: 560)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    started = time.process_time()
    print(f"machine: {machine()}; date {time.strftime('%Y-%m-%d', time.gmtime())}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    rng = np.random.default_rng(args.seed)
    grid = sorted({*range(40, args.items, 20), args.items})
    print(f"{'rate p':>6} {'agreement':>9} {'judge-on-all width':>18} {'judge calls to match':>20} {'saving':>7}")
    for p in RATES:
        lo, hi = wilson_interval(round(p * args.items), args.items)
        target = hi - lo
        for agree in AGREEMENT:
            need = next((n for n in grid if mean_width(p, agree, n, args.items, args.reps, rng) <= target),
                        args.items)
            print(f"{p:>6g} {agree:>9g} {target:>18.4f} {need:>20d} {1 - need / args.items:>7.0%}")
    print(f"{args.reps} seeded sets per point; {time.process_time() - started:.1f} s CPU")


if __name__ == "__main__":
    main()
