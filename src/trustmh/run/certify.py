"""`trustmh judge certify`: run a judge exactly as a run asks it on a human-labelled reference set, measure its
agreement with the humans and write a certificate (docs/judges.md#certificates).

The reference items are Inspect samples that carry the human-labelled reply (`skip_generation`, the reply in
`stored_response` or, for the crisis study, in the item's `answer`); the sub-task's own `trustmh_scorer` asks
the judge (same prompt, schema, ensemble rule, temperature 0, the run's seed, timeouts and retries) and
scores its reply. The eval runs as an Inspect eval set in `<work>/logs` with the response cache, so running
the same command again resumes and asks no judge call twice.
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.dataset import MemoryDataset

from trustmh.catalogue import get_subtask, lookup
from trustmh.core import Item, JudgeInfo, Record, RunContext, Subtask, TrustmhError
from trustmh.data import resolve
from trustmh.judges.certificates import (
    fingerprint_settings,
    make_certificate,
    parse_thresholds,
    verdict,
    worst_attribute,
    write_certificate,
)
from trustmh.judges.reference_quality import certify_reference
from trustmh.models import BUNDLED_MODEL
from trustmh.models.gguf import default_parallel
from trustmh.pillars.conversation import mindeval
from trustmh.pillars.conversation.scoring import RUBRIC_KEYS
from trustmh.pillars.crisis.data import crisis_file
from trustmh.pillars.crisis.escalation import CrisisEscalation
from trustmh.pillars.mentalbench.data import MENTALBENCH_REL
from trustmh.pillars.mentalbench.generation import FIXED_PROMPT, MentalBenchGeneration
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.reference import HUMAN_REL, TEXTS_MISSING, expert_rated_replies
from trustmh.run.calls import judge_role
from trustmh.run.execute import DEMO_JUDGE_TEXT_CHARS, response_cache_dir
from trustmh.run.logs import records_from_log
from trustmh.run.tasks import context_to_dict, generate_with_reask, item_to_sample, trustmh_scorer
from trustmh.sampling import apply_limit
from trustmh.stats.judge_agreement import LABEL_TYPES, judge_agreement

CRISIS_REFERENCE = "crisis-study"
CRISIS_SUBTASK = "crisis/crisis_escalation"
MENTALALIGN_REFERENCE = "mentalalign"
MENTALBENCH_SUBTASK = MentalBenchGeneration.id
MINDEVAL_REFERENCE = "mindeval"
MINDEVAL_SUBTASK = mindeval.SIMULATED_PATIENT
CSV_REQUIRED = ("item_id", "response")


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
    # Asks and scores the judge when the sub-task's own scorer cannot take a stored item (a stored
    # conversation): it sends the very requests a run sends (None: the sub-task itself).
    judging: Subtask | None = None


def _sha256_files(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(hashlib.sha256(Path(p).read_bytes()).hexdigest().encode())
    return h.hexdigest()


def _appropriateness(rec: Record) -> Any:
    return rec.score.get("appropriateness") if rec.score.get("judge_valid", True) else None


def crisis_reference(ctx: RunContext, path: str | None) -> Reference:
    """The crisis study's H1/H2 appropriateness scores (1-5) of stored answers, judged by the escalation judge
    (its reader: `CrisisEscalation.human_rated_items`, the same items a default-mode run judges)."""
    if path:
        ctx.options["crisis_dir"] = path
    sub = CrisisEscalation()
    items, note = sub.human_rated_items(ctx)
    if not items:
        raise TrustmhError(f"--reference {CRISIS_REFERENCE}: {note or 'no human-rated item'}")
    files = [crisis_file("h1_scores", ctx.options), crisis_file("h2_scores", ctx.options)]
    humans = {it.id: {"H1": it.metadata.get("h1"), "H2": it.metadata.get("h2")} for it in items}
    return Reference(name="crisis-study-h1h2", source="public", sha256=_sha256_files(files), subtask=sub.id,
                     label_type="ordinal", items=items, humans=humans, judge_value=_appropriateness,
                     scale=(1.0, 5.0))


def _attribute_scores(rec: Record) -> dict[str, Any]:
    scores = rec.score.get("scores") or {}
    return {a: scores.get(a) for a in ATTRIBUTES}


def mentalalign_reference(ctx: RunContext, path: str | None) -> Reference:
    """MentalAlign's expert ratings of the published MentalBench replies (7 attributes, 1-5), judged by the
    MentalBench judge (`trustmh.pillars.mentalbench.reference`). The workbooks come from
    `-O mentalalign_dir=DIR` or the data registry (TRUSTMH_DATA_DIR); the reply texts from `path`,
    `-O mentalbench_path=FILE` or the registry. `ctx.limit`: a seeded sample of that many replies, stratified
    by source."""
    ma_dir = ctx.options.get("mentalalign_dir")
    if not ma_dir:
        ma_dir = resolve("mentalalign", f"mentalalign/{HUMAN_REL.as_posix()}").parent.parent
    texts = path or ctx.options.get("mentalbench_path")
    try:
        texts_path = resolve("mentalbench", MENTALBENCH_REL, texts)
    except TrustmhError as exc:
        if texts:
            raise
        raise TrustmhError(f"--reference {MENTALALIGN_REFERENCE}: {TEXTS_MISSING} ({exc})".replace("\n", " ")) \
            from None
    rated = expert_rated_replies(ma_dir, texts_path)
    replies = apply_limit(rated.replies, ctx, lambda r: r.source, min_per_stratum=True)
    items: list[Item] = []
    humans: dict[str, dict[str, Any]] = {}
    clusters: dict[str, str] = {}
    for r in replies:
        iid = f"{r.conv_id}:{r.source}"
        items.append(Item(id=iid, prompt=FIXED_PROMPT, cluster=r.conv_id,
                          metadata={"conv_id": r.conv_id, "context": r.context, "source": r.source,
                                    "skip_generation": True, "fixed_response": r.reply}))
        humans[iid] = {"expert": dict(r.expert)}
        clusters[iid] = r.conv_id
    notes = list(rated.notes)
    if len(replies) < len(rated.replies):
        notes.append(f"--limit: a seeded sample of {len(replies)} of {len(rated.replies)} rated replies "
                     "(stratified by source)")
    return Reference(name="mentalalign-experts", source="public", sha256=_sha256_files(rated.files),
                     subtask=MENTALBENCH_SUBTASK, label_type="ordinal", items=items, humans=humans,
                     judge_value=_attribute_scores, scale=(1.0, 5.0), notes=notes, attributes=ATTRIBUTES,
                     clusters=clusters, counts={"rated_replies": len(rated.replies), "left_out": rated.skipped})


def mindeval_reference(ctx: RunContext, path: str | None) -> Reference:
    """MindEval's clinicians' ratings (four per conversation, five criteria, 1-6) of its 60 conversations,
    judged by the rubric judge of conversation/simulated_patient on each whole transcript
    (`trustmh.pillars.conversation.mindeval`: the files are read in place from `path`, a copy of the
    repository, else from the data registry). `ctx.limit`: a seeded sample, stratified by therapist model."""
    ann = mindeval.read_annotations(mindeval.locate(Path(path) if path else None, mindeval.ANNOTATIONS))
    items, humans = mindeval.reference_items(ann)
    chosen = apply_limit(items, ctx, lambda it: str(it.metadata.get("model")), min_per_stratum=True)
    ids = {it.id for it in chosen}
    notes = [f"criteria: {mindeval.MAPPING_SOURCE}",
             "0 = not applicable: never a score; a clinician's criterion rating is the mean of their applicable "
             "ratings over its fields", *ann.report.lines()]
    if len(chosen) < len(items):
        notes.append(f"--limit: a seeded sample of {len(chosen)} of {len(items)} conversations (stratified by "
                     "therapist model)")
    return Reference(name="mindeval-clinicians", source="public", sha256=ann.sha256, subtask=MINDEVAL_SUBTASK,
                     label_type="ordinal", items=chosen, humans={i: h for i, h in humans.items() if i in ids},
                     judge_value=lambda rec: rec.score.get("rubric"), scale=(1.0, 6.0), notes=notes,
                     attributes=RUBRIC_KEYS, clusters=ann.clusters, judging=mindeval.StoredConversationRubric(),
                     counts={"conversations": len(ann.conversations), "judgeable": len(items),
                             "unusable_rows": ann.report.n_skipped})


def _number(value: str) -> float | None:
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _judge_key(key: str) -> Callable[[Record], Any]:
    def value(rec: Record) -> Any:
        if not rec.score.get("judge_valid", rec.score.get("valid", True)):
            return None
        v = rec.score.get(key)
        return int(v) if isinstance(v, bool) else v

    return value


def csv_reference(path: Path, subtask_id: str | None, label_type: str | None, judge_key: str | None) -> Reference:
    """A tidy CSV (docs/judges.md#reference-csv): `item_id`, `response` (the reply the judge sees), optional
    `prompt` (what the reply answers), `meta_<key>` columns (item metadata the sub-task's judge prompt reads),
    and one or more `human_<rater>` label columns (empty = not labelled)."""
    if not subtask_id:
        raise TrustmhError("--reference CSV needs --subtask ID (which judge to certify)")
    cls = lookup(subtask_id)
    if cls is None:
        raise TrustmhError(f"--subtask {subtask_id}: unknown sub-task")
    if not judge_key:
        raise TrustmhError("--reference CSV needs --judge-key KEY (the score field holding the judge's label, "
                           "e.g. appropriateness)")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0]) if rows else []
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    raters = [c for c in header if c.startswith("human_")]
    if missing or not raters:
        raise TrustmhError(f"{path}: needs columns item_id, response and at least one human_<rater> column"
                           + (f" (missing: {', '.join(missing)})" if missing else ""))
    items, humans, seen = [], {}, set()
    for i, row in enumerate(rows, start=2):
        iid = (row.get("item_id") or "").strip()
        if not iid or iid in seen:
            raise TrustmhError(f"{path} row {i}: item_id {'missing' if not iid else 'repeated: ' + iid}")
        seen.add(iid)
        meta = {k[5:]: v for k, v in row.items() if k.startswith("meta_")}
        target = meta.pop("target", None)
        items.append(Item(id=iid, prompt=row.get("prompt") or "", target=target,
                          metadata={**meta, "skip_generation": True, "stored_response": row["response"]}))
        humans[iid] = {r[6:]: (row[r].strip() or None) for r in raters}
    values = [v for h in humans.values() for v in h.values() if v is not None]
    if not values:
        raise TrustmhError(f"{path}: no human label in the human_* columns")
    numbers = [_number(v) for v in values]
    if label_type is None:
        if all(x in (0.0, 1.0) for x in numbers):
            label_type = "binary"
        elif all(x is not None for x in numbers):
            label_type = "ordinal"
        else:
            label_type = "categorical"
    if label_type not in LABEL_TYPES:
        raise TrustmhError(f"--label-type {label_type}: use one of {', '.join(LABEL_TYPES)}")
    scale = None
    if label_type != "categorical":
        for iid, h in humans.items():
            for r, v in h.items():
                if v is not None and _number(v) is None:
                    raise TrustmhError(f"{path} item {iid} column human_{r}: {v!r} is not a number")
                h[r] = None if v is None else (int(_number(v)) if label_type == "binary" else _number(v))
        nums = [v for h in humans.values() for v in h.values() if v is not None]
        scale = (min(nums), max(nums))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Reference(name=path.name, source="user", sha256=digest, subtask=cls.id, label_type=label_type,
                     items=items, humans=humans, judge_value=_judge_key(judge_key), scale=scale)


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
    if len(judges) > 1:
        opts["judges"] = list(judges)
    return RunContext(mode="default", seed=seed, suite="trustmh", limit=limit,
                      judge=JudgeInfo(model=judges[0], validated=False, seed=seed), options=opts,
                      timeout=timeout, max_retries=max_retries, cache=cache)


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
        recs, n_errors, _ = records_from_log(log)
        if log.status != "success" or n_errors:
            raise TrustmhError(f"judging the reference set did not finish ({log.status}, {n_errors} error(s)); "
                               "run the same command again to resume")
        records.extend(recs)
    return records


def certify(ref: Reference, ctx: RunContext, *, certs_dir: Path, work: Path, thresholds: list[str] | None = None,
            judge_models: Sequence[Any] | None = None, display: str = "none") -> tuple[dict[str, Any], Path]:
    records = judge_reference(ref, ctx, work, judge_models, display)
    judged = {r.item_id: ref.judge_value(r) for r in records}
    limits = parse_thresholds(thresholds, ref.label_type)
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
                                attributes=ref.attributes, clusters=ref.clusters, scale=ref.scale)
    settings = fingerprint_settings(get_subtask(ref.subtask), ctx)
    cert = make_certificate(settings=settings, reference={"name": ref.name, "sha256": ref.sha256,
                                                          "source": ref.source, "n_items": len(ref.items)},
                            label_type=ref.label_type, figures=figures, thresholds=limits, seed=ctx.seed,
                            extra={**extra, "notes": ref.notes}, reference_quality=quality)
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
