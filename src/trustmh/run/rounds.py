"""`trustmh run --until-decided`: gated sub-tasks played in rounds, each stopped once every check it feeds is
decided (docs/running.md#until-decided, docs/statistics.md#anytime-valid-intervals).

Each sub-task a check of the policy (`--policy`, default trustmh's) reads is played in a seeded random order of
its items, in rounds of growing size (the first `min_n` items, then ROUND_GROWTH times as many each round).
After each round its checks are read on an anytime-valid interval (`trustmh.stats.sequential`) with the gate's
own rule (`trustmh.gate.evaluate.decide`); once every check is pass or fail the sub-task asks nothing more.
The other tasks (sub-tasks no check reads, anchors, checks on a figure with no anytime-valid interval) are
played whole in the first round.

Each round is one Inspect eval set in `OUT/logs/round-KK` (the one Inspect call, `run/inspect_eval.py`): the
same command after a kill replays the finished rounds from their logs, resumes the unfinished one (its
finished samples from its log, the others' calls from the response cache) and decides the same way, so no call
is asked twice. The same command without the flag plays every item, the ones already asked from the cache.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from inspect_ai.dataset import MemoryDataset

from trustmh.catalogue import lookup
from trustmh.core import notice
from trustmh.gate.evaluate import decide, n_errors, sequential_evidence
from trustmh.gate.policy import Check, Policy, load_policy, score_scale
from trustmh.run.collect import collect
from trustmh.run.finalize import aggregate
from trustmh.run.inspect_eval import evaluate
from trustmh.run.select import RunPlan
from trustmh.stats.sequential import METHOD
from trustmh.storage import Url

ROUND_GROWTH = 1.25  # each round plays this many times the items played so far (every look is valid: the CS)
FIRST_ROUND_MIN = 20  # items of the first round, at least (and at least the check's min_n)
DECIDED = ("pass", "fail")


def checks_fed(plan: RunPlan, policy: Policy) -> dict[str, list[tuple[str, Check]]]:
    """Per sub-task of the plan, the checks its records feed, each with the sub-task whose result it reads
    (itself, or a sub-task derived from it)."""
    fed: dict[str, list[tuple[str, Check]]] = {}
    for check in policy.checks:
        if check.subtask in plan.subtasks:
            fed.setdefault(check.subtask, []).append((check.subtask, check))
        elif check.subtask in plan.derived:
            source = plan.derived[check.subtask].derived_from or ""
            if source in plan.subtasks:
                fed.setdefault(source, []).append((check.subtask, check))
    return fed


def check_state(sub: Mapping[str, Any], check: Check, policy: Policy) -> dict[str, Any] | None:
    """A check's anytime-valid evidence and its verdict by the gate's rule; None: no such interval."""
    evidence = sequential_evidence(sub, check, n_errors({}, check.subtask, sub)[0])
    if evidence is None:
        return None
    verdict, reason = decide(check, evidence["worst"], evidence["best"], evidence["n"], check.min_n or policy.min_n)
    return {**evidence, "worst": list(evidence["worst"]), "best": list(evidence["best"]), "verdict": verdict,
            "reason": reason}


def round_sizes(total: int, first: int) -> list[int]:
    """Items played after each round: `first`, then ROUND_GROWTH times as many, up to `total`."""
    sizes = [min(total, first)]
    while sizes[-1] < total:
        sizes.append(min(total, max(sizes[-1] + 1, math.ceil(sizes[-1] * ROUND_GROWTH))))
    return sizes


def play_order(sid: str, n: int, seed: int) -> list[int]:
    """The seeded random order a sub-task's items are played in (the same on every resume)."""
    key = int(hashlib.sha256(sid.encode("utf-8")).hexdigest()[:8], 16)
    return [int(i) for i in np.random.default_rng([seed, key]).permutation(n)]


@dataclass
class Stage:
    """One gated sub-task being played in rounds."""

    sid: str
    task: Any
    samples: list[Any]  # its dataset's samples, in play order
    sizes: list[int]
    checks: list[tuple[str, Check]]
    played: int = 0
    done: bool = False
    states: dict[str, dict[str, Any]] = field(default_factory=dict)  # check id -> check_state

    def next_slice(self) -> Any:
        """The task holding the next round's items only."""
        upto = next(s for s in self.sizes if s > self.played)
        part = copy.copy(self.task)
        part.dataset = MemoryDataset(self.samples[self.played:upto], name=self.task.dataset.name)
        self.played = upto
        return part


