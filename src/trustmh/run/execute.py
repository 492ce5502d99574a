"""`trustmh run`, stage by stage: resolve the request (`config`), plan what to run (`select`), estimate and
check the budget (`estimate`, `budget`), evaluate through Inspect (`inspect_eval`), read the logs back
(`collect`) and finish (`finalize`). Shards and their merge: `shards`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from trustmh.core import notice
from trustmh.data.locate import resolved_files
from trustmh.run import rounds, rundir
from trustmh.run.budget import BUDGET_EXIT, check_before, metering, needs_prices, open_budget, settle
from trustmh.run.collect import collect
from trustmh.run.config import RunOptions, RunSpec, resolve, run_manifest
from trustmh.run.estimate import estimate, plan_settings, to_json
from trustmh.run.finalize import finalize
from trustmh.run.inspect_eval import evaluate
from trustmh.run.select import plan_run
from trustmh.run.shards import shard_tasks
from trustmh.storage import Url, run_path, write_text_atomic


def run(opts: RunOptions) -> tuple[dict[str, Any], int]:
    """Run the evaluation; returns (results.json content, exit code). One process at a time per run
    directory (`rundir.locked`); with --overwrite the previous run is kept aside until this one has written
    its results, and put back if this one fails first."""
    needs_prices(opts.cost)
    spec = resolve(opts)
    out = run_path(spec.output.out)
    with rundir.locked(out):
        try:
            data, code = _run(spec, out)
        except BaseException:
            if opts.output.overwrite and rundir.restore_aside(out):
                notice(f"the previous run in {out} is kept (this one did not finish)")
            raise
        rundir.drop_aside(out)
        return data, code


def _run(spec: RunSpec, out: Path | Url) -> tuple[dict[str, Any], int]:
    plan = plan_run(spec)
    plan.planned = estimate(plan, plan_settings(spec))
    check_before(plan.planned, spec.cost.budget, spec.cost.force)
    started = time.time()
    manifest = run_manifest(spec)
    if spec.execution.shard is not None:
        manifest["shard"] = list(spec.execution.shard)
    # the content of every data file the plan read: a continued run whose inputs changed is refused
    manifest["datasets"] = resolved_files()
    continued = rundir.prepare(out, manifest, overwrite=spec.output.overwrite)
    if continued:
        notice(f"continuing the run in {out}: finished sub-tasks and samples are reused, cached calls are "
               "not paid again")
        reopened = rundir.reopen_errored_logs(out / "logs")
        if reopened:
            notice(f"{len(reopened)} sub-task(s) had errored samples: those samples are asked again, the "
                   "finished ones are kept")
    if spec.execution.shard is not None:
        shard_tasks(plan, spec.execution.shard)
    write_text_atomic(out / "plan.json", to_json(plan.planned))
    budget = open_budget(spec.cost.budget, spec.cost.prices, out)
    with metering(budget):
        logs = rounds.play(plan, out) if spec.execution.until_decided else evaluate(plan, out)
    records, model_reported = collect(plan, logs)
    stopped = False
    account = None
    if budget is not None:
        account = settle(budget, out, unfinished=sum(plan.n_errors.values()))
        if account["stopped"]:
            stopped = True
            # the samples the budget did not start are reported as not run, not as errors
            plan.errors[:] = [e for e in plan.errors if "sample(s) errored" not in e]
    data, code = finalize(plan, records, model_reported, out, started, account)
    if account is not None and stopped:
        notice(f"budget reached ({budget.spent:.4f} of {budget.amount:g}): stopped with "
               f"{account['unfinished_samples']} sample(s) not run (exit {BUDGET_EXIT}); run again with a "
               "higher --budget to continue")
        return data, BUDGET_EXIT
    return data, code
