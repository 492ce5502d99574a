"""Shards of one run (`trustmh run --shard I/N`, `--workers N`): each takes a deterministic slice of every
sub-task's items; `merge` checks that the shards belong together and hold exactly the run's items, then
aggregates their records as a single-process run would."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError, notice
from trustmh.data.locate import resolved_files
from trustmh.run import rundir
from trustmh.run.collect import collect, current_logs
from trustmh.run.config import options_from_manifest, resolve
from trustmh.run.estimate import estimate, plan_settings
from trustmh.run.finalize import finalize
from trustmh.run.select import RunPlan, plan_run
from trustmh.run.tasks import task_key
from trustmh.storage import Url, run_path


def shard_tasks(plan: RunPlan, shard: tuple[int, int]) -> None:
    """Keep this shard's slice of every task: items k with k mod N == i, in dataset order, after each
    sub-task's own seeded selection, so the shards together hold exactly the items of a single run."""
    from inspect_ai.dataset import MemoryDataset

    index, count = shard
    kept = []
    for task in plan.tasks:
        samples = [s for k, s in enumerate(task.dataset) if k % count == index]
        if samples:
            task.dataset = MemoryDataset(samples, name=task.dataset.name)
            kept.append(task)
    plan.tasks = kept


def _ids(pairs: list[tuple[str, int]], shown: int = 5) -> str:
    names = [f"{i}" if e == 1 else f"{i} (epoch {e})" for i, e in sorted(pairs)]
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def check_items(plan: RunPlan, samples: dict[str, list[tuple[str, int]]]) -> None:
    """Refuse unless the samples read from the logs are exactly the planned ones: every (item, epoch) of
    every evaluated sub-task once, none missing, none twice, none foreign; the error names the items."""
    problems = []
    for task in plan.tasks:
        sid = task_key(task.metadata)  # a sub-task, or the anchor items of its judge
        epochs = int(getattr(task, "epochs", 1) or 1)
        planned = {(str(s.id), e) for s in task.dataset for e in range(1, epochs + 1)}
        got = samples.get(sid, [])
        counts: dict[tuple[str, int], int] = {}
        for pair in got:
            counts[pair] = counts.get(pair, 0) + 1
        missing = sorted(planned - set(counts))
        twice = sorted(p for p, c in counts.items() if c > 1)
        foreign = sorted(set(counts) - planned)
        parts = ([f"{len(missing)} missing ({_ids(missing)})"] if missing else []) + (
            [f"{len(twice)} given twice ({_ids(twice)})"] if twice else []) + (
            [f"{len(foreign)} not in the plan ({_ids(foreign)})"] if foreign else [])
        if parts:
            problems.append(f"{sid}: {', '.join(parts)}")
    if problems:
        raise TrustmhError("the shards do not hold exactly the run's items: " + "; ".join(problems)
                           + " (re-run the shard(s) concerned; a shard's logs/ must hold its own logs, once)")


def _log_header(read_eval_log: Any, path: Any) -> Any:
    """A shard log's header; a log that cannot be read (cut short: "EOCD not found") is named, with the way out."""
    try:
        return read_eval_log(str(path), header_only=True)
    except Exception as exc:  # noqa: BLE001  zipfile, JSON or Inspect's own errors: one line naming the file
        raise TrustmhError(f"{path}: cannot read this Inspect log ({type(exc).__name__}: "
                           f"{' '.join(str(exc).split()) or 'no detail'}); run that shard again to rewrite it") from None


def merge(dirs: list[Path | Url], out: Path | Url) -> tuple[dict[str, Any], int]:
    """Combine the shards of one run (`trustmh run --shard i/N` into each of `dirs`) into `out`: checks that
    they belong together (same configuration and versions), that no slice is missing or doubled, then
    aggregates their records exactly as a single-process run would."""
    from inspect_ai.log import read_eval_log

    dirs, out = [run_path(d) for d in dirs], run_path(out)
    manifests = []
    for d in dirs:
        path = d / rundir.MANIFEST
        try:
            manifests.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            raise TrustmhError(f"{path}: not a trustmh shard run directory ({exc})") from None
    shards = []
    for d, m in zip(dirs, manifests, strict=True):
        if not isinstance(m.get("shard"), list) or len(m["shard"]) != 2:
            raise TrustmhError(f"{d}: not a shard (run it with --shard i/N)")
        shards.append((int(m["shard"][0]), int(m["shard"][1])))
    base = {k: v for k, v in manifests[0].items() if k != "shard"}
    for d, m in zip(dirs[1:], manifests[1:], strict=True):
        other = {k: v for k, v in m.items() if k != "shard"}
        diffs = sorted(k for k in set(base) | set(other) if base.get(k) != other.get(k))
        if diffs:
            raise TrustmhError(f"{d}: belongs to another run than {dirs[0]} (differs in {', '.join(diffs)})")
    counts = {n for _, n in shards}
    if len(counts) != 1:
        raise TrustmhError(f"shards split the run differently: {sorted(counts)} slices")
    n = counts.pop()
    seen = [i for i, _ in shards]
    doubled = sorted({i for i in seen if seen.count(i) > 1})
    missing = sorted(set(range(n)) - set(seen))
    if doubled or missing:
        raise TrustmhError(f"shards of a {n}-way split: " + "; ".join(
            ([f"slice(s) {doubled} given twice"] if doubled else [])
            + ([f"slice(s) {missing} missing"] if missing else [])))
    for d in dirs:
        if not (d / "results.json").exists():
            raise TrustmhError(f"{d}: the shard has not finished (no results.json); run it again to complete it")
    started = time.time()
    plan = plan_run(resolve(options_from_manifest(base, out)))
    changed = rundir.changed_files(base.get("datasets") or {}, resolved_files()) if "datasets" in base else []
    if changed:
        raise TrustmhError(f"the shards were computed from other data than is here now: {'; '.join(changed)}")
    plan.planned = estimate(plan, plan_settings(plan.spec))
    # headers only: collect() reads each log's records in turn, so memory holds one shard log at a time
    logs = [log for d in dirs for log in current_logs([_log_header(read_eval_log, p)
                                                        for p in sorted((d / "logs").glob("*.eval"))])]
    samples: dict[str, list[tuple[str, int]]] = {}
    records, model_reported = collect(plan, logs, samples)
    check_items(plan, samples)
    with rundir.locked(out):
        rundir.prepare(out, base, overwrite=False)
        notice(f"merged {len(dirs)} shards into {out}")
        return finalize(plan, records, model_reported, out, started)