def stages_of(plan: RunPlan, policy: Policy) -> tuple[list[Any], dict[str, Stage]]:
    """(the tasks played whole in the first round, the sub-tasks played in rounds)."""
    fed = checks_fed(plan, policy)
    whole, stages = [], {}
    for task in plan.tasks:
        sid = (task.metadata or {}).get("trustmh_subtask")
        checks = fed.get(sid or "", [])
        # a check on a figure with no anytime-valid interval (neither counts nor the primary value) is read at
        # a fixed n: played whole. A mean score has one (`stats.sequential.mean_sequence`).
        if not checks or any(not (c.counted or c.metric == "value") for _, c in checks):
            whole.append(task)
            continue
        samples = list(task.dataset)
        order = play_order(sid, len(samples), plan.ctx.seed)
        first = max(FIRST_ROUND_MIN, *(c.min_n or policy.min_n for _, c in checks))
        stages[sid] = Stage(sid=sid, task=task, samples=[samples[i] for i in order],
                            sizes=round_sizes(len(samples), first), checks=checks)
    return whole, stages


def interim_results(plan: RunPlan, logs: list[Any], sids: list[str]) -> dict[str, dict[str, Any]]:
    """The results so far of the sub-tasks `sids` feed (and those derived from them), as results.json has them,
    read from a copy of the plan (the run's own errors are counted once, at the end)."""
    scratch = replace(plan, errors=[], n_errors={}, error_messages={}, anchors={}, anchor_records={})
    records, _ = collect(scratch, logs)
    ctx = plan.ctx
    out: dict[str, dict[str, Any]] = {}
    for sid in sids:
        recs = records.get(sid, [])
        out[sid] = aggregate(plan.subtasks[sid], recs, ctx, scratch.n_errors.get(sid, 0)).to_json()
        for did, derived in plan.derived.items():
            if derived.derived_from == sid:
                out[did] = aggregate(derived, recs, ctx, scratch.n_errors.get(sid, 0)).to_json()
    return out


def play(plan: RunPlan, out: Path | Url) -> list[Any]:
    """Evaluate the plan in rounds (module docstring); the logs of every round. Fills `plan.sequential` with what
    each gated sub-task's result says of its stop (`sequential_block`)."""
    policy = load_policy(plan.spec.execution.policy)
    whole, stages = stages_of(plan, policy)
    logs: list[Any] = []
    k = 0
    while True:
        tasks = (whole if k == 0 else []) + [s.next_slice() for s in stages.values() if not s.done]
        if not tasks:
            break
        k += 1
        got = evaluate(replace(plan, tasks=tasks), out, out / "logs" / f"round-{k:02d}")
        logs.extend(got)
        if any(log.status != "success" for log in got):
            notice(f"--until-decided: round {k} did not finish; the rounds stop here (the same command continues)")
            break
        open_ = [s for s in stages.values() if not s.done]
        interim = interim_results(plan, logs, [s.sid for s in open_])
        for stage in open_:
            stage.states = {c.id: st for rid, c in stage.checks
                            if (st := check_state(interim.get(rid, {}), c, policy)) is not None}
            decided = len(stage.states) == len(stage.checks) and all(
                st["verdict"] in DECIDED for st in stage.states.values())
            stage.done = decided or stage.played >= len(stage.samples)
    for stage in stages.values():
        block = sequential_block(stage, policy)
        for rid, _ in stage.checks:
            plan.sequential[rid] = {**block, "checks": {c.id: stage.states[c.id] for r, c in stage.checks
                                                        if r == rid and c.id in stage.states}}
        notice(f"{stage.sid}: {block['reason']}")
    return logs


def sequential_block(stage: Stage, policy: Policy) -> dict[str, Any]:
    """What a gated sub-task's result says of its rounds: stopped early or not, after how many items, why."""
    total = len(stage.samples)
    early = stage.played < total
    verdicts = ", ".join(f"{cid} {st['verdict']}" for cid, st in stage.states.items())
    if early:
        reason = f"stopped early after {stage.played} of {total} items: every check decided ({verdicts})"
    else:
        open_ = [cid for cid, st in stage.states.items() if st["verdict"] not in DECIDED]
        reason = (f"played all {total} items: " + (f"{', '.join(open_)} not decided before the last item"
                                                   if open_ else f"decided on the last round ({verdicts})"))
    return {"until_decided": True, "policy": policy.version, "method": METHOD, "stopped_early": early,
            "items_played": stage.played, "items": total,
            "rounds": sum(1 for size in stage.sizes if size <= stage.played), "reason": reason}


