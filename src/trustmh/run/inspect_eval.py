"""The Inspect call: a plan's tasks evaluated as one Inspect eval set in `OUT/logs` (resumable), with the
run's roles, bounds, response cache and log settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from contextvars import copy_context
from pathlib import Path
from typing import Any

from trustmh.core import notice
from trustmh.data.registry import cache_dir
from trustmh.inspect_compat import cache_urls_moved, provider_discounts, quiet_inspect_warnings, safe_replies
from trustmh.models.batch import BatchMode, env_seconds, live_providers
from trustmh.models.endpoint import ENDPOINT_ENV
from trustmh.models.gguf import default_parallel
from trustmh.models.providers import provider_of
from trustmh.multiturn import ConversationSubtask
from trustmh.run.calls import JUDGE_WATCH
from trustmh.run.config import RunSpec
from trustmh.run.progress import progress_line
from trustmh.run.select import RunPlan
from trustmh.storage import Url

SAMPLE_RETRIES = 3
DEFAULT_MAX_TASKS = 4
# Finished samples written to a sub-task's .eval log per flush (Inspect's own default is 10, which rewrites
# the growing log every 10 samples). A killed run loses at most this many finished samples per running
# sub-task; they are run again from the response cache, so no call is paid twice (`--log-buffer`).
DEFAULT_LOG_BUFFER = 50


def evaluate(plan: RunPlan, out: Path | Url, log_dir: Path | Url | None = None) -> list[Any]:
    """Evaluate the plan's tasks as an Inspect eval set in `out/logs` (or `log_dir`: one eval set per
    configuration where a directory may hold several, as a rescore's does; resumable); returns the logs."""
    from inspect_ai import eval_set


    spec = plan.spec
    if not plan.tasks:
        return []
    # attempt_timeout is what abandons a hung request; timeout bounds the whole retry loop.
    kwargs: dict[str, Any] = {"max_retries": spec.execution.max_retries, "attempt_timeout": spec.execution.timeout,
                              "timeout": spec.execution.timeout * (spec.execution.max_retries + 2),
                              # a sample whose call failed in a way the provider does not retry (a 200
                              # with half a JSON body) is run again, a bounded number of times
                              "retry_on_error": SAMPLE_RETRIES}
    # a certification's only calls are its judge's (`spec.reference`: fixed replies, no model under test)
    answering = spec.model.label if spec.reference is None else str(spec.judges.info.model)
    bundled = provider_of(answering).single_slot_servers
    if spec.execution.max_connections is not None:
        kwargs["max_connections"] = spec.execution.max_connections
    elif bundled:
        # bundled model: one call per single-slot llama.cpp server (Inspect ignores the provider's own default
        # and would queue 20 requests in the front, where they would time out)
        kwargs["max_connections"] = default_parallel()
    if spec.execution.max_tasks:
        max_tasks = spec.execution.max_tasks
    elif bundled:
        max_tasks = default_parallel()  # a sub-task's last sample need not leave a server idle
    else:
        max_tasks = DEFAULT_MAX_TASKS
    display = inspect_display(spec)
    mode = batch_mode(plan, out)
    shown = progress_line(len(plan.tasks)) if display == "none" and spec.execution.display is None else nullcontext()
    with response_cache_dir(out), cache_urls_moved(spec.execution.cache_moved), safe_replies(), \
            provider_discounts(mode, spec.execution.prompt_cache), quiet_inspect_warnings(), \
            JUDGE_WATCH.watching(), shown as line:
        # An eval set, so that running the same command again continues the run: finished sub-tasks
        # are skipped and an interrupted one reuses its finished samples (Inspect's own resume). Run in a copy
        # of this context: Inspect 0.3.285 sets its active model and generate config (max_connections,
        # retries, timeout) in the caller's context and leaves them there, where every later call of the
        # process outside an eval would inherit this run's settings (a judge asked afterwards with the last
        # run's --max-connections).
        _, logs = copy_context().run(
            eval_set,
            plan.tasks,
            log_dir=str(log_dir or out / "logs"),
            retry_attempts=0,  # re-running the command is the retry; errors are reported, not looped
            retry_immediate=False,
            model=spec.model.target,
            # the endpoint file as a model arg: Inspect keeps one provider per (model, args), so a second
            # run in one process with another file never reuses the first one's product
            model_args={"endpoint": os.environ[ENDPOINT_ENV]} if provider_of(spec.model.label).endpoint_file else {},
            model_roles=dict(spec.roles) or None,
            max_tasks=max_tasks,
            # progress must stay visible when output goes to a file or a CI log, not only on a terminal
            display=display,  # type: ignore[arg-type]
            fail_on_error=False,
            **log_settings(spec, display),
            **kwargs,
        )
        if line is not None:
            line.done = sum(log.status == "success" for log in logs)
            plan.stalls.extend(line.stalls)
    return list(logs)


