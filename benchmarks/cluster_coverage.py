"""Coverage of the conversation intervals when conversations share a stimulus (issue 41).

Run: python benchmarks/cluster_coverage.py [--reps 500] [--seed 41] [--n-boot 2000] [--outcome rate|score]

Designs: the shipped sets' clusters. Missed crisis: the risky gradual-disclosure conversations grouped by
their stimulus (the `stimulus` field, else the text of the risk turn: 107 conversations on 48 sentences);
delusion: 185 on 38; "distinct": 107 conversations, each its own stimulus. Each simulated model answers
every conversation; a conversation's outcome depends on its stimulus with within-cluster correlation ρ
(beta-binomial: the stimulus draws its own rate π_c ~ Beta with mean p and ICC ρ, each of its conversations
then a Bernoulli(π_c)). Outcomes: a rate at p = 0.05, 0.2 and 0.5, and a 0–2 score (Binomial(2, π_c), true
mean 2p at p = 0.15 and 0.5) like the delusion confirmation mean.

Intervals: "clustered" is `trustmh.stats.clustered.clustered_interval` on the stimulus; "old" is the seeded
percentile bootstrap resampling conversations (`stats.bootstrap.bootstrap_mean`, each conversation its own
cluster), what every conversation figure published before issue 41. Coverage = share of models whose 95%
interval contains the true mean (Monte Carlo SE ≈ 0.01 at 0.95 over 500 models).

`--unit cell` (issue 49): failures concentrated in design cells. Designs: the shipped sets' conversations as
the sub-tasks load them, risk conversations and controls apart, grouped by their unit (the design cell joined
with the stimulus, `pillars/conversation/cells.py`). Each simulated model draws a rate per design cell
(π_c ~ Beta with mean p and ICC ρ across cells), each conversation then Bernoulli(π_c); the truth is p.
"cell" is `clustered_interval` on the unit the sub-tasks now use; "stimulus" the same interval on the
stimulus (each stimulus played once in the authored sets: the interval on n that issue 49 found wanting).
A set whose controls state a topic (gradual disclosure) has one more row, "controls, failing by the former
cells": the failures concentrate on the coarser cells the controls had before their topics (kind × "no_risk"
× style), while the interval clusters on the finer unit, the case the topics could get wrong.
`--sets gradual_disclosure` runs one set's rows only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from trustmh.stats.bootstrap import bootstrap_mean
from trustmh.stats.clustered import clustered_interval

SETS = Path(__file__).resolve().parent.parent / "src" / "trustmh" / "pillars" / "conversation" / "sets"
RHOS = (0.0, 0.2, 0.5, 0.8)
OUTCOMES = (("rate", 0.05), ("rate", 0.2), ("rate", 0.5), ("score 0-2", 0.15), ("score 0-2", 0.5))


def set_design(name: str) -> list[int]:
    """Cluster sizes of a shipped set's risky conversations, grouped by stimulus."""
    rows = json.loads((SETS / f"{name}.json").read_text())["conversations"]
    risky = [r for r in rows if r.get("risk_turn") is not None]
    keys = Counter(r.get("stimulus") or str(r["turns"][r["risk_turn"]]) for r in risky)
    return sorted(keys.values(), reverse=True)


def simulate(sizes: list[int], rho: float, p: float, kind: str, rng: np.random.Generator) -> np.ndarray:
    if rho == 0:
        pis = np.full(len(sizes), p)
    else:
        a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
        pis = rng.beta(a, b, size=len(sizes))
    trials = 2 if kind == "score 0-2" else 1
    return np.concatenate([rng.binomial(trials, pi, size=m) for pi, m in zip(pis, sizes, strict=True)]
                          ).astype(float)


CELL_SETS = ("gradual_disclosure", "delusion", "multiturn_jailbreak", "harm_to_others")
CELL_RHOS = (0.1, 0.3, 0.5, 0.8)
CELL_RATES = (0.05, 0.1, 0.2, 0.5)


def former_cell(cell: str) -> str:
    """A control's cell before its topic stood in for its category: kind × "no_risk" × style."""
    kind, _, style = cell.removeprefix("cell:").split("|")
    return f"{kind}|no_risk|{style}"


def cell_designs(sets: tuple[str, ...] = CELL_SETS) -> dict[str, tuple[list[str], list[str], list[str]]]:
    """Per shipped set and part (risk / controls): (unit per conversation, stimulus per conversation, the group
    whose rate the simulated failures share), from the items the sub-task loads."""
    from trustmh.catalogue import get_subtask
    from trustmh.core import JudgeInfo, RunContext

    ctx = RunContext(mode="default", seed=0, suite="trustmh", limit=None,
                     judge=JudgeInfo(model=None, validated=False, seed=0), options={}, n_boot=200)
    out = {}
    for name in sets:
        items = get_subtask(f"conversation/{name}").items(ctx)
        for part, keep in (("risk", True), ("controls", False)):
            chosen = [it for it in items if (it.metadata.get("risk_turn") is not None) == keep]
            units = [it.cluster_id for it in chosen]
            out[f"{name} {part}"] = (units, [str(it.metadata.get("stimulus", it.cluster_id)) for it in chosen],
                                     units)
            if not keep and any("no_risk" not in u for u in units):  # the controls state topics
                out[f"{name} controls, failing by the former cells"] = (
                    units, out[f"{name} {part}"][1], [former_cell(u) for u in units])
    return out


