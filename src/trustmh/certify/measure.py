"""`trustmh judge certify`'s machinery: judge a reference set through Inspect exactly as a run asks the judge,
then measure the judge against the humans and write a certificate (docs/judges.md#certificates).

The reference items are Inspect samples that carry the human-labelled reply (`skip_generation`, the reply in
`stored_response` or, for the crisis study, in the item's `answer`); the sub-task's own `trustmh_scorer` asks
the judge (same prompt, schema, ensemble rule, temperature 0, the run's seed, timeouts and retries) and
scores its reply. The eval runs as an Inspect eval set in `<work>/logs` with the response cache, so running
the same command again resumes and asks no judge call twice.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import get_model

from trustmh.catalogue import get_subtask
from trustmh.core import JudgeRequest, Record, RunContext, TrustmhError, run_context
from trustmh.judges.agreement import agreement_figures, attribute_figures
from trustmh.judges.certificates import (
    fingerprint_settings,
    make_certificate,
    parse_thresholds,
    write_certificate,
)
from trustmh.judges.ensemble import ensemble_option
from trustmh.judges.reask import ask_until_valid
from trustmh.judges.reference_quality import KIND_OF, certify_reference
from trustmh.judges.references import Reference
from trustmh.models import BUNDLED_MODEL
from trustmh.models.gguf import default_parallel
from trustmh.run.calls import bounded_config, cache_policy, judge_role
from trustmh.run.collect import records_from_log
from trustmh.run.config import DEMO_JUDGE_TEXT_CHARS, check_model_name
from trustmh.run.inspect_eval import response_cache_dir
from trustmh.run.tasks import context_to_dict, generate_with_reask, item_to_sample, trustmh_scorer


def certify_context(judges: Sequence[str], *, seed: int, options: Mapping[str, Any] | None = None,
                    limit: int | None = None, timeout: int = 120, max_retries: int = 3, cache: bool = True
                    ) -> RunContext:
    """The RunContext a run would give these judges (the bundled judge gets the run's free-text cap)."""
    opts = dict(options or {})
    if judges[0] == BUNDLED_MODEL:
        opts.setdefault("judge_text_chars", DEMO_JUDGE_TEXT_CHARS)
    return run_context(mode="default", seed=seed, suite="trustmh", limit=limit, judges=judges, options=opts,
                       timeout=timeout, max_retries=max_retries, cache=cache, ensemble=ensemble_option(opts))


def judge_reference(ref: Reference, ctx: RunContext, work: Path, judge_models: Sequence[Any] | None = None,
                    display: str = "none") -> list[Record]:
    """Judge the reference items through Inspect (resumable eval set in `work/logs`, response cache)."""
    subtask = ref.judging or get_subtask(ref.subtask)
    task = Task(name=f"certify_{ref.subtask.replace('/', '_')}",
                dataset=MemoryDataset([item_to_sample(i) for i in ref.items], name=ref.name),
                solver=generate_with_reask(subtask, ctx), scorer=trustmh_scorer(subtask, ctx),
                metadata={"trustmh_subtask": ref.subtask, "trustmh_context": context_to_dict(ctx)})
    members = list(judge_models) if judge_models else ctx.judges
    roles = {judge_role(i): m for i, m in enumerate(members)}
    work.mkdir(parents=True, exist_ok=True)
    extra: dict[str, Any] = {}
    if str(ctx.judge.model or "").startswith("gguf/"):
        # bundled judge: one call per single-slot llama.cpp server, as a run does (queued calls would time out)
        extra["max_connections"] = default_parallel()
    with response_cache_dir(work):
        _, logs = eval_set([task], log_dir=str(work / "logs"), model="mockllm/model", model_roles=roles,
                           retry_attempts=0, display=display, fail_on_error=False, log_realtime=False,
                           max_retries=ctx.max_retries, attempt_timeout=ctx.timeout,
                           timeout=ctx.timeout * (ctx.max_retries + 2), **extra)
    records: list[Record] = []
    for log in logs:
        messages: list[str] = []
        recs, n_errors, _ = records_from_log(log, messages)
        if log.status != "success" or n_errors:
            raise TrustmhError(judging_failed(ref, log.status, n_errors, messages))
        records.extend(recs)
    return records


_MISSING_KEY = re.compile(r"^KeyError\('([^']+)'\)$")


def judging_failed(ref: Reference, status: str, n_errors: int, messages: Sequence[str]) -> str:
    """One line for a reference set the judge could not finish: an item field the sub-task's judge prompt
    reads and the reference lacks (a missing `meta_<key>` column of a CSV) is named, and is not worth running
    again; any other error is shown, and running the same command again resumes."""
    missing = sorted({m[1] for m in (_MISSING_KEY.match(x) for x in messages) if m})
    if missing and len(missing) == len(messages):
        columns = ", ".join(f"meta_{k}" for k in missing)
        return (f"{ref.name}: the judge of {ref.subtask} reads item field(s) {', '.join(missing)}, which the "
                f"reference does not give ({n_errors} item(s)); add column(s) {columns}")
    first = f": {messages[0]}" if messages else ""
    return (f"judging the reference set did not finish ({status}, {n_errors} error(s){first}); run the same "
            "command again to resume")


def check_judge_key(ref: Reference, records: Sequence[Record]) -> None:
    """`--judge-key` must name a field the judge's score carries: a misspelt one would read every judgement
    as unreadable (counted at its worst) and certify a number about nothing."""
    if ref.judge_key is None or not records:
        return
    if not any(ref.judge_key in rec.score for rec in records):
        fields = sorted({k for rec in records for k, v in rec.score.items()
                         if isinstance(v, bool | int | float | str) and not k.startswith("_")})
        raise TrustmhError(f"--judge-key {ref.judge_key}: no judged item's score has this field (fields: "
                           f"{', '.join(fields)}); the judge's answers are kept, run again with the right key")


def certify(ref: Reference, ctx: RunContext, *, certs_dir: Path, work: Path, thresholds: list[str] | None = None,
            judge_models: Sequence[Any] | None = None, display: str = "none") -> tuple[dict[str, Any], Path]:
    records = judge_reference(ref, ctx, work, judge_models, display)
    check_judge_key(ref, records)
    judged = {r.item_id: ref.judge_value(r) for r in records}
    limits = parse_thresholds(thresholds, ref.label_type) if thresholds or not ref.quality_kind else {}
    if ref.attributes:
        figures, extra = attribute_figures(ref, judged, limits, seed=ctx.seed, n_boot=ctx.n_boot)
    else:
        figures, extra = agreement_figures(ref.label_type, ref.humans, judged, seed=ctx.seed,
                                           n_boot=ctx.n_boot, scale=ref.scale, clusters=ref.clusters)
    if ref.counts:
        extra["reference_counts"] = ref.counts
    # reference quality before judge quality (docs/references.md#the-rule): per criterion, the humans' own
    # agreement must clear the floor and the judge, in place of one rater, must match it
    quality = certify_reference(ref.humans, judged, label_type=ref.label_type, seed=ctx.seed, n_boot=ctx.n_boot,
                                attributes=ref.attributes, clusters=ref.clusters, scale=ref.scale,
                                kind=ref.quality_kind or KIND_OF[ref.label_type])
    settings = fingerprint_settings(get_subtask(ref.subtask), ctx)
    cert = make_certificate(settings=settings, reference={"name": ref.name, "sha256": ref.sha256,
                                                          "source": ref.source, "n_items": len(ref.items)},
                            label_type=ref.label_type, figures=figures, thresholds=limits, seed=ctx.seed,
                            extra={**ref.extra, **extra, "notes": ref.notes}, reference_quality=quality)
    return cert, write_certificate(certs_dir, cert)


def bounded_judge(model: str, seed: int) -> Callable[[JudgeRequest], str]:
    """A plain `request -> text` judge on an Inspect model: temperature 0, seeded, bounded and cached like
    every judge of a run, up to three attempts (rescoring with trustmh's own judge, the SIRI-2 reference)."""
    check_model_name(model, "--judge")
    ctx = run_context(seed=seed, judges=[model])
    judge_model = get_model(model, config=bounded_config(ctx, temperature=0.0, seed=seed))

    def ask(req: JudgeRequest) -> str:
        config = bounded_config(ctx, temperature=0.0, seed=seed, max_tokens=req.max_tokens)

        async def attempt_once(attempt: int) -> str:
            return (await judge_model.generate(req.prompt, config=config, cache=cache_policy(ctx, attempt))).completion

        return asyncio.run(ask_until_valid(attempt_once, req.validate))

    return ask
