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

import trustmh
from trustmh.catalogue import get_subtask, is_implemented, select
from trustmh.core import (
    SEED_MAX,
    JudgeInfo,
    Mode,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
)
from trustmh.data.locate import reset_resolved, resolved_files
from trustmh.data.registry import cache_dir
from trustmh.inspect_compat import cache_urls_moved, model_provider_known, provider_discounts
from trustmh.judges.certificates import fingerprint_of, fingerprint_settings
from trustmh.judges.ensemble import MEMBERS_KEY, ensemble_settings, member_agreement
from trustmh.judges.parse import judge_was_recovered
from trustmh.models import BUNDLED_MODEL
from trustmh.models.batch import BatchMode, env_seconds, live_providers
from trustmh.models.endpoint import ENDPOINT_ENV, load_endpoint
from trustmh.models.gguf import default_parallel
from trustmh.options import check_options
from trustmh.pillars.conversation.contract import ConversationSubtask
from trustmh.pillars.conversation.patient_checks import family_warnings
from trustmh.pillars.mentalbench.export import export_long_table
from trustmh.pillars.mentalbench.sources import model_family
from trustmh.report import run_report_html
from trustmh.results import RunResults, write_run
from trustmh.results.usage import usage_rows
from trustmh.run import rundir, usage
from trustmh.run.calls import capped, judge_role
from trustmh.run.logs import records_from_log
from trustmh.run.plan import EXPECTED_TOKENS, PlanSettings, estimate, to_json
from trustmh.run.secrets import redact, scrub_run_dir, secret_values
from trustmh.run.tasks import build_task
from trustmh.storage import Url, run_path, write_text_atomic

DEMO_LIMIT = 2
DEMO_MAX_TOKENS = 192  # the bundled model's reply cap in any run
# The offline demo only (bundled model, starter suite): see `plan_run`.
DEMO_REPLY_CAP = 64
DEMO_JUDGE_TEXT_CHARS = 80
DEMO_FAIRNESS_VALUES = 2  # identity values per attribute: 9 fairness variants instead of 17
SAMPLE_RETRIES = 3
DEFAULT_MAX_TASKS = 4
# Finished samples written to a sub-task's .eval log per flush (Inspect's own default is 10, which rewrites
# the growing log every 10 samples). A killed run loses at most this many finished samples per running
# sub-task; they are run again from the response cache, so no call is paid twice (`--log-buffer`).
DEFAULT_LOG_BUFFER = 50


@dataclass
class RunOptions:
    # A model string, or an Inspect `Model` object (tests pass canned models this way).
    model: Any = None
    suite: str | None = None
    pillars: list[str] | None = None
    subtasks: list[str] | None = None
    limit: int | None = None
    judge: Any = None
    no_judge: bool = False
    judge_validated: bool = False
    certificates: str | None = None  # judge certificates directory (the report's Judges section)
    mode: Mode = "default"
    seed: int = 0
    out: Path | Url = Path("trustmh-out")  # a local path or an fsspec URL (`trustmh.storage`)
    max_retries: int = 3
    timeout: int = 120
    max_connections: int | None = None
    display: str | None = None
    n_boot: int = 2000
    options: dict[str, Any] = field(default_factory=dict)
    cache: bool = True
    # `--endpoint-moved OLD=NEW`: {NEW_URL: OLD_URL}, the same model now answering at NEW_URL keeps the
    # response cache it built at OLD_URL (`inspect_compat.cache_urls_moved`)
    cache_moved: dict[str, str] = field(default_factory=dict)
    overwrite: bool = False  # replace a run of another configuration in `out` instead of refusing
    # Sub-tasks run at once within the process (Inspect's max_tasks); None: 4, or for the bundled model its
    # number of llama.cpp servers (`trustmh.models.gguf.default_parallel`).
    max_tasks: int | None = None
    # Further ensemble members after `judge` (model strings or Inspect `Model` objects).
    more_judges: list[Any] = field(default_factory=list)
    # (i, N): run only the i-th of N deterministic slices of every sub-task's items (`trustmh merge`).
    shard: tuple[int, int] | None = None
    # Finished samples per log flush (None: DEFAULT_LOG_BUFFER), and Inspect's realtime event log (live
    # viewing of running samples in `inspect view`), off by default for its CPU cost (see `log_settings`).
    log_buffer: int | None = None
    live_log: bool = False
    # The simulated patient (conversation sub-tasks; Inspect role `patient`): a model string or Model object.
    patient: Any = None
    # `--endpoint FILE`: the product's API for `--model http/<name>` (trustmh.models.endpoint)
    endpoint: Path | None = None
    # Prices (`--prices FILE`, loaded), the spending limit (`--budget`), and starting above the plan's upper
    # estimate anyway (`--force`); the plan's assumptions (`--latency`, `--expect-reply-tokens`).
    prices: dict[str, Any] = field(default_factory=dict)
    budget: float | None = None
    force: bool = False
    latency: float | None = None
    expect_reply_tokens: int | None = None
    # `--batch [N]` (None: live; 0: Inspect's batch size), `--batch-conversations`, `--no-prompt-cache`
    # (trustmh.models.batch; they change how calls are paid, not what a run computes: not in run.json)
    batch: int | None = None
    batch_conversations: bool = False
    prompt_cache: bool = True


