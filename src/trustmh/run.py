"""`trustmh run`: build the Inspect tasks, evaluate, read the logs back, aggregate, write the report."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh import rundir
from trustmh.catalogue import get_subtask, is_implemented, select
from trustmh.core import (
    JudgeInfo,
    Mode,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
)
from trustmh.data.registry import reset_resolved
from trustmh.options import check_options
from trustmh.results import RunResults, write_run
from trustmh.secrets import redact, scrub_run_dir, secret_values

BUNDLED_MODEL = "gguf/smollm2"
DEMO_LIMIT = 4
DEMO_MAX_TOKENS = 192
SAMPLE_RETRIES = 3
DEFAULT_MAX_TASKS = 4


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
    mode: Mode = "default"
    seed: int = 0
    out: Path = Path("trustmh-out")
    max_retries: int = 3
    timeout: int = 120
    max_connections: int | None = None
    display: str | None = None
    n_boot: int = 2000
    options: dict[str, Any] = field(default_factory=dict)
    cache: bool = True
    overwrite: bool = False  # replace a run of another configuration in `out` instead of refusing
    # Sub-tasks run at once within the process (Inspect's max_tasks); None: 4, or 1 for the bundled model.
    max_tasks: int | None = None
    # Further ensemble members after `judge` (model strings or Inspect `Model` objects).
    more_judges: list[Any] = field(default_factory=list)


def model_label(model: Any) -> str:
    return model if isinstance(model, str) else str(model)


def resolve_defaults(opts: RunOptions) -> tuple[str, str, JudgeInfo]:
    """The embedded default: no --model means the bundled model, the starter suite and the bundled model
    as an unvalidated demo judge."""
    model = model_label(opts.model or BUNDLED_MODEL)
    bundled = model == BUNDLED_MODEL
    suite = opts.suite or ("starter" if bundled else "trustmh")
    if opts.no_judge:
        judge = JudgeInfo(model=None, validated=False, seed=opts.seed)
    elif opts.judge:
        label = model_label(opts.judge)
        judge = JudgeInfo(model=label, validated=opts.judge_validated and label != BUNDLED_MODEL,
                          seed=opts.seed)
    elif bundled:
        judge = JudgeInfo(model=BUNDLED_MODEL, validated=False, seed=opts.seed)
    else:
        judge = JudgeInfo(model=None, validated=False, seed=opts.seed)
    return model, suite, judge


def run_manifest(model: str, suite: str, ctx: RunContext, subtask_ids: list[str], opts: RunOptions
                 ) -> dict[str, Any]:
    """Everything that changes what a run computes, with the versions that compute it (`run.json`)."""
    import inspect_ai

    import trustmh

    return json.loads(json.dumps({
        "trustmh_version": trustmh.__version__, "inspect_version": inspect_ai.__version__,
        "model": model, "suite": suite, "mode": ctx.mode, "seed": ctx.seed, "limit": ctx.limit,
        "judges": ctx.judges, "judge_validated": ctx.judge.validated, "subtasks": subtask_ids,
        "options": ctx.options, "n_boot": ctx.n_boot, "cache": ctx.cache,
    }, default=str))


def check_model_name(name: Any, what: str) -> None:
    """A clear error for a model string whose provider Inspect does not know (instead of Inspect's
    exception group deep inside the eval)."""
    if not isinstance(name, str):
        return  # an Inspect Model object (tests, library use)
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    import trustmh.models.gguf  # noqa: F401  (registers the bundled provider)

    provider = name.split("/", 1)[0] if "/" in name else None
    if provider is None:
        raise TrustmhError(f"{what} {name!r}: expected PROVIDER/MODEL, e.g. openai/gpt-4o-mini or gguf/smollm2")
    found = registry_find(lambda info: info.type == "modelapi" and registry_unqualified_name(info) == provider)
    if not found:
        raise TrustmhError(f"{what} {name!r}: unknown model provider {provider!r} (Inspect providers include "
                           "openai, anthropic, google, vllm, ollama, hf, openai-api/<service>, and gguf for the "
                           "bundled model)")


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def run(opts: RunOptions) -> tuple[dict[str, Any], int]:
    """Run the evaluation; returns (results.json content, exit code)."""
    from inspect_ai import eval_set

    from trustmh.tasks import build_task, capped, judge_role

    model, suite, judge = resolve_defaults(opts)
    check_model_name(opts.model or model, "--model")
    if judge.model:
        for j in [opts.judge or judge.model, *opts.more_judges]:
            check_model_name(j, "--judge")
    chosen = select(opts.pillars, opts.subtasks, opts.mode, suite)
    if not chosen:
        raise TrustmhError("no sub-task selected (check --pillars/--subtasks and --mode)")
    check_options(opts.options, [info.id for info in chosen])
    options = dict(opts.options)
    options.setdefault("model", model)  # sub-tasks that compare sources need the model's label
    limit = opts.limit
    if model == BUNDLED_MODEL:
        # A 135M-parameter model on two CPU cores: keep replies short, and say so.
        options.setdefault("max_tokens_cap", DEMO_MAX_TOKENS)
    if model == BUNDLED_MODEL and suite == "starter":
        # The offline demo: minutes, not hours.
        options.setdefault("robustness_grid", "quick")
        options.setdefault("fairness_contexts", 1)
        options.setdefault("awareness_samples", 2)
        if limit is None:
            limit = DEMO_LIMIT
        _log(f"offline demo: at most {limit} items per sub-task, smaller robustness, fairness and privacy "
             "grids (override with --limit / -O)")
    if "max_tokens_cap" in options:
        _log(f"replies capped at {options['max_tokens_cap']} tokens (-O max_tokens_cap=N to change)")
    if opts.more_judges and judge.model:
        members = [judge.model, *(model_label(j) for j in opts.more_judges)]
        if len(set(members)) != len(members):
            raise TrustmhError(f"a judge is listed twice in the ensemble: {', '.join(members)}")
        options["judges"] = members
    ctx = RunContext(mode=opts.mode, seed=opts.seed, suite=suite, limit=limit, judge=judge,
                     options=options, n_boot=opts.n_boot, timeout=opts.timeout, max_retries=opts.max_retries,
                     cache=opts.cache)
    _log(f"model={model} suite={suite} mode={opts.mode} seed={opts.seed} "
         f"judge={judge.model or 'none'}{'' if judge.validated or not judge.model else ' (unvalidated)'}")

    out = Path(opts.out)
    started = time.time()
    continued = rundir.prepare(out, run_manifest(model, suite, ctx, [i.id for i in chosen], opts),
                               overwrite=opts.overwrite)
    if continued:
        _log(f"continuing the run in {out}: finished sub-tasks and samples are reused, cached calls are "
             "not paid again")
        rundir.forget_errored_logs(out / "logs")

    reset_resolved()
    results: dict[str, SubtaskResult] = {}
    records: dict[str, list[Record]] = {}
    generation: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    tasks = []
    item_order: dict[str, dict[str, int]] = {}
    subtasks: dict[str, Subtask] = {}
    chosen_ids = [info.id for info in chosen]
    derived: dict[str, Subtask] = {}  # sub-tasks aggregated from another's records (no task of their own)
    hidden: set[str] = set()  # sources run only for a derived sub-task: their own result is not published
    queue = list(chosen_ids)
    while queue:
        sid = queue.pop(0)
        if sid in subtasks or sid in results:
            continue
        if not is_implemented(sid):
            results[sid] = SubtaskResult.not_computed("not implemented yet", "higher")
            continue
        subtask = get_subtask(sid)
        direction = subtask.direction(opts.mode)
        reason = subtask.not_computed_reason(ctx)
        if reason is not None:
            results[sid] = SubtaskResult.not_computed(reason, direction)
            _log(f"{sid}: not computed ({reason})")
            continue
        if subtask.derived_from is not None:
            derived[sid] = subtask
            if subtask.derived_from not in chosen_ids:
                hidden.add(subtask.derived_from)
                queue.append(subtask.derived_from)
            continue
        try:
            task = build_task(sid, ctx)
            tasks.append(task)
            item_order[sid] = {str(sample.id): i for i, sample in enumerate(task.dataset)}
            gen = subtask.generation(ctx)
            generation[sid] = {"temperature": gen.temperature, "top_p": gen.top_p, "samples": gen.epochs,
                               "max_tokens": capped(gen.max_tokens, ctx), "seed": ctx.seed}
        except TrustmhError as exc:
            errors.append(f"{sid}: {exc}")
            results[sid] = SubtaskResult.not_computed(f"error: {exc}", direction)
            _log(f"{sid}: ERROR {exc}")
            continue
        subtasks[sid] = subtask

    if not tasks and errors and not derived:
        # nothing could be evaluated: bad input, reported before any model call, and no result written
        raise TrustmhError("; ".join(errors))
    model_reported = None
    if tasks:
        # attempt_timeout is what abandons a hung request; timeout bounds the whole retry loop.
        kwargs: dict[str, Any] = {"max_retries": opts.max_retries, "attempt_timeout": opts.timeout,
                                  "timeout": opts.timeout * (opts.max_retries + 2),
                                  # a sample whose call failed in a way the provider does not retry (a 200
                                  # with half a JSON body) is run again, a bounded number of times
                                  "retry_on_error": SAMPLE_RETRIES}
        if opts.max_connections is not None:
            kwargs["max_connections"] = opts.max_connections
        elif model.startswith("gguf/"):
            kwargs["max_connections"] = 1  # in-process model: one call at a time (Inspect ignores the
            # provider's own default and would queue 20 requests behind its lock)
        grader = opts.judge if (opts.judge is not None and not opts.no_judge) else judge.model
        roles: dict[str, Any] = {}
        if judge.model:
            roles["grader"] = grader
            for index, member in enumerate(opts.more_judges, start=1):
                roles[judge_role(index)] = member
        max_tasks = opts.max_tasks or (1 if model.startswith("gguf/") else DEFAULT_MAX_TASKS)
        with response_cache_dir(out):
            # An eval set, so that running the same command again continues the run: finished sub-tasks
            # are skipped and an interrupted one reuses its finished samples (Inspect's own resume).
            _, logs = eval_set(
                tasks,
                log_dir=str(out / "logs"),
                retry_attempts=0,  # re-running the command is the retry; errors are reported, not looped
                retry_immediate=False,
                model=opts.model or model,
                model_roles=roles or None,
                max_tasks=max_tasks,
                # progress must stay visible when output goes to a file or a CI log, not only on a terminal
                display=opts.display or (None if sys.stderr.isatty() else "plain"),  # type: ignore[arg-type]
                fail_on_error=False,
                **kwargs,
            )
        from trustmh.tasks.logs import records_from_log

        for log in logs:
            sid = (log.eval.metadata or {}).get("trustmh_subtask")
            if sid is None:
                continue
            subtask = subtasks[sid]
            recs, n_errors, reported = records_from_log(log)
            # canonical order (dataset order, then epoch), so results never depend on completion order,
            # on how a resumed run was interrupted, or on how samples were spread over processes
            order = item_order[sid]
            recs.sort(key=lambda r: (order.get(r.item_id, len(order)), r.epoch))
            model_reported = model_reported or reported
            if log.status != "success":
                msg = log.error.message if log.error else log.status
                errors.append(f"{sid}: task {log.status}: {msg}")
            if n_errors:
                errors.append(f"{sid}: {n_errors} sample(s) errored")
            records[sid] = recs
            results[sid] = aggregate(subtask, recs, ctx, n_errors)
    for sid, subtask in derived.items():
        source = subtask.derived_from or ""
        if source in records:
            errs = results[source].metrics.get("n_errors", 0)
            results[sid] = aggregate(subtask, records[source], ctx, errs)
            results[sid].notes.append(f"aggregated from the replies and judge calls of {source}")
        elif source in results:
            results[sid] = SubtaskResult.not_computed(f"{source} was not computed ({results[source].reason})",
                                                      subtask.direction(opts.mode))
    for sid in hidden:
        results.pop(sid, None)  # run for a derived sub-task only; its records stay in items.jsonl
    run_results = RunResults(model=model, ctx=ctx, subtasks=results, records=records,
                             model_reported=model_reported, errors=errors, extra={"generation": generation})
    data = write_run(run_results, out)
    if "mentalbench/generation" in records:
        from trustmh.mentalbench.export import export_long_table

        written = export_long_table(records["mentalbench/generation"], out, model_label=model)
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


@contextmanager
def response_cache_dir(out: Path) -> Iterator[None]:
    """Where Inspect keeps its response cache during the eval: INSPECT_CACHE_DIR if the user set it, else
    `$TRUSTMH_CACHE_DIR/responses` (shared by runs), else `OUT/cache` (this run directory). Restored after,
    so one process running several evaluations never shares a cache by accident."""
    before = os.environ.get("INSPECT_CACHE_DIR")
    if before:
        yield
        return
    shared = os.environ.get("TRUSTMH_CACHE_DIR")
    os.environ["INSPECT_CACHE_DIR"] = str(Path(shared) / "responses" if shared else Path(out).resolve() / "cache")
    try:
        yield
    finally:
        os.environ.pop("INSPECT_CACHE_DIR", None)


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
        judge_bookkeeping(result, recs, ctx)
    if n_errors:
        result.metrics["n_errors"] = n_errors
        result.notes.append(f"{n_errors} sample(s) failed with an error and are not scored")
    return result


def judge_bookkeeping(result: SubtaskResult, recs: list[Record], ctx: RunContext) -> None:
    """Which judge(s) produced the numbers, whether they are validated, the ensemble's agreement and
    same-family flags, and how many judge replies were recovered from a truncated reply."""
    from trustmh.mentalbench import model_family
    from trustmh.scoring.ensemble import MEMBERS_KEY, ensemble_settings, member_agreement
    from trustmh.scoring.parse import judge_was_recovered

    members = ctx.judges
    if result.judge is None:
        result.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
        if not ctx.judge.validated:
            result.notes.append(f"judge {', '.join(members)} is not validated for this task: "
                                "judge-based numbers are a demonstration only")
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
