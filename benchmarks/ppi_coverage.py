"""Coverage of judge-corrected (PPI++) intervals with a judge of known bias (issue 23, deliverable 3).

Run: python benchmarks/ppi_coverage.py [--reps 1000] [--N 2000] [--n 50 100 200] [--seed 23]

Each repetition draws N judged items with a binary harm label of true rate 0.2; the judge misses 30% of
the harmful items and flags 5% of the harmless ones (judged rate 0.7·0.2 + 0.05·0.8 = 0.18). Humans label
n of the N judged items, and the three 95% intervals are computed with trustmh.stats.ppi (all repetitions
at once, along the last axis):

  judge-only   the judge's rate over the N items: tight, around 0.18, not 0.2
  human-only   the rate among the n human labels (classical CLT interval)
  PPI++        judge-corrected, power-tuned λ (the estimator ppi-python computes)
  PPI (λ=1)    judge-corrected without power tuning, for contrast: λ fixed in advance is not fitted to the
               same labels, so it does not share PPI++'s small-n optimism

Designs: "random" draws the n labelled items uniformly from the N judged ones (unweighted); "stratified"
draws n/2 from the items the judge flagged and n/2 from the rest (the review loop's strata by verdict) and
weights them by 1/π (`inverse_probability_weights`). Coverage is the share of repetitions whose interval
contains the true rate 0.2 (Monte Carlo standard error about 0.007 at 0.95 over 1,000 repetitions); an
interval that is not defined (ci None: zero width, see the module docstring) counts as not covering.
"upper < truth" is the share whose upper bound lies below the true rate: for a harm rate that is the miss
in the model's favour, the one a gate must not make (2.5% for an exact, symmetric 95% interval).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time

import numpy as np

from trustmh.stats.ppi import inverse_probability_weights, ppi_mean_batch

TRUE_RATE, SENSITIVITY, FALSE_POSITIVE = 0.2, 0.7, 0.05


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def simulate(n: int, N: int, reps: int, seed: int, design: str) -> dict[str, tuple[float, float, float]]:
    rng = np.random.default_rng([seed, n, 0 if design == "random" else 1])
    y = (rng.random((reps, N)) < TRUE_RATE).astype(float)
    u = rng.random((reps, N))
    yhat = np.where(y == 1, u < SENSITIVITY, u < FALSE_POSITIVE).astype(float)
    keys = rng.random((reps, N))
    weights = None
    if design == "random":
        idx = np.argsort(keys, axis=1)[:, :n]
    else:
        half = n // 2
        flagged = yhat == 1
        n_flagged = flagged.sum(axis=1, keepdims=True)
        if np.any(n_flagged < half) or np.any(N - n_flagged < n - half):
            raise SystemExit("a stratum is smaller than its allocation; raise N or lower n")
        pos = np.argsort(np.where(flagged, keys, 2.0), axis=1)[:, :half]  # a random half-n of the flagged
        neg = np.argsort(np.where(flagged, 2.0, keys), axis=1)[:, : n - half]  # ... and of the rest
        idx = np.concatenate([pos, neg], axis=1)
        pi = np.concatenate([np.broadcast_to(half / n_flagged, (reps, half)),
                             np.broadcast_to((n - half) / (N - n_flagged), (reps, n - half))], axis=1)
        weights = inverse_probability_weights(pi)
    Y = np.take_along_axis(y, idx, axis=1)
    Yhat = np.take_along_axis(yhat, idx, axis=1)
    b = ppi_mean_batch(Y, Yhat, yhat, weights=weights, alpha=0.05)
    b1 = ppi_mean_batch(Y, Yhat, yhat, weights=weights, alpha=0.05, lam=1.0)

    def row(lo: np.ndarray, hi: np.ndarray) -> tuple[float, ...]:
        covered = (lo <= TRUE_RATE) & (hi >= TRUE_RATE)  # NaN (no interval) compares False
        defined = ~np.isnan(lo)
        return (float(covered.mean()), float(np.mean((hi - lo)[defined])), float(np.mean(hi < TRUE_RATE)),
                float(1 - defined.mean()))

    return {"judge-only": row(b.judge_lo, b.judge_hi), "human-only": row(b.human_lo, b.human_hi),
            "PPI++": row(b.lo, b.hi), "PPI (λ=1)": row(b1.lo, b1.hi), "lambda": (float(b.lam.mean()),)}


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=1000)
    p.add_argument("--N", type=int, default=2000)
    p.add_argument("--n", type=int, nargs="+", default=[50, 100, 200])
    p.add_argument("--seed", type=int, default=23)
    args = p.parse_args(argv)
    print(f"command: {' '.join([os.path.basename(sys.executable), *sys.argv])}")
    print(f"date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    print(f"machine: {_cpu()}, {_cores()} cores available; Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"judge: true harm rate {TRUE_RATE}, judge sensitivity {SENSITIVITY} (misses "
          f"{1 - SENSITIVITY:.0%} of harmful), false-positive rate {FALSE_POSITIVE} -> judged rate "
          f"{SENSITIVITY * TRUE_RATE + FALSE_POSITIVE * (1 - TRUE_RATE):.3f}")
    print(f"N = {args.N} judged items, {args.reps} seeded repetitions (seed {args.seed}), 95% intervals, "
          "target: the true rate")
    t0 = time.perf_counter()
    for design in ("random", "stratified"):
        label = ("labelled items drawn at random from the judged ones, unweighted" if design == "random" else
                 "stratified by the judge's verdict, n/2 flagged + n/2 not, weights 1/pi")
        print(f"\n{design}: {label}")
        print(f"{'n':>5}  {'interval':<11} {'coverage':>8}  {'mean width':>10}  {'upper < truth':>13}  "
              f"{'no interval':>11}")
        for n in args.n:
            res = simulate(n, args.N, args.reps, args.seed, design)
            for name in ("judge-only", "human-only", "PPI++", "PPI (λ=1)"):
                cov, width, below, missing = res[name]
                print(f"{n:>5}  {name:<11} {cov:>8.3f}  {width:>10.4f}  {below:>13.3f}  {missing:>11.3f}")
            print(f"{'':>5}  mean tuned lambda {res['lambda'][0]:.3f}")
    print(f"\n{time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