def use_endpoint(model: Any, endpoint: Path | None) -> dict[str, Any] | None:
    """Check `--endpoint` against `--model` and the file itself (before any call), and hand the file to the
    `http` provider (and to every --workers shard) through the environment; {url, send, file} for run.json."""
    is_http = isinstance(model, str) and model.startswith("http/")
    if endpoint is None:
        if is_http and not os.environ.get(ENDPOINT_ENV):
            raise TrustmhError(f"--model {model}: needs --endpoint FILE (the product's API; see docs/products.md)")
        if not is_http:
            return None
        endpoint = Path(os.environ[ENDPOINT_ENV])
    elif not is_http:
        raise TrustmhError("--endpoint goes with --model http/<name>")
    parsed = load_endpoint(endpoint)
    os.environ[ENDPOINT_ENV] = str(Path(endpoint).expanduser().resolve())
    return {"url": parsed.url, "send": parsed.send, "session": parsed.session.start}


def resolve_defaults(opts: RunOptions) -> tuple[str, str, JudgeInfo]:
    """The embedded default: no --model means the bundled model, the starter suite and the bundled model
    as an unvalidated demo judge."""
    model = str(opts.model or BUNDLED_MODEL)
    bundled = model == BUNDLED_MODEL
    suite = opts.suite or ("starter" if bundled else "trustmh")
    if opts.no_judge:
        judge = JudgeInfo(model=None, validated=False, seed=opts.seed)
    elif opts.judge:
        label = str(opts.judge)
        judge = JudgeInfo(model=label, validated=opts.judge_validated and label != BUNDLED_MODEL,
                          seed=opts.seed)
    elif bundled:
        judge = JudgeInfo(model=BUNDLED_MODEL, validated=False, seed=opts.seed)
    else:
        judge = JudgeInfo(model=None, validated=False, seed=opts.seed)
    return model, suite, judge


def run_manifest(model: str, suite: str, ctx: RunContext, subtask_ids: list[str], opts: RunOptions
                 ) -> dict[str, Any]:
    """Everything that changes what a run computes, with the versions that compute it (`run.json`). Settings
    that only bound, pace or show a run (timeouts, retries, connections, tasks at once, display, cache) may
    change between invocations of one run."""
    import inspect_ai


    return json.loads(json.dumps({
        "trustmh_version": trustmh.__version__, "inspect_version": inspect_ai.__version__,
        "model": model, "suite": suite, "mode": ctx.mode, "seed": ctx.seed, "limit": ctx.limit,
        "judges": ctx.judges, "judge_validated": ctx.judge.validated, "subtasks": subtask_ids,
        "options": ctx.options, "n_boot": ctx.n_boot,
    }, default=str))


