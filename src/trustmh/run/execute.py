"""`trustmh run`: build the Inspect tasks, evaluate, read the logs back, aggregate, write the report."""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.catalogue import get_subtask, is_implemented
from trustmh.core import (
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
)
from trustmh.data.locate import reset_resolved, resolved_files
from trustmh.data.registry import cache_dir
from trustmh.inspect_compat import cache_urls_moved, provider_discounts
from trustmh.judges.certificates import fingerprint_of, fingerprint_settings
from trustmh.judges.ensemble import MEMBERS_KEY, ensemble_settings, member_agreement
from trustmh.judges.parse import judge_was_recovered
from trustmh.models.batch import BatchMode, env_seconds, live_providers
from trustmh.models.endpoint import ENDPOINT_ENV
from trustmh.models.gguf import default_parallel
from trustmh.pillars.conversation.contract import ConversationSubtask
from trustmh.pillars.conversation.patient_checks import family_warnings
from trustmh.pillars.mentalbench.export import export_long_table
from trustmh.pillars.mentalbench.sources import model_family
from trustmh.report import run_report_html
from trustmh.results import RunResults, write_run
from trustmh.results.usage import usage_rows
from trustmh.run import rundir, usage
from trustmh.run.calls import capped
from trustmh.run.config import RunOptions, RunSpec, options_from_manifest, resolve, run_manifest
from trustmh.run.logs import records_from_log
from trustmh.run.plan import EXPECTED_TOKENS, PlanSettings, estimate, to_json
from trustmh.run.secrets import redact, scrub_run_dir, secret_values
from trustmh.run.tasks import build_task
from trustmh.storage import Url, run_path, write_text_atomic

SAMPLE_RETRIES = 3
DEFAULT_MAX_TASKS = 4
# Finished samples written to a sub-task's .eval log per flush (Inspect's own default is 10, which rewrites
# the growing log every 10 samples). A killed run loses at most this many finished samples per running
# sub-task; they are run again from the response cache, so no call is paid twice (`--log-buffer`).
DEFAULT_LOG_BUFFER = 50


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


@dataclass
class RunPlan:
    """What a run will do, decided before any model call: the spec, its context, the sub-tasks and their Inspect
    tasks, and the results already known (not computed, errors). Shared by `run` and `merge`."""

    spec: RunSpec
    ctx: RunContext
    results: dict[str, SubtaskResult] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    item_order: dict[str, dict[str, int]] = field(default_factory=dict)
    subtasks: dict[str, Subtask] = field(default_factory=dict)
    derived: dict[str, Subtask] = field(default_factory=dict)  # aggregated from another's records
    hidden: set[str] = field(default_factory=set)  # run only for a derived sub-task: not published
    generation: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    n_errors: dict[str, int] = field(default_factory=dict)  # errored samples per sub-task
    planned: dict[str, Any] | None = None  # `trustmh.run.plan.estimate` of this plan (plan.json)


def plan_run(spec: RunSpec) -> RunPlan:
    """The run context and the Inspect tasks of a resolved run (data is loaded here; no model is called)."""
    ctx = spec.context()
    plan = RunPlan(spec=spec, ctx=ctx)
    if spec.patient is not None:
        _log(f"simulated patient: {spec.patient.label} ({spec.patient.source})")
        for warning in family_warnings(list(spec.patient.models), ctx.judges, spec.model):
            _log(f"warning: {warning}")
    reset_resolved()
    queue = list(spec.subtasks)
    while queue:
        sid = queue.pop(0)
        if sid in plan.subtasks or sid in plan.results:
            continue
        if not is_implemented(sid):
            plan.results[sid] = SubtaskResult.not_computed("not implemented yet", "higher")
            continue
        subtask = get_subtask(sid)
        direction = subtask.direction(spec.mode)
        reason = subtask.not_computed_reason(ctx)
        if reason is not None:
            plan.results[sid] = SubtaskResult.not_computed(reason, direction)
            _log(f"{sid}: not computed ({reason})")
            continue
        if subtask.derived_from is not None:
            plan.derived[sid] = subtask
            if subtask.derived_from not in spec.subtasks:
                plan.hidden.add(subtask.derived_from)
                queue.append(subtask.derived_from)
            continue
        try:
            task = build_task(sid, ctx)
            plan.tasks.append(task)
            plan.item_order[sid] = {str(sample.id): i for i, sample in enumerate(task.dataset)}
            gen = subtask.generation(ctx)
            plan.generation[sid] = {"temperature": gen.temperature, "top_p": gen.top_p, "samples": gen.epochs,
                                    "max_tokens": capped(gen.max_tokens, ctx), "seed": ctx.seed}
        except TrustmhError as exc:
            plan.errors.append(f"{sid}: {exc}")
            plan.results[sid] = SubtaskResult.not_computed(f"error: {exc}", direction)
            _log(f"{sid}: ERROR {exc}")
            continue
        plan.subtasks[sid] = subtask
    if not plan.tasks and plan.errors and not plan.derived:
        # nothing could be evaluated: bad input, reported before any model call, and no result written
        raise TrustmhError("; ".join(plan.errors))
    return plan


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