def inspect_display(spec: RunSpec) -> str | None:
    """Inspect's display for a run: `--display` as given; else, with `--verbose`, Inspect's default on a terminal
    and "plain" elsewhere (progress stays visible in a file or a CI log); else "none", under trustmh's own
    progress line (`run/progress.py`)."""
    if spec.execution.display:
        return spec.execution.display
    if spec.execution.verbose:
        return None if sys.stderr.isatty() else "plain"
    return "none"


def batch_mode(plan: RunPlan, out: Path | Url) -> BatchMode | None:
    """The run's batch mode (`--batch`), its journal in the run directory, and which models run live."""
    spec = plan.spec
    if spec.execution.batch is None:
        return None
    models = [*([spec.model.label] if spec.reference is None else []), *plan.ctx.judges,
              *(spec.patient.models if spec.patient else ())]
    # a label that names no provider (a rescore's published replies, `published:FILE`) makes no paid call
    live = live_providers([str(m) for m in models if "/" in str(m)])
    if live:
        notice(f"--batch: {', '.join(live)} ha{'s' if len(live) == 1 else 've'} no batch API: called live")
    conversations = [sid for sid, s in plan.subtasks.items() if isinstance(s, ConversationSubtask)]
    if conversations and not spec.execution.batch_conversations:
        notice(f"--batch: the turns of {', '.join(conversations)} stay live (--batch-conversations batches them: "
             "hours per turn); their judges are batched")
    if isinstance(out, Url):
        notice("--batch with a run directory at a URL: no batch journal is kept, so a run killed while batches are "
             "in flight submits (and pays for) their requests again when started again")
    return BatchMode(size=spec.execution.batch or None, conversations=spec.execution.batch_conversations,
                     journal_dir=None if isinstance(out, Url) else Path(out), timeout=spec.execution.batch_timeout,
                     tick=env_seconds("TRUSTMH_BATCH_TICK"), send_delay=env_seconds("TRUSTMH_BATCH_SEND_DELAY"))


def log_settings(spec: RunSpec, display: str | None) -> dict[str, Any]:
    """Inspect's logging settings for a run: what the logs are for (every sample's transcript in the final
    .eval log; resume after a kill) at a fraction of Inspect's default CPU per sample.

    * log_realtime=False: no per-event writes to Inspect's SQLite sample buffer (the largest share of
      Inspect's own per-sample cost). That buffer serves live viewing of running samples and recovery of
      finished-but-unflushed samples after a crash; trustmh recovers those from its response cache instead
      (a resumed run asks no call again). `--live-log` turns it back on.
    * log_buffer: finished samples per write of the .eval log (see DEFAULT_LOG_BUFFER); Inspect also flushes
      a sample that waited 60 s, so a slow run never holds more than a minute of samples unwritten.
    * score_display=False when nothing is displayed: Inspect would still recompute the running metric.
    """
    settings: dict[str, Any] = {"log_realtime": spec.execution.live_log,
                                "log_buffer": spec.execution.log_buffer or DEFAULT_LOG_BUFFER}
    if display == "none":
        settings["score_display"] = False
    return settings


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