def resolve_patient(opts: RunOptions, judge: JudgeInfo, subtask_ids: list[str]) -> dict[str, Any] | None:
    """The simulated patient's model, when a chosen sub-task plays one: --patient, else the run's judge,
    else the bundled model; where it came from is recorded in results.json."""

    subtasks = [get_subtask(s) for s in subtask_ids if is_implemented(s)]
    needs = [s for s in subtasks if isinstance(s, ConversationSubtask) and s.needs_patient]
    if opts.patient is not None and not needs:
        raise TrustmhError("--patient applies only to conversation/simulated_patient, which is not selected")
    if not needs:
        return None
    if opts.patient is not None:
        names = patient_names(opts.patient)
        for name in names:
            check_model_name(name, "--patient")
        if len(set(map(str, names))) != len(names):
            raise TrustmhError(f"--patient lists a model twice: {opts.patient}")
        return {"model": ",".join(map(str, names)), "source": "--patient",
                **({"ensemble": [str(n) for n in names]} if len(names) > 1 else {})}
    if judge.model:
        return {"model": judge.model, "source": "the run's judge"}
    return {"model": BUNDLED_MODEL, "source": "the bundled model (no --patient, no judge)"}


def patient_names(patient: Any) -> list[Any]:
    """`--patient a,b,c`: an ensemble of patient models (each plays every n-th profile); a Model object or a
    list of them (tests, library use) as given."""
    if isinstance(patient, str):
        return [p.strip() for p in patient.split(",") if p.strip()]
    return list(patient) if isinstance(patient, list | tuple) else [patient]


def patient_role(index: int) -> str:
    """The Inspect model role of the index-th patient of an ensemble (the first is `patient`)."""
    return "patient" if index == 0 else f"patient_{index + 1}"


def check_model_name(name: Any, what: str) -> None:
    """A clear error for a model string whose provider Inspect does not know (instead of Inspect's
    exception group deep inside the eval)."""
    if not isinstance(name, str):
        return  # an Inspect Model object (tests, library use)
    # registers the bundled provider; imported here, not at start-up (the provider module loads llama.cpp)
    import trustmh.models.gguf  # noqa: F401
    import trustmh.models.http  # noqa: F401  (registers the `http` provider)

    provider = name.split("/", 1)[0] if "/" in name else None
    if provider is None:
        raise TrustmhError(f"{what} {name!r}: expected PROVIDER/MODEL, e.g. openai/gpt-4o-mini or gguf/smollm2")
    if not model_provider_known(provider):
        raise TrustmhError(f"{what} {name!r}: unknown model provider {provider!r} (Inspect providers include "
                           "openai, anthropic, google, vllm, ollama, hf, openai-api/<service>, and gguf for the "
                           "bundled model)")


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


@dataclass
class RunPlan:
    """What a run will do, decided before any model call: the context, the sub-tasks and their Inspect tasks,
    and the results already known (not computed, errors). Shared by `run` and `merge`."""

    opts: RunOptions
    model: str
    suite: str
    judge: JudgeInfo
    ctx: RunContext
    chosen_ids: list[str]
    results: dict[str, SubtaskResult] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    item_order: dict[str, dict[str, int]] = field(default_factory=dict)
    subtasks: dict[str, Subtask] = field(default_factory=dict)
    derived: dict[str, Subtask] = field(default_factory=dict)  # aggregated from another's records
    hidden: set[str] = field(default_factory=set)  # run only for a derived sub-task: not published
    generation: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    n_errors: dict[str, int] = field(default_factory=dict)  # errored samples per sub-task
    patient: dict[str, Any] | None = None  # {"model", "source"} when a sub-task plays a simulated patient
    planned: dict[str, Any] | None = None  # `trustmh.run.plan.estimate` of this plan (plan.json)


