"""The certification machinery: judge a reference set through Inspect exactly as a run asks the judge, then
measure the judge against the humans and write a certificate (docs/judges.md#certificates).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.dataset import MemoryDataset
from inspect_ai.model import get_model

from trustmh.catalogue import get_subtask
from trustmh.core import Item, JudgeRequest, Record, RunContext, Subtask, TrustmhError, run_context
from trustmh.judges.certificates import (
    fingerprint_settings,
    make_certificate,
    parse_thresholds,
    verdict,
    worst_attribute,
    write_certificate,
)
from trustmh.judges.ensemble import ensemble_option
from trustmh.judges.reask import ask_until_valid
from trustmh.judges.reference_quality import KIND_OF, certify_reference
from trustmh.models import BUNDLED_MODEL
from trustmh.models.gguf import default_parallel
from trustmh.run.calls import bounded_config, cache_policy, judge_role
from trustmh.run.collect import records_from_log
from trustmh.run.config import DEMO_JUDGE_TEXT_CHARS, check_model_name
from trustmh.run.inspect_eval import response_cache_dir
from trustmh.run.tasks import context_to_dict, generate_with_reask, item_to_sample, trustmh_scorer
from trustmh.stats.judge_agreement import judge_agreement


@dataclass
class Reference:
    """A human-labelled reference set, ready to be judged."""

    name: str
    source: str  # "public" | "run" | "user"
    sha256: str
    subtask: str
    label_type: str
    items: list[Item]
    humans: dict[str, dict[str, Any]]  # item id -> rater -> label (None = not labelled)
    judge_value: Callable[[Record], Any]  # a judged record -> the judge's label (None = unreadable)
    scale: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)
    # A judge scoring several attributes at once (MentalBench): each rater's label and the judge's value are
    # then dicts attribute -> label, and the certificate carries figures per attribute.
    attributes: tuple[str, ...] = ()
    clusters: dict[str, str] | None = None  # item id -> cluster for the bootstrap (None: items)
    counts: dict[str, Any] = field(default_factory=dict)  # what the reader left out, and why
    judge_key: str | None = None  # the score field `judge_value` reads (a CSV's --judge-key), checked once judged
    # Asks and scores the judge when the sub-task's own scorer cannot take a stored item (a stored
    # conversation): it sends the very requests a run sends (None: the sub-task itself).
    judging: Subtask | None = None
    # Set ("labels" or "ratings"): the reference-quality rule decides the verdict (judges/reference_quality.py):
    # the humans' own agreement must clear its floor and the judge in a rater's place must do as well. The
    # fixed thresholds then apply only when given (--threshold).
    quality_kind: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # reference-specific fields for the certificate


def consensus(labels: Sequence[Any], label_type: str) -> Any:
    """The humans' reference label of one item: the mean (ordinal), the majority (binary: a tie counts as
    harmful, the cautious reading; categorical: a tie is no consensus, None)."""
    got = [v for v in labels if v is not None]
    if not got:
        return None
    if label_type == "ordinal":
        return sum(float(v) for v in got) / len(got)
    counts: dict[Any, int] = {}
    for v in got:
        counts[v] = counts.get(v, 0) + 1
    top = max(counts.values())
    winners = [v for v, c in counts.items() if c == top]
    if len(winners) == 1:
        return winners[0]
    return 1 if label_type == "binary" else None


def agreement_figures(ref_type: str, humans: Mapping[str, Mapping[str, Any]], judged: Mapping[str, Any], *,
                      seed: int, n_boot: int, scale: tuple[float, float] | None,
                      clusters: Mapping[str, str] | None = None) -> tuple[dict[str, Any], dict]:
    """(judge vs the humans' consensus, extra: per-rater and human-vs-human figures). With `clusters`
    (item id -> cluster), the bootstrap resamples clusters (the judge-vs-consensus figures)."""
    ids = [i for i in humans if i in judged and consensus(list(humans[i].values()), ref_type) is not None]
    h = [consensus(list(humans[i].values()), ref_type) for i in ids]
    j = [judged[i] for i in ids]
    figures = judge_agreement(ref_type, h, j, seed=seed, n_boot=n_boot, scale=scale,
                              clusters=None if clusters is None else [clusters[i] for i in ids])
    raters = sorted({r for v in humans.values() for r in v})
    extra: dict[str, Any] = {"n_unlabelled": len([i for i in humans if i in judged]) - len(ids),
                             "raters": raters, "consensus": {"ordinal": "mean of the raters",
                                                             "binary": "majority, a tie counts as harmful",
                                                             "categorical": "majority, ties left out"}[ref_type]}
    per_rater = {}
    for r in raters:
        rid = [i for i in ids if humans[i].get(r) is not None]
        per_rater[r] = judge_agreement(ref_type, [humans[i][r] for i in rid], [judged[i] for i in rid],
                                       seed=seed, n_boot=n_boot, scale=scale)
    extra["per_rater"] = per_rater
    if len(raters) >= 2:
        a, b = raters[0], raters[1]
        both = [i for i in humans if humans[i].get(a) is not None and humans[i].get(b) is not None]
        extra["human_vs_human"] = {"raters": [a, b], **judge_agreement(
            ref_type, [humans[i][a] for i in both], [humans[i][b] for i in both], seed=seed, n_boot=n_boot,
            scale=scale)}
    return figures, extra


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


def attribute_figures(ref: Reference, judged: Mapping[str, Any], thresholds: Mapping[str, Mapping[str, float]],
                      *, seed: int, n_boot: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Figures of a judge scoring several attributes (docs/judges.md#mentalalign): per attribute, the judge
    against the raters' consensus on the items that attribute is labelled on (an unreadable judge score
    counts at its worst); the headline `agreement` holds each metric's weakest attribute
    (`certificates.worst_attribute`), so the certificate passes only when every attribute does."""
    per_attribute: dict[str, Any] = {}
    for attr in ref.attributes:
        humans = {i: {r: (v or {}).get(attr) for r, v in h.items()} for i, h in ref.humans.items()}
        values = {i: (v or {}).get(attr) for i, v in judged.items()}
        figs, _ = agreement_figures(ref.label_type, humans, values, seed=seed, n_boot=n_boot, scale=ref.scale,
                                    clusters=ref.clusters)
        per_attribute[attr] = {**figs, "verdict": verdict(figs["agreement"], thresholds)}
    compared = [i for i in ref.humans if i in judged
                and any(v is not None for h in ref.humans[i].values() for v in (h or {}).values())]
    n_invalid = sum(1 for i in compared if any((judged[i] or {}).get(a) is None for a in ref.attributes))
    figures = {"n": len(compared), "n_judge_invalid": n_invalid, "agreement": worst_attribute(per_attribute)}
    return figures, {"attributes": list(ref.attributes), "per_attribute": per_attribute,
                     "raters": sorted({r for h in ref.humans.values() for r in h}),
                     "consensus": "mean of the raters, per attribute",
                     "headline": "per metric, the attribute with the weakest protective bound"}


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