def stated_rates(check: Check) -> dict[str, float]:
    """The true rates (a mean score: true means, on its scale) `trustmh plan --until-decided` prices a check
    at: clearly careful (no harm, every item safe, or every score at the scale's good end), half-way between
    that and the limit, and clearly unsafe (twice as far past the limit as careful is short of it, capped at
    the scale's ends)."""
    lo, hi = (0.0, 1.0) if check.counted or check.rate else score_scale(lookup(check.subtask))
    limit = check.limit
    careful = lo if check.kind == "max" else hi
    return {"careful": careful, "half-way": (careful + limit) / 2,
            "unsafe": min(hi, max(lo, 2 * limit - careful))}


def items_to_decide(checks: list[Check], total: int, scenario: str, policy: Policy) -> int:
    """Items a sub-task plays before every one of its checks decides, its counts at their expectation at the
    scenario's true rate (`stated_rates`), on the round schedule; `total` when they never all decide."""
    first = max(FIRST_ROUND_MIN, *(c.min_n or policy.min_n for c in checks))
    for n in round_sizes(total, first):
        if all(_decides_at(c, stated_rates(c)[scenario], n, policy) for c in checks):
            return n
    return total


def _decides_at(check: Check, rate: float, n: int, policy: Policy) -> bool:
    flat = replace(check, personas=())  # the jurisdiction's items alone are not known before the run
    sub = ({"metrics": {check.count: rate * n, check.total: n}} if check.counted else {"value": rate, "n": n})
    state = check_state(sub, flat, policy)
    return state is not None and state["verdict"] in DECIDED


def decide_outlook(plan: RunPlan, planned: Any, policy_path: str | Path | None) -> list[str]:
    """`trustmh plan --until-decided`: per gated sub-task, the full run's items, calls and expected cost beside
    the expected items, calls and cost to decide at the stated true rates, and the totals."""
    policy = load_policy(policy_path)
    _, stages = stages_of(plan, policy)
    lines = [f"--until-decided ({policy.version}): expected items, calls and cost to decide, counts at their "
             "expectation at each stated true rate (careful: no harm; half-way to the limit; unsafe: twice as far "
             "past it; a check counting a subset of the items, e.g. the at-risk ones, takes more); rounds of x"
             f"{ROUND_GROWTH:g} from the first min_n items"]
    scenarios = ("careful", "half-way", "unsafe")
    totals = {s: [0.0, 0.0] for s in ("full", *scenarios)}
    priced = True

    def figures(sid: str, share: float) -> tuple[float, float | None]:
        roles = planned.subtasks[sid].roles if sid in planned.subtasks else ()
        costs = [r.cost.expected for r in roles if r.cost is not None]
        cost = sum(c for c in costs if c is not None) * share if costs and None not in costs else None
        return sum(r.calls.min for r in roles) * share, cost

    for sid, stage in stages.items():
        total = len(stage.samples)
        checks = [c for _, c in stage.checks]
        row = [f"  {sid}: full {total} items"]
        for name in ("full", *scenarios):
            n = total if name == "full" else items_to_decide(checks, total, name, policy)
            calls, cost = figures(sid, n / total)
            totals[name][0] += calls
            if cost is None:
                priced = False
            else:
                totals[name][1] += cost
            money = "" if cost is None else f", ${cost:.2f}"
            row.append(f"{calls:,.0f} calls{money}" if name == "full" else f"{name} {n} items ({calls:,.0f} calls{money})")
        lines.append("; ".join(row))
    if not stages:
        lines.append("  no sub-task of this run feeds a check with an anytime-valid interval: every item is played")
        return lines
    money = {k: "" if not priced else f", ${v[1]:.2f}" for k, v in totals.items()}
    lines.append("  these sub-tasks: full " + f"{totals['full'][0]:,.0f} calls{money['full']}; " + "; ".join(
        f"{s} {totals[s][0]:,.0f} calls{money[s]}" for s in scenarios))
    return lines