def plan_run(opts: RunOptions) -> RunPlan:
    """Defaults, checks, the run context and the Inspect tasks (data is loaded here; no model is called)."""

    if isinstance(opts.seed, bool) or not isinstance(opts.seed, int) or not 0 <= opts.seed <= SEED_MAX:
        raise TrustmhError(f"--seed {opts.seed!r}: must be a whole number from 0 to {SEED_MAX}")
    model, suite, judge = resolve_defaults(opts)
    check_model_name(opts.model or model, "--model")
    endpoint = use_endpoint(opts.model or model, opts.endpoint)
    if judge.model:
        for j in [opts.judge or judge.model, *opts.more_judges]:
            check_model_name(j, "--judge")
    chosen = select(opts.pillars, opts.subtasks, opts.mode, suite)
    if not chosen:
        raise TrustmhError("no sub-task selected (check --pillars/--subtasks and --mode)")
    check_options(opts.options, [info.id for info in chosen])
    options = dict(opts.options)
    patient = resolve_patient(opts, judge, [info.id for info in chosen])
    if patient is not None:
        options["patient"] = patient["model"]
    options.setdefault("model", model)  # sub-tasks that compare sources need the model's label
    if endpoint is not None:
        options.setdefault("endpoint", endpoint["url"])
    limit = opts.limit
    if model == BUNDLED_MODEL and suite == "starter":
        # The offline demo: minutes, not hours (benchmarks/demo.py times it). Each trim is announced.
        demo = {"max_tokens_cap": DEMO_REPLY_CAP, "robustness_grid": "quick", "fairness_contexts": 1,
                "fairness_values": DEMO_FAIRNESS_VALUES, "fairness_escalation_items": 0, "awareness_samples": 1,
                "reasks": 0}
        if judge.model == BUNDLED_MODEL:
            demo["judge_text_chars"] = DEMO_JUDGE_TEXT_CHARS
        for key, value in demo.items():
            options.setdefault(key, value)
        if limit is None:
            limit = DEMO_LIMIT
        _log(f"offline demo: at most {limit} items per sub-task; robustness_grid={options['robustness_grid']} "
             f"(cascade at 2 intensities); fairness_contexts={options['fairness_contexts']} x "
             f"fairness_values={options['fairness_values']} per attribute (neutral + the first values listed), "
             f"fairness_escalation_items={options['fairness_escalation_items']}; "
             f"awareness_samples={options['awareness_samples']}; reasks={options['reasks']} (an unparseable "
             "reply counts as invalid)"
             + (f"; judge free text <= {options['judge_text_chars']} characters" if "judge_text_chars" in options
                else "")
             + " (override with --limit / -O key=value)")
    if model == BUNDLED_MODEL:
        # A 135M-parameter model on two CPU cores: keep replies short, and say so.
        options.setdefault("max_tokens_cap", DEMO_MAX_TOKENS)
    if "max_tokens_cap" in options:
        _log(f"replies capped at {options['max_tokens_cap']} tokens (-O max_tokens_cap=N to change)")
    if opts.more_judges and judge.model:
        members = [judge.model, *(str(j) for j in opts.more_judges)]
        if len(set(members)) != len(members):
            raise TrustmhError(f"a judge is listed twice in the ensemble: {', '.join(members)}")
        options["judges"] = members
    ctx = RunContext(mode=opts.mode, seed=opts.seed, suite=suite, limit=limit, judge=judge,
                     options=options, n_boot=opts.n_boot, timeout=opts.timeout, max_retries=opts.max_retries,
                     cache=opts.cache)
    _log(f"model={model} suite={suite} mode={opts.mode} seed={opts.seed} "
         f"judge={judge.model or 'none'}{'' if judge.validated or not judge.model else ' (unvalidated)'}")
    plan = RunPlan(opts=opts, model=model, suite=suite, judge=judge, ctx=ctx,
                   chosen_ids=[info.id for info in chosen], patient=patient)
    if patient is not None:
        _log(f"simulated patient: {patient['model']} ({patient['source']})")
        for warning in family_warnings(patient_names(patient["model"]), ctx.judges, model):
            _log(f"warning: {warning}")
    reset_resolved()
    queue = list(plan.chosen_ids)
    while queue:
        sid = queue.pop(0)
        if sid in plan.subtasks or sid in plan.results:
            continue
        if not is_implemented(sid):
            plan.results[sid] = SubtaskResult.not_computed("not implemented yet", "higher")
            continue
        subtask = get_subtask(sid)
        direction = subtask.direction(opts.mode)
        reason = subtask.not_computed_reason(ctx)
        if reason is not None:
            plan.results[sid] = SubtaskResult.not_computed(reason, direction)
            _log(f"{sid}: not computed ({reason})")
            continue
        if subtask.derived_from is not None:
            plan.derived[sid] = subtask
            if subtask.derived_from not in plan.chosen_ids:
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


    opts, model = plan.opts, plan.model
    if not plan.tasks:
        return []
    # attempt_timeout is what abandons a hung request; timeout bounds the whole retry loop.
    kwargs: dict[str, Any] = {"max_retries": opts.max_retries, "attempt_timeout": opts.timeout,
                              "timeout": opts.timeout * (opts.max_retries + 2),
                              # a sample whose call failed in a way the provider does not retry (a 200
                              # with half a JSON body) is run again, a bounded number of times
                              "retry_on_error": SAMPLE_RETRIES}
    if opts.max_connections is not None:
        kwargs["max_connections"] = opts.max_connections
    elif model.startswith("gguf/"):

        # bundled model: one call per single-slot llama.cpp server (Inspect ignores the provider's own default
        # and would queue 20 requests in the front, where they would time out)
        kwargs["max_connections"] = default_parallel()
    grader = opts.judge if (opts.judge is not None and not opts.no_judge) else plan.judge.model
    roles: dict[str, Any] = {}
    if plan.judge.model:
        roles["grader"] = grader
        for index, member in enumerate(opts.more_judges, start=1):
            roles[judge_role(index)] = member
    if plan.patient is not None:
        # the patient's own model object where one was given (tests), else the judge's, else its name
        if opts.patient is not None:
            for index, member in enumerate(patient_names(opts.patient)):
                roles[patient_role(index)] = member
        elif plan.judge.model and plan.patient["model"] == plan.judge.model:
            roles["patient"] = grader
        else:
            roles["patient"] = plan.patient["model"]
    if opts.max_tasks:
        max_tasks = opts.max_tasks
    elif model.startswith("gguf/"):

        max_tasks = default_parallel()  # a sub-task's last sample need not leave a server idle
    else:
        max_tasks = DEFAULT_MAX_TASKS
    display = opts.display or (None if sys.stderr.isatty() else "plain")
    mode = batch_mode(plan, out)
    with response_cache_dir(out), cache_urls_moved(opts.cache_moved), provider_discounts(mode, opts.prompt_cache):
        # An eval set, so that running the same command again continues the run: finished sub-tasks
        # are skipped and an interrupted one reuses its finished samples (Inspect's own resume).
        _, logs = eval_set(
            plan.tasks,
            log_dir=str(out / "logs"),
            retry_attempts=0,  # re-running the command is the retry; errors are reported, not looped
            retry_immediate=False,
            model=opts.model or model,
            # the endpoint file as a model arg: Inspect keeps one provider per (model, args), so a second
            # run in one process with another file never reuses the first one's product
            model_args={"endpoint": os.environ[ENDPOINT_ENV]} if model.startswith("http/") else {},
            model_roles=roles or None,
            max_tasks=max_tasks,
            # progress must stay visible when output goes to a file or a CI log, not only on a terminal
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            **log_settings(opts, display),
            **kwargs,
        )
    return list(logs)