def cell_coverage(reps: int, seed: int, sets: tuple[str, ...] = CELL_SETS) -> float:
    """The `--unit cell` table (module docstring); returns the lowest coverage of the cell unit."""
    rng = np.random.default_rng(seed)
    print("| set | n / cells | rate p | ρ across cells | cell-unit coverage | width | stimulus-unit coverage | width |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 1.0
    for dname, (units, stimuli, groups) in cell_designs(sets).items():
        codes = np.unique(np.asarray(groups), return_inverse=True)[1]
        sizes = np.bincount(codes).tolist()
        order = np.argsort(codes, kind="stable")  # simulate() fills cell by cell
        for p in CELL_RATES:
            for rho in CELL_RHOS:
                cov = {"cell": 0, "stimulus": 0}
                widths: dict[str, list[float]] = {"cell": [], "stimulus": []}
                for _ in range(reps):
                    y = np.empty(len(units))
                    y[order] = simulate(sizes, rho, p, "rate", rng)
                    for unit, labels in (("cell", units), ("stimulus", stimuli)):
                        lo, hi = clustered_interval(y, labels)["ci"]
                        cov[unit] += lo <= p <= hi
                        widths[unit].append(hi - lo)
                if groups is units:  # the former-cells row is reported, not held to the bar
                    worst = min(worst, cov["cell"] / reps)
                print(f"| {dname} | {len(units)} / {len(set(units))} | {p:g} | {rho:g} | {cov['cell'] / reps:.3f} | "
                      f"{np.mean(widths['cell']):.3f} | {cov['stimulus'] / reps:.3f} | "
                      f"{np.mean(widths['stimulus']):.3f} |", flush=True)
    return worst


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=41)
    ap.add_argument("--n-boot", type=int, default=2000)
    ap.add_argument("--outcome", choices=("rate", "score"), help="only the rates, or only the 0-2 scores")
    ap.add_argument("--unit", choices=("stimulus", "cell"), default="stimulus",
                    help="cell: failures concentrated in design cells, the shipped sets' units (issue 49)")
    ap.add_argument("--sets", nargs="+", choices=CELL_SETS, default=CELL_SETS, help="with --unit cell: these sets only")
    args = ap.parse_args(argv)
    if args.unit == "cell":
        started = time.perf_counter()
        print(f"# {dt.date.today()} · {platform.node()} · {platform.processor() or platform.machine()} · "
              f"python {platform.python_version()} · reps {args.reps} · seed {args.seed} · unit cell")
        worst = cell_coverage(args.reps, args.seed, tuple(args.sets))
        print(f"\nlowest cell-unit coverage: {worst:.3f}; {time.perf_counter() - started:.0f} s")
        return 0 if worst >= 0.93 else 1
    designs = {"missed crisis": set_design("gradual_disclosure"), "delusion": set_design("delusion")}
    designs["distinct"] = [1] * sum(designs["missed crisis"])
    started = time.perf_counter()
    print(f"# {dt.date.today()} · {platform.node()} · {platform.processor() or platform.machine()} · "
          f"python {platform.python_version()} · reps {args.reps} · seed {args.seed}")
    print("| design | n / clusters | outcome | truth | ρ | clustered coverage | width | old coverage | width |")
    print("|---|---|---|---|---|---|---|---|---|")
    worst = 1.0
    rng = np.random.default_rng(args.seed)
    for dname, sizes in designs.items():
        labels = np.repeat(np.arange(len(sizes)), sizes)
        ids = np.arange(labels.size)
        for kind, p in OUTCOMES:
            if args.outcome and not kind.startswith(args.outcome):
                continue
            scale = (0.0, 2.0) if kind == "score 0-2" else (0.0, 1.0)
            truth = p * scale[1]
            for rho in RHOS:
                new_cov = old_cov = 0
                new_w: list[float] = []
                old_w: list[float] = []
                for rep in range(args.reps):
                    y = simulate(sizes, rho, p, kind, rng)
                    new = clustered_interval(y, labels, scale=scale)["ci"]
                    _, old = bootstrap_mean(y, ids, seed=rep, n_boot=args.n_boot)
                    new_cov += new[0] <= truth <= new[1]
                    old_cov += old[0] <= truth <= old[1]
                    new_w.append(new[1] - new[0])
                    old_w.append(old[1] - old[0])
                worst = min(worst, new_cov / args.reps)
                print(f"| {dname} | {labels.size} / {len(sizes)} | {kind} | {truth:g} | {rho:g} | "
                      f"{new_cov / args.reps:.3f} | {np.mean(new_w):.3f} | {old_cov / args.reps:.3f} | "
                      f"{np.mean(old_w):.3f} |", flush=True)
    print(f"\nlowest clustered coverage: {worst:.3f}; {time.perf_counter() - started:.0f} s")
    return 0 if worst >= 0.93 else 1


if __name__ == "__main__":
    sys.exit(main())