def execute(plan: RunPlan, out: Path | Url) -> list[Any]:
    """Evaluate the plan's tasks as an Inspect eval set in `out/logs` (resumable); returns the logs."""
    from inspect_ai import eval_set


    spec = plan.spec
    if not plan.tasks:
        return []
    # attempt_timeout is what abandons a hung request; timeout bounds the whole retry loop.
    kwargs: dict[str, Any] = {"max_retries": spec.max_retries, "attempt_timeout": spec.timeout,
                              "timeout": spec.timeout * (spec.max_retries + 2),
                              # a sample whose call failed in a way the provider does not retry (a 200
                              # with half a JSON body) is run again, a bounded number of times
                              "retry_on_error": SAMPLE_RETRIES}
    bundled = spec.model.startswith("gguf/")
    if spec.max_connections is not None:
        kwargs["max_connections"] = spec.max_connections
    elif bundled:
        # bundled model: one call per single-slot llama.cpp server (Inspect ignores the provider's own default
        # and would queue 20 requests in the front, where they would time out)
        kwargs["max_connections"] = default_parallel()
    if spec.max_tasks:
        max_tasks = spec.max_tasks
    elif bundled:
        max_tasks = default_parallel()  # a sub-task's last sample need not leave a server idle
    else:
        max_tasks = DEFAULT_MAX_TASKS
    display = spec.display or (None if sys.stderr.isatty() else "plain")
    mode = batch_mode(plan, out)
    with response_cache_dir(out), cache_urls_moved(spec.cache_moved), provider_discounts(mode, spec.prompt_cache):
        # An eval set, so that running the same command again continues the run: finished sub-tasks
        # are skipped and an interrupted one reuses its finished samples (Inspect's own resume).
        _, logs = eval_set(
            plan.tasks,
            log_dir=str(out / "logs"),
            retry_attempts=0,  # re-running the command is the retry; errors are reported, not looped
            retry_immediate=False,
            model=spec.model_target,
            # the endpoint file as a model arg: Inspect keeps one provider per (model, args), so a second
            # run in one process with another file never reuses the first one's product
            model_args={"endpoint": os.environ[ENDPOINT_ENV]} if spec.model.startswith("http/") else {},
            model_roles=dict(spec.roles) or None,
            max_tasks=max_tasks,
            # progress must stay visible when output goes to a file or a CI log, not only on a terminal
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            **log_settings(spec, display),
            **kwargs,
        )
    return list(logs)


def batch_mode(plan: RunPlan, out: Path | Url) -> BatchMode | None:
    """The run's batch mode (`--batch`), its journal in the run directory, and which models run live."""
    spec = plan.spec
    if spec.batch is None:
        return None
    models = [spec.model, *plan.ctx.judges, *(spec.patient.models if spec.patient else ())]
    live = live_providers([str(m) for m in models])
    if live:
        _log(f"--batch: {', '.join(live)} ha{'s' if len(live) == 1 else 've'} no batch API: called live")
    conversations = [sid for sid, s in plan.subtasks.items() if isinstance(s, ConversationSubtask)]
    if conversations and not spec.batch_conversations:
        _log(f"--batch: the turns of {', '.join(conversations)} stay live (--batch-conversations batches them: "
             "hours per turn); their judges are batched")
    if isinstance(out, Url):
        _log("--batch with a run directory at a URL: no batch journal is kept, so a run killed while batches are "
             "in flight submits (and pays for) their requests again when started again")
    return BatchMode(size=spec.batch or None, conversations=spec.batch_conversations,
                     journal_dir=None if isinstance(out, Url) else Path(out),
                     tick=env_seconds("TRUSTMH_BATCH_TICK"), send_delay=env_seconds("TRUSTMH_BATCH_SEND_DELAY"))