def batch_mode(plan: RunPlan, out: Path | Url) -> BatchMode | None:
    """The run's batch mode (`--batch`), its journal in the run directory, and which models run live."""
    opts = plan.opts
    if opts.batch is None:
        return None
    models = [plan.model, *plan.ctx.judges, *patient_names((plan.patient or {}).get("model") or [])]
    live = live_providers([str(m) for m in models])
    if live:
        _log(f"--batch: {', '.join(live)} ha{'s' if len(live) == 1 else 've'} no batch API: called live")
    conversations = [sid for sid, s in plan.subtasks.items() if isinstance(s, ConversationSubtask)]
    if conversations and not opts.batch_conversations:
        _log(f"--batch: the turns of {', '.join(conversations)} stay live (--batch-conversations batches them: "
             "hours per turn); their judges are batched")
    if isinstance(out, Url):
        _log("--batch with a run directory at a URL: no batch journal is kept, so a run killed while batches are "
             "in flight submits (and pays for) their requests again when started again")
    return BatchMode(size=opts.batch or None, conversations=opts.batch_conversations,
                     journal_dir=None if isinstance(out, Url) else Path(out),
                     tick=env_seconds("TRUSTMH_BATCH_TICK"), send_delay=env_seconds("TRUSTMH_BATCH_SEND_DELAY"))


