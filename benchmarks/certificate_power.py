"""The certificate rule on simulated references: no copy bonus, worse judges refused, stated power honest
(issue 41).

Run: python benchmarks/certificate_power.py [--references 200] [--n-boot 1000] [--seed 41]

Each row simulates references of k raters × n items at ICC 0.65: item truth T ~ N(0, 1), rater value
T + e with e ~ N(0, σ²), σ² = 0.35/0.65. Three judges face every reference:

  human-level   one more rater (T + e with the raters' σ): the judge a certificate should pass
  noisy copy    rater 1's values plus N(0, (σ/2)²): worse than rater 1 against the others, but close to rater 1
  worse         T + e with 1.5σ: noisier than every rater

Every judge goes through `judges.reference_quality.certify_criterion` (ratings, default floor and margin,
seeded bootstrap of items). "stated power" is the mean, over the references, of the power each certificate
records (`judges.reference_power`, simulated from that reference's own size and agreement); it should match
the share of references that certify the human-level judge within 0.05. Exit status 0 when every row holds:
copy ≤ human-level + 2 Monte Carlo SE, worse ≤ 0.05, |stated power − human-level rate| ≤ 0.05.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import platform
import sys
import time

import numpy as np

from trustmh.judges.reference_quality import CERTIFIED, certify_criterion

ICC = 0.65
ROWS = ((2, 150), (4, 60), (2, 400))


def one_reference(k: int, n: int, rng: np.random.Generator) -> tuple[dict, dict[str, dict]]:
    sigma = math.sqrt((1 - ICC) / ICC)
    truth = rng.normal(size=n)
    raters = truth[:, None] + rng.normal(scale=sigma, size=(n, k))
    judges = {"human-level": truth + rng.normal(scale=sigma, size=n),
              "noisy copy": raters[:, 0] + rng.normal(scale=sigma / 2, size=n),
              "worse": truth + rng.normal(scale=1.5 * sigma, size=n)}
    humans = {f"i{i}": {f"r{r}": float(raters[i, r]) for r in range(k)} for i in range(n)}
    return humans, {name: {f"i{i}": float(j[i]) for i in range(n)} for name, j in judges.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--references", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=41)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    print(f"# {dt.date.today()} · {platform.node()} · {platform.processor() or platform.machine()} · python "
          f"{platform.python_version()} · {args.references} references a row · n_boot {args.n_boot} · "
          f"seed {args.seed}")
    print("| raters × items | human-level certified | noisy copy | worse (1.5σ) | stated power | "
          "items for power 0.8 (median) |")
    print("|---|---|---|---|---|---|")
    rng = np.random.default_rng(args.seed)
    ok = True
    for k, n in ROWS:
        passed = {"human-level": 0, "noisy copy": 0, "worse": 0}
        powers, needs = [], []
        for ref in range(args.references):
            humans, judges = one_reference(k, n, rng)
            for name, judge in judges.items():
                verdict = certify_criterion(humans, judge, "ratings", seed=ref, n_boot=args.n_boot)
                passed[name] += verdict.status == CERTIFIED
                if name == "human-level":
                    power = verdict.figures["power"]
                    powers.append(power["power"])
                    needs.append(power["items_for_target"] or math.inf)
        rate = {name: count / args.references for name, count in passed.items()}
        stated = float(np.mean(powers))
        se = math.sqrt(max(rate["human-level"] * (1 - rate["human-level"]), 0.25 / args.references)
                       / args.references)
        ok &= rate["noisy copy"] <= rate["human-level"] + 2 * se and rate["worse"] <= 0.05
        ok &= abs(stated - rate["human-level"]) <= 0.05
        print(f"| {k} × {n} | {rate['human-level']:.3f} | {rate['noisy copy']:.3f} | {rate['worse']:.3f} | "
              f"{stated:.3f} | {np.median(needs):.0f} |", flush=True)
    print(f"\n{'all rows hold' if ok else 'a row fails'}; {time.perf_counter() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