def log_settings(spec: RunSpec, display: str | None) -> dict[str, Any]:
    """Inspect's logging settings for a run: what the logs are for (every sample's transcript in the final
    .eval log; resume after a kill) at a fraction of Inspect's default CPU per sample (issue 11).

    * log_realtime=False: no per-event writes to Inspect's SQLite sample buffer (the largest share of
      Inspect's own per-sample cost). That buffer serves live viewing of running samples and recovery of
      finished-but-unflushed samples after a crash; trustmh recovers those from its response cache instead
      (a resumed run asks no call again). `--live-log` turns it back on.
    * log_buffer: finished samples per write of the .eval log (see DEFAULT_LOG_BUFFER); Inspect also flushes
      a sample that waited 60 s, so a slow run never holds more than a minute of samples unwritten.
    * score_display=False when nothing is displayed: Inspect would still recompute the running metric.
    """
    settings: dict[str, Any] = {"log_realtime": spec.live_log,
                                "log_buffer": spec.log_buffer or DEFAULT_LOG_BUFFER}
    if display == "none":
        settings["score_display"] = False
    return settings


def collect(plan: RunPlan, logs: list[Any], samples: dict[str, list[tuple[str, int]]] | None = None
            ) -> tuple[dict[str, list[Record]], str | None]:
    """Records per sub-task from the logs (several logs of one sub-task, e.g. shards, are pooled), in the
    canonical order: dataset order, then epoch. Results never depend on completion order, on how a resumed
    run was interrupted, or on how samples were spread over processes. Errors go into the plan; every
    sample's (id, epoch) into `samples` when given (`check_items`)."""

    records: dict[str, list[Record]] = {}
    model_reported = None
    for log in logs:
        sid = (log.eval.metadata or {}).get("trustmh_subtask")
        if sid is None or sid not in plan.subtasks:
            continue
        messages: list[str] = []
        recs, n_errors, reported = records_from_log(
            log, messages, None if samples is None else samples.setdefault(sid, []))
        model_reported = model_reported or reported
        if log.status != "success":
            msg = log.error.message if log.error else log.status
            plan.errors.append(f"{sid}: task {log.status}: {msg}")
        if n_errors:
            # the first distinct cause, on one line (a bad endpoint reply names its field)
            why = f": {messages[0][:300]}" + (f" (and {len(messages) - 1} other cause(s))" if len(messages) > 1
                                              else "") if messages else ""
            plan.errors.append(f"{sid}: {n_errors} sample(s) errored{why}")
        records.setdefault(sid, []).extend(recs)
        plan.n_errors[sid] = plan.n_errors.get(sid, 0) + n_errors
    for sid, recs in records.items():
        order = plan.item_order[sid]
        recs.sort(key=lambda r: (order.get(r.item_id, len(order)), r.epoch))
    return records, model_reported