def log_settings(opts: RunOptions, display: str | None) -> dict[str, Any]:
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
    settings: dict[str, Any] = {"log_realtime": opts.live_log,
                                "log_buffer": opts.log_buffer or DEFAULT_LOG_BUFFER}
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
    extra = {**(extra or {}), "usage": usage_rows(records, plan.opts.prices, planned.get("subtasks"))}
    if planned:
        extra["plan"] = {"totals": planned["totals"], "wall_seconds": planned["wall_seconds"],
                         "assumptions": planned["assumptions"],
                         **({"batch": planned["batch"]} if "batch" in planned else {})}
    run_results = RunResults(model=plan.model, ctx=ctx, subtasks=results, records=records,
                             model_reported=model_reported, errors=errors,
                             extra={"generation": plan.generation,
                                    **({"patient": plan.patient} if plan.patient else {}), **(extra or {})})
    data = write_run(run_results, out, report=functools.partial(run_report_html, certs_dir=plan.opts.certificates))
    if "mentalbench/generation" in records:

        written = export_long_table(records["mentalbench/generation"], out, model_label=plan.model)
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


def plan_settings(opts: RunOptions, **more: Any) -> Any:
    expected = dict(EXPECTED_TOKENS)
    if opts.expect_reply_tokens:
        expected["model"] = int(opts.expect_reply_tokens)
    settings = PlanSettings(prices=dict(opts.prices), expected=expected, **more)
    if opts.batch is not None:
        settings.batch = BatchMode(size=opts.batch or None, conversations=opts.batch_conversations)
    if opts.latency:
        settings.latency = float(opts.latency)
    return settings


def budget_needs_prices(opts: RunOptions) -> None:
    """--budget without a price file cannot be counted: said before the plan is built."""
    if opts.budget is not None and not opts.prices:
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


def check_budget_before(plan: RunPlan, opts: RunOptions) -> None:
    """Refuse to start a run whose planned upper cost is over --budget (or cannot be bounded), unless --force."""
    if opts.budget is None:
        return
    assert plan.planned is not None
    why = over_budget(plan.planned, opts.budget)
    if why is None:
        return
    if opts.force:
        _log(f"{why}; starting anyway (--force); the budget still stops the run")
        return
    raise TrustmhError(f"{why} (see `trustmh plan`; --force starts anyway and stops at the budget)")


def run(opts: RunOptions) -> tuple[dict[str, Any], int]:
    """Run the evaluation; returns (results.json content, exit code). One process at a time per run
    directory (`rundir.locked`); with --overwrite the previous run is kept aside until this one has written
    its results, and put back if this one fails first."""
    budget_needs_prices(opts)
    out = run_path(opts.out)
    with rundir.locked(out):
        try:
            data, code = _run(opts, out)
        except BaseException:
            if opts.overwrite and rundir.restore_aside(out):
                _log(f"the previous run in {out} is kept (this one did not finish)")
            raise
        rundir.drop_aside(out)
        return data, code


def _run(opts: RunOptions, out: Path | Url) -> tuple[dict[str, Any], int]:
    plan = plan_run(opts)
    plan.planned = estimate(plan, plan_settings(opts))
    check_budget_before(plan, opts)
    started = time.time()
    manifest = run_manifest(plan.model, plan.suite, plan.ctx, plan.chosen_ids, opts)
    if opts.shard is not None:
        manifest["shard"] = list(opts.shard)
    # the content of every data file the plan read: a continued run whose inputs changed is refused
    manifest["datasets"] = resolved_files()
    continued = rundir.prepare(out, manifest, overwrite=opts.overwrite)
    if continued:
        _log(f"continuing the run in {out}: finished sub-tasks and samples are reused, cached calls are "
             "not paid again")
        reopened = rundir.reopen_errored_logs(out / "logs")
        if reopened:
            _log(f"{len(reopened)} sub-task(s) had errored samples: those samples are asked again, the "
                 "finished ones are kept")
    extra: dict[str, Any] = {}
    if opts.shard is not None:
        shard_tasks(plan, opts.shard)
        extra = {"shard": list(opts.shard),
                 "notice": f"shard {opts.shard[0]}/{opts.shard[1]}: a slice of the items, not a result; combine "
                           "all shards with `trustmh merge`"}
    write_text_atomic(out / "plan.json", to_json(plan.planned))
    spent_before = _spent(out)
    if opts.budget is not None:
        usage.METER = usage.Meter(budget=opts.budget, prices=dict(opts.prices), spent=spent_before)
        if usage.METER.reached:
            _log(f"{spent_before:.4f} already spent of the budget {opts.budget:g}: no sample will start")
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
            extra["budget"] = {"amount": opts.budget, "spent": meter.spent, "stopped": True,
                               "unfinished_samples": unfinished,
                               "notice": f"stopped at the budget: {unfinished} sample(s) not run; the same "
                                         "command with a higher --budget continues without paying again for "
                                         "anything finished"}
        else:
            extra["budget"] = {"amount": opts.budget, "spent": meter.spent, "stopped": False}
    data, code = finalize(plan, records, model_reported, out, started, extra)
    if stopped:
        _log(f"budget reached ({meter.spent:.4f} of {opts.budget:g}): stopped with {extra['budget']['unfinished_samples']} "
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
    model_fam = model_family(str(ctx.options.get("model") or ""))
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


def options_from_manifest(manifest: dict[str, Any], out: Path | Url) -> RunOptions:
    """The RunOptions that reproduce a run from its manifest (`run.json`), for merging its shards."""
    judges = list(manifest.get("judges") or [])
    options = {k: v for k, v in (manifest.get("options") or {}).items() if k not in ("judges",)}
    return RunOptions(model=manifest["model"], suite=manifest["suite"], subtasks=list(manifest["subtasks"]),
                      limit=manifest.get("limit"), judge=judges[0] if judges else None,
                      more_judges=judges[1:], no_judge=not judges,
                      judge_validated=bool(manifest.get("judge_validated")), mode=manifest["mode"],
                      patient=options.pop("patient", None),
                      seed=int(manifest["seed"]), out=out, n_boot=int(manifest["n_boot"]), options=options)


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
    plan = plan_run(options_from_manifest(base, out))
    changed = rundir.changed_files(base.get("datasets") or {}, resolved_files()) if "datasets" in base else []
    if changed:
        raise TrustmhError(f"the shards were computed from other data than is here now: {'; '.join(changed)}")
    plan.planned = estimate(plan, plan_settings(plan.opts))
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