def finalize(plan: RunPlan, records: dict[str, list[Record]], model_reported: str | None, out: Path | Url,
             started: float, extra: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
    """Aggregate, write the run directory's results, scrub secrets, report errors."""
    ctx, results, errors = plan.ctx, plan.results, plan.errors
    for sid, subtask in plan.subtasks.items():
        results[sid] = aggregate(subtask, records.get(sid, []), ctx, plan.n_errors.get(sid, 0))
    for sid, subtask in plan.derived.items():
        source = subtask.derived_from or ""
        if source in records:
            errs = results[source].metrics.get("n_errors", 0)
            results[sid] = aggregate(subtask, records[source], ctx, errs)
            results[sid].notes.append(f"aggregated from the replies and judge calls of {source}")
        elif source in results:
            results[sid] = SubtaskResult.not_computed(f"{source} was not computed ({results[source].reason})",
                                                      subtask.direction(ctx.mode))
    for sid in plan.hidden:
        results.pop(sid, None)  # run for a derived sub-task only; its records stay in items.jsonl
    planned = plan.planned or {}
    extra = {**(extra or {}), "usage": usage_rows(records, plan.spec.prices, planned.get("subtasks"))}
    if planned:
        extra["plan"] = {"totals": planned["totals"], "wall_seconds": planned["wall_seconds"],
                         "assumptions": planned["assumptions"],
                         **({"batch": planned["batch"]} if "batch" in planned else {})}
    spec = plan.spec
    run_results = RunResults(model=spec.model, ctx=ctx, subtasks=results, records=records,
                             model_reported=model_reported, errors=errors, options=spec.recorded_options(),
                             extra={"generation": plan.generation,
                                    **({"patient": spec.patient.to_json()} if spec.patient else {}),
                                    **(extra or {})})
    data = write_run(run_results, out, report=functools.partial(run_report_html, certs_dir=spec.certificates))
    if "mentalbench/generation" in records:

        written = export_long_table(records["mentalbench/generation"], out, model_label=spec.model)
        if "judge_long" not in written:
            _log("judge_long.csv not written: no judged reply in this run is one of the human-rated "
                 "MentalAlign responses (judge the released responses with `trustmh rescore --format "
                 "mentalbench` to compare a judge with the experts)")
    secrets = secret_values()
    scrubbed = scrub_run_dir(out, secrets, since=started)
    if scrubbed:
        _log(f"an API key appeared in {len(scrubbed)} file(s) (a provider quoted it in an error); redacted")
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for err in errors:  # shown whatever the display (Inspect's own display may be "none")
        _log(f"error: {redact(err, secrets)}")
    _log(f"wrote {out / 'results.json'}, {out / 'results.csv'}, {out / 'report.html'}")
    return data, (1 if errors else 0)


# `trustmh run --budget`: the exit code of a run stopped because its counted cost reached the budget.
BUDGET_EXIT = 3  # = trustmh.cli.args.BUDGET_EXIT (the CLI's help names it without importing the run)
SPEND_FILE = "spend.json"


def plan_settings(spec: RunSpec, **more: Any) -> Any:
    expected = dict(EXPECTED_TOKENS)
    if spec.expect_reply_tokens:
        expected["model"] = int(spec.expect_reply_tokens)
    settings = PlanSettings(prices=dict(spec.prices), expected=expected, **more)
    if spec.batch is not None:
        settings.batch = BatchMode(size=spec.batch or None, conversations=spec.batch_conversations)
    if spec.latency:
        settings.latency = float(spec.latency)
    return settings


def budget_needs_prices(request: RunOptions | RunSpec) -> None:
    """--budget without a price file cannot be counted: said before the plan is built."""
    if request.budget is not None and not request.prices:
        raise TrustmhError("--budget needs --prices FILE (the cost of each model's tokens)")


def over_budget(planned: dict[str, Any], budget: float) -> str | None:
    """Why a run of this plan (plan.json) would refuse to start under `budget`; None when it would start."""
    cost = planned["totals"]["cost"]
    if cost["price_unknown"]:
        return f"price unknown for {', '.join(cost['price_unknown'])}: the run's cost cannot be bounded"
    top, what = cost["max"], "the plan's upper estimate"
    if (planned.get("batch") or {}).get("on"):  # a batched run is bounded at the batch rates
        top, what = planned["totals"]["cost_scenarios"]["batch"]["max"], "the plan's upper estimate at batch rates"
    if top > budget:
        return f"{what} {top:.4f} is over the budget {budget:g}"
    return None


def check_budget_before(plan: RunPlan) -> None:
    """Refuse to start a run whose planned upper cost is over --budget (or cannot be bounded), unless --force."""
    spec = plan.spec
    if spec.budget is None:
        return
    assert plan.planned is not None
    why = over_budget(plan.planned, spec.budget)
    if why is None:
        return
    if spec.force:
        _log(f"{why}; starting anyway (--force); the budget still stops the run")
        return
    raise TrustmhError(f"{why} (see `trustmh plan`; --force starts anyway and stops at the budget)")


def run(opts: RunOptions) -> tuple[dict[str, Any], int]:
    """Run the evaluation; returns (results.json content, exit code). One process at a time per run
    directory (`rundir.locked`); with --overwrite the previous run is kept aside until this one has written
    its results, and put back if this one fails first."""
    budget_needs_prices(opts)
    spec = resolve(opts)
    out = run_path(spec.out)
    with rundir.locked(out):
        try:
            data, code = _run(spec, out)
        except BaseException:
            if opts.overwrite and rundir.restore_aside(out):
                _log(f"the previous run in {out} is kept (this one did not finish)")
            raise
        rundir.drop_aside(out)
        return data, code


def _run(spec: RunSpec, out: Path | Url) -> tuple[dict[str, Any], int]:
    plan = plan_run(spec)
    plan.planned = estimate(plan, plan_settings(spec))
    check_budget_before(plan)
    started = time.time()
    manifest = run_manifest(spec)
    if spec.shard is not None:
        manifest["shard"] = list(spec.shard)
    # the content of every data file the plan read: a continued run whose inputs changed is refused
    manifest["datasets"] = resolved_files()
    continued = rundir.prepare(out, manifest, overwrite=spec.overwrite)
    if continued:
        _log(f"continuing the run in {out}: finished sub-tasks and samples are reused, cached calls are "
             "not paid again")
        reopened = rundir.reopen_errored_logs(out / "logs")
        if reopened:
            _log(f"{len(reopened)} sub-task(s) had errored samples: those samples are asked again, the "
                 "finished ones are kept")
    extra: dict[str, Any] = {}
    if spec.shard is not None:
        shard_tasks(plan, spec.shard)
        extra = {"shard": list(spec.shard),
                 "notice": f"shard {spec.shard[0]}/{spec.shard[1]}: a slice of the items, not a result; combine "
                           "all shards with `trustmh merge`"}
    write_text_atomic(out / "plan.json", to_json(plan.planned))
    spent_before = _spent(out)
    if spec.budget is not None:
        usage.METER = usage.Meter(budget=spec.budget, prices=dict(spec.prices), spent=spent_before)
        if usage.METER.reached:
            _log(f"{spent_before:.4f} already spent of the budget {spec.budget:g}: no sample will start")
    try:
        logs = execute(plan, out)
    finally:
        meter, usage.METER = usage.METER, None
    records, model_reported = collect(plan, logs)
    stopped = False
    if meter is not None:
        write_text_atomic(out / SPEND_FILE, json.dumps({"spent": meter.spent, "unpriced": sorted(meter.unpriced)},
                                                       indent=2) + "\n")
        unfinished = sum(plan.n_errors.values())
        if meter.reached and unfinished:
            stopped = True
            plan.errors[:] = [e for e in plan.errors if "sample(s) errored" not in e]
            extra["budget"] = {"amount": spec.budget, "spent": meter.spent, "stopped": True,
                               "unfinished_samples": unfinished,
                               "notice": f"stopped at the budget: {unfinished} sample(s) not run; the same "
                                         "command with a higher --budget continues without paying again for "
                                         "anything finished"}
        else:
            extra["budget"] = {"amount": spec.budget, "spent": meter.spent, "stopped": False}
    data, code = finalize(plan, records, model_reported, out, started, extra)
    if stopped:
        _log(f"budget reached ({meter.spent:.4f} of {spec.budget:g}): stopped with {extra['budget']['unfinished_samples']} "
             f"sample(s) not run (exit {BUDGET_EXIT}); run again with a higher --budget to continue")
        return data, BUDGET_EXIT
    return data, code


def _spent(out: Path | Url) -> float:
    """What earlier invocations of this run spent (`spend.json`), so a budget bounds the whole run."""
    try:
        return float(json.loads((out / SPEND_FILE).read_text(encoding="utf-8"))["spent"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


@contextmanager
def response_cache_dir(out: Path | Url) -> Iterator[None]:
    """Where Inspect keeps its response cache during the eval: INSPECT_CACHE_DIR if the user set it, else
    `$TRUSTMH_CACHE_DIR/responses` (shared by runs), else `OUT/cache` (this run directory), or for a URL
    run directory a local folder of this machine keyed by the URL (Inspect's cache is a local directory;
    a run resumed elsewhere still resumes from the logs at the URL). Restored after, so one process
    running several evaluations never shares a cache by accident."""
    before = os.environ.get("INSPECT_CACHE_DIR")
    if before:
        yield
        return
    shared = os.environ.get("TRUSTMH_CACHE_DIR")
    if shared:
        where = Path(shared) / "responses"
    elif isinstance(out, Url):
        where = url_cache_dir(out)
    else:
        where = Path(out).resolve() / "cache"
    os.environ["INSPECT_CACHE_DIR"] = str(where)
    try:
        yield
    finally:
        os.environ.pop("INSPECT_CACHE_DIR", None)


def url_cache_dir(out: Url) -> Path:
    """The local response cache of a URL run directory: the user's trustmh cache, keyed by the URL."""
    import hashlib


    return cache_dir() / "url-runs" / hashlib.sha256(out.url.encode()).hexdigest()[:16] / "cache"


def aggregate(subtask: Subtask, recs: list[Record], ctx: RunContext, n_errors: int = 0) -> SubtaskResult:
    """Sub-task aggregate plus the bookkeeping every result carries (judge identity and agreement, judge
    replies recovered from truncation, sample errors)."""
    if not recs:
        result = SubtaskResult.not_computed("no scored samples", subtask.direction(ctx.mode))
    else:
        result = subtask.aggregate(recs, ctx)
    # what --limit became: replies scored and distinct items (fairness asks each item in 17 variants,
    # privacy awareness samples several replies per item, robustness asks each item at each level)
    result.metrics["n_samples"] = len(recs)
    result.metrics["n_items"] = len({r.item_id for r in recs})
    if subtask.judge_use != "no" and ctx.has_judge:
        judge_bookkeeping(result, recs, ctx, subtask)
    if n_errors:
        result.metrics["n_errors"] = n_errors
        result.notes.append(f"{n_errors} sample(s) failed with an error and are not scored")
    return result


def judge_bookkeeping(result: SubtaskResult, recs: list[Record], ctx: RunContext,
                      subtask: Subtask | None = None) -> None:
    """Which judge(s) produced the numbers, whether they are validated, the fingerprint of how the judge was
    asked (the key of its certificate, docs/judges.md#certificates), the ensemble's agreement and
    same-family flags, and how many judge replies were recovered from a truncated reply."""

    members = ctx.judges
    if result.judge is None:
        result.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
        if not ctx.judge.validated:
            result.notes.append(f"judge {', '.join(members)} is not validated for this task: "
                                "judge-based numbers are a demonstration only")
    if subtask is not None and subtask.judge_templates:
        settings = fingerprint_settings(subtask, ctx)
        result.judge["fingerprint"] = fingerprint_of(settings)
        result.judge["fingerprint_settings"] = settings
    model_fam = model_family(ctx.model or "")
    same = {m: bool(model_fam is not None and model_family(m) == model_fam) for m in members}
    result.judge["same_family"] = same
    for m, flag in same.items():
        if flag:
            result.notes.append(f"judge {m} is from the same family ({model_fam}) as the model under test: "
                                "its scores may favour it (self-preference)")
    unit_members = [r.score[MEMBERS_KEY] for r in recs if isinstance(r.score.get(MEMBERS_KEY), dict)]
    if len(members) > 1 and unit_members:
        aggregator, min_valid = ensemble_settings(ctx.options, len(members))
        result.judge.update(members=members, aggregator=aggregator, min_valid=min_valid)
        result.metrics["judge_agreement"] = member_agreement(unit_members)
        result.notes.append(f"scored by an ensemble of {len(members)} judges ({aggregator}, at least "
                            f"{min_valid} valid); agreement among them in metrics.judge_agreement")
    recovered = sum(1 for r in recs for text in r.judge_raw.values() if judge_was_recovered(text))
    result.metrics["judge_recovered"] = recovered
    if recovered:
        result.notes.append(f"{recovered} judge repl(ies) were cut off by the token limit; their complete "
                            "score fields were recovered and used")


def current_logs(logs: list[Any]) -> list[Any]:
    """The logs of one run directory that hold its current samples: a log that did not finish (a killed or
    failed process) is superseded by any later log of the same sub-task (the resumed run's, which carries the
    finished samples over), never pooled with it. Finished logs are all kept: two of one sub-task is a
    duplicate that `check_items` refuses."""

    def key(log: Any) -> tuple[str, str]:
        return str(log.eval.created or ""), str(log.location or "")

    by_sid: dict[str, list[Any]] = {}
    for log in logs:
        by_sid.setdefault(str((log.eval.metadata or {}).get("trustmh_subtask")), []).append(log)
    kept = []
    for group in by_sid.values():
        group.sort(key=key)
        for i, log in enumerate(group):
            if log.status == "success" or i == len(group) - 1:
                kept.append(log)
    return kept


def _ids(pairs: list[tuple[str, int]], shown: int = 5) -> str:
    names = [f"{i}" if e == 1 else f"{i} (epoch {e})" for i, e in sorted(pairs)]
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def check_items(plan: RunPlan, samples: dict[str, list[tuple[str, int]]]) -> None:
    """Refuse unless the samples read from the logs are exactly the planned ones: every (item, epoch) of
    every evaluated sub-task once, none missing, none twice, none foreign; the error names the items."""
    problems = []
    for task in plan.tasks:
        sid = task.metadata["trustmh_subtask"]
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
    logs = [log for d in dirs for log in current_logs(
        [read_eval_log(str(p), header_only=True) for p in sorted((d / "logs").glob("*.eval"))])]
    samples: dict[str, list[tuple[str, int]]] = {}
    records, model_reported = collect(plan, logs, samples)
    check_items(plan, samples)
    with rundir.locked(out):
        rundir.prepare(out, base, overwrite=False)
        _log(f"merged {len(dirs)} shards into {out}")
        return finalize(plan, records, model_reported, out, started)
