"""MentalBench generation task (docs/pillars/mentalbench.md#mentalbench): counselling replies judged on 7 attributes.

Items are contexts (a person's message). The model under test writes a reply (docs/pillars/mentalbench.md#generation decoding: temperature 0.7,
512 tokens); the reply is split into reasoning and visible text and given a `gen_status`; only visible text
is judged. When the dataset's human reply (`response` column) is available, it is judged beside the model
as an extra item with source `original` (that item's generation is not used: its prompt asks for "OK").

Data, in order: `-O mentalbench_path=FILE` (CSV, Parquet, JSON(L), or a Hugging Face export folder),
`trustmh.data.locate("mentalbench", ...)`; else, offline, the 1,000 rated contexts of the MentalAlign
judge workbooks (no reference replies then). `-O mentalbench_starter=1` (or the starter suite) uses the
project's own demo items.

The judges are the run's (`--judge` repeated is an ensemble: `RunContext.judges`); the model's label is
`RunContext.model`. Options (`-O key=value`): `ensemble` (mean | median | vote), `min_valid`,
`judge_repeats` (r > 1: test–retest), `temperature`, `max_tokens`, `samples` (default mode only),
`judge_max_tokens`, `mentalalign_dir` (for ConvID checks and the offline contexts), `verify_conv_ids`
(default 1), `skip_original` (do not judge the reference replies), `faithful_clean_published` (faithful mode: judge published replies without their
reasoning, like default), and, for `trustmh rescore`, `rescore` (every published reply becomes an item)
and `selection=head` (first rows in file order in every mode).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.core import (
    MAX_REPEATS,
    MAX_TOKENS,
    GenConfig,
    Item,
    JudgeRequest,
    Mode,
    Option,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
)
from trustmh.data import resolve
from trustmh.judges.ensemble import combine, ensemble_settings
from trustmh.judges.schema import json_object_schema
from trustmh.models.providers import model_family
from trustmh.pillars.mentalbench.data import (
    MENTALBENCH_REL,
    MentalBenchData,
    contexts_only,
    load_mentalbench,
    mentalalign_contexts,
    select_rows,
    starter_data,
)
from trustmh.pillars.mentalbench.diagnostics import (
    member_agreement,
    retest_reliability,
    self_preference,
)
from trustmh.pillars.mentalbench.export import export_long_table
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES, STATUSES, VALID_CODES, robust_parse, strict_parse
from trustmh.pillars.mentalbench.sources import (
    ARS,
    CSS,
    MODEL_SOURCE,
    ORIGINAL,
    SOURCE_FAMILY,
    Split,
    gen_status,
    split_reasoning,
)
from trustmh.prompts import render, template_sha256
from trustmh.stats.bootstrap import bootstrap_mean, cluster_codes, draw_counts, percentile_ci

GEN_TEMPLATE = "mentalbench_generate"
FIXED_PROMPT = ("This item carries a reference reply that is judged as it is; your answer is not used. "
                "Reply with the single word OK.")
GEN_STATUSES = ("ok", "truncated", "reasoning_only", "empty", "error")


# ==========================================================================================================
# Options, judges, views of a response
# ==========================================================================================================

def _opt_int(ctx: RunContext, key: str, default: int, lo: int = 1) -> int:
    v = ctx.options.get(key, default)
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise TrustmhError(f"mentalbench: option {key}={v!r} must be an integer") from None
    if n < lo:
        raise TrustmhError(f"mentalbench: option {key}={v!r} must be >= {lo}")
    return n


def judge_members(ctx: RunContext) -> list[tuple[str, str | None]]:
    """(label, model) per ensemble member (`--judge` repeated), else the run's judge (model None = the
    Inspect grader role)."""
    judges = ctx.judges
    if len(judges) > 1:
        if len(set(judges)) != len(judges):
            raise TrustmhError(f"mentalbench: a judge is listed twice in {judges}")
        return [(j, j) for j in judges]
    return [(str(ctx.judge.model) if ctx.judge.model else "judge", None)]


def judge_repeats(ctx: RunContext) -> int:
    return _opt_int(ctx, "judge_repeats", 1)


def request_name(label: str, k: int, repeats: int) -> str:
    return label if repeats == 1 else f"{label}@{k}"


def model_label(ctx: RunContext, records: Sequence[Record] = ()) -> str:
    if ctx.model:
        return ctx.model
    for r in records:
        if r.metadata.get("model_reported"):
            return str(r.metadata["model_reported"])
    return MODEL_SOURCE


def response_view(item: Item, response: str, ctx: RunContext) -> tuple[str | None, Split, bool]:
    """(text the judge sees or None = not judged, reasoning split, placeholder) for an item's response.

    Model replies: only the visible text. Published replies (`fixed_response`): in default mode the same;
    in faithful mode the published text as it is (reasoning leaks included) and a missing reply as the
    text `nan`, as the original pipeline judged them (docs/align.md#data-quality); `placeholder` marks that case.
    """
    if "fixed_response" not in item.metadata:
        split = split_reasoning(response)
        return (split.text or None), split, False
    raw = item.metadata["fixed_response"]
    split = split_reasoning(raw or "")
    if ctx.mode == "faithful" and not ctx.flag("faithful_clean_published"):
        if raw is None:
            return "nan", split, True
        return raw, split, False
    return (split.text or None), split, False


# ==========================================================================================================
# Judge output → per-attribute ratings
# ==========================================================================================================

def parse_judge(text: str | None) -> dict[str, Any]:
    """Both parsers (docs/pillars/mentalbench.md#judge-parsing): robust statuses/scores and the strict scores, per attribute."""
    rc = robust_parse(text)
    strict = strict_parse(text)
    return {
        "status": {a: STATUSES[s] for a, s in zip(ATTRIBUTES, rc.status, strict=True)},
        "robust": {a: (float(v) if s in VALID_CODES else None)
                   for a, s, v in zip(ATTRIBUTES, rc.status, rc.value, strict=True)},
        "raw": {a: (None if math.isnan(v) else float(v)) for a, v in zip(ATTRIBUTES, rc.value, strict=True)},
        "strict": {a: (None if math.isnan(v) else float(v)) for a, v in zip(ATTRIBUTES, strict, strict=True)},
    }


def no_response_rating() -> dict[str, Any]:
    none = dict.fromkeys(ATTRIBUTES)
    return {"status": dict.fromkeys(ATTRIBUTES, "no_response"), "robust": dict(none), "raw": dict(none),
            "strict": dict(none)}


def judge_schema(mode: Mode) -> dict[str, Any]:
    """What `judge_valid` accepts: the seven attributes 1-5; the faithful template's `Overall` (not scored)
    and the `Explanation` optional, last."""
    integers = {a: (1, 5) for a in ATTRIBUTES} | ({"Overall": (1, 5)} if mode == "faithful" else {})
    optional = ("Overall", "Explanation") if mode == "faithful" else ("Explanation",)
    return json_object_schema(integers=integers, strings=("Explanation",), optional=optional)


def judge_valid(text: str) -> bool:
    rc = robust_parse(text)
    return all(s in VALID_CODES for s in rc.status)


def rating_scores(rating: dict[str, Any], mode: str) -> dict[str, float | None]:
    """The per-attribute score a mode uses: faithful = the strict parser's value, default = the robust one.
    Either is used only where the attribute's status is `ok` or `recovered`: a 0, 6, 99, 2.5 or `true` (which
    the authors' strict parse would average) is left out, and counted under its status (`out_of_range`,
    `non_numeric`) in every report."""
    if mode != "faithful":
        return dict(rating["robust"])
    return {a: v if rating["robust"][a] is not None else None for a, v in rating["strict"].items()}


# ==========================================================================================================
# The sub-task
# ==========================================================================================================


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'mentalbench_path': Option('MentalBench-100k file'),
    'mentalalign_dir': Option('MentalAlign folder'),
    'mentalbench_starter': Option('1: starter contexts'),
    'judge_repeats': Option('judge repeats (test-retest)', minimum=1, maximum=MAX_REPEATS),
    'samples': Option('replies per context', minimum=1, maximum=MAX_REPEATS),
    'temperature': Option('generation temperature'),
    'max_tokens': Option('generation tokens', minimum=1, maximum=MAX_TOKENS),
    'selection': Option('context selection'),
    'skip_original': Option('1: no reference'),
    'verify_conv_ids': Option('1: check ConvIDs'),
    'faithful_clean_published': Option('faithful cleaning'),
    'rescore': Option('set by rescore'),
}


class MentalBenchGeneration(Subtask):
    id = "mentalbench/generation"
    task_name = "mentalbench"
    anchors = same_anchors(1.0, 5.0)
    suite = "mentalbench"
    options = OPTIONS
    title = "MentalBench: counselling replies judged on 7 attributes"
    datasets = ("mentalbench", "mentalalign")
    judge_use = "yes"
    # the attribute scores of an ensemble are averaged (the MentalBench paper's rule); `-O ensemble` overrides
    ensemble_rule = "mean"
    judge_templates = ("mentalbench_judge", "mentalbench_judge_faithful")
    format_reminder = None  # free text: nothing to re-ask

    # ---------------------------------------------------------------- items

    def load(self, ctx: RunContext) -> MentalBenchData:
        if ctx.suite == "starter" or ctx.flag("mentalbench_starter"):
            return starter_data(self.id)
        user_path = ctx.options.get("mentalbench_path")

        try:
            path = resolve("mentalbench", MENTALBENCH_REL, user_path)
        except TrustmhError:
            if user_path:
                raise
            return contexts_only(ctx.options)
        ref = None
        if ctx.flag("verify_conv_ids", True):
            got = mentalalign_contexts(ctx.options)
            ref = got[1] if got is not None else None
        return load_mentalbench(path, reference_contexts=ref)

    def items(self, ctx: RunContext) -> list[Item]:
        data = self.load(ctx)
        rows, dropped = select_rows(data, ctx)
        info = {"origin": data.origin, "file": None if data.path is None else data.path.name,
                "counts": data.counts, "duplicates_dropped": dropped, "notes": data.notes,
                "generate_template_sha256": template_sha256(GEN_TEMPLATE),
                "judge_template_sha256": template_sha256("mentalbench_judge_faithful" if ctx.mode == "faithful"
                                                         else "mentalbench_judge")}
        rescore = ctx.flag("rescore")
        if rescore and data.origin != "mentalbench":
            raise TrustmhError("mentalbench rescore needs a MentalBench table with response columns")
        items: list[Item] = []
        for r in rows:
            base = {"conv_id": r.conv_id, "row": r.row, "context": r.context, "data": info}
            if r.extra:
                base["extra"] = r.extra
            if rescore:  # every published reply, judged as it is; no model under test
                for src in data.sources:
                    items.append(Item(id=f"{r.conv_id}:{src}", prompt=FIXED_PROMPT, cluster=r.conv_id,
                                      metadata={**base, "source": src, "skip_generation": True,
                                                "fixed_response": r.responses.get(src)}))
                continue
            items.append(Item(id=f"{r.conv_id}:{MODEL_SOURCE}", prompt=render(GEN_TEMPLATE, context=r.context),
                              cluster=r.conv_id, metadata={**base, "source": MODEL_SOURCE}))
            if ORIGINAL in r.responses and not ctx.flag("skip_original"):
                items.append(Item(id=f"{r.conv_id}:{ORIGINAL}", prompt=FIXED_PROMPT, cluster=r.conv_id,
                                  metadata={**base, "source": ORIGINAL, "skip_generation": True,
                                            "fixed_response": r.responses[ORIGINAL]}))
        return items

    def generation(self, ctx: RunContext) -> GenConfig:
        if ctx.mode == "faithful":
            return GenConfig(temperature=0.7, max_tokens=512, epochs=1)
        t = ctx.options.get("temperature", 0.7)
        try:
            temperature = float(t)
        except (TypeError, ValueError):
            raise TrustmhError(f"mentalbench: option temperature={t!r} must be a number") from None
        return GenConfig(temperature=temperature, max_tokens=_opt_int(ctx, "max_tokens", 512),
                         epochs=_opt_int(ctx, "samples", 1))

    # ---------------------------------------------------------------- judging

    def judge_prompt(self, item: Item, text: str, ctx: RunContext) -> str:
        template = "mentalbench_judge_faithful" if ctx.mode == "faithful" else "mentalbench_judge"
        return render(template, context=item.metadata["context"], response=text)

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        text, _, _ = response_view(item, response, ctx)
        if text is None:
            return []  # never judged: no_response
        prompt = self.judge_prompt(item, text, ctx)
        repeats = judge_repeats(ctx)
        max_tokens = 512 if ctx.mode == "faithful" else _opt_int(ctx, "judge_max_tokens", 2048)
        schema = judge_schema(ctx.mode)
        return [JudgeRequest(name=request_name(label, k, repeats), prompt=prompt, validate=judge_valid,
                             max_tokens=max_tokens, model=model, schema=schema)
                for label, model in judge_members(ctx) for k in range(1, repeats + 1)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        text, split, placeholder = response_view(item, response, ctx)
        members = judge_members(ctx)
        repeats = judge_repeats(ctx)
        status = gen_status(split)
        out: dict[str, Any] = {
            "valid": text is not None,
            "source": item.metadata.get("source", MODEL_SOURCE),
            "conv_id": item.metadata.get("conv_id", item.cluster_id),
            "gen_status": status,
            "reasoning_chars": len(split.reasoning),
            "judged": text is not None and judge_outputs is not None,
        }
        if placeholder:
            out["placeholder"] = "nan"
        if judge_outputs is None:
            return out
        ratings: dict[str, Any] = {}
        raters: dict[str, dict[str, Any]] = {}
        member_scores: dict[str, dict[str, float | None]] = {}
        for label, _ in members:
            for k in range(1, repeats + 1):
                name = request_name(label, k, repeats)
                raters[name] = {"judge": label, "repeat": k}
                if text is None:
                    ratings[name] = no_response_rating()
                else:
                    ratings[name] = parse_judge(judge_outputs.get(name))
                ratings[name]["score"] = rating_scores(ratings[name], ctx.mode)
            member_scores[label] = dict(ratings[request_name(label, 1, repeats)]["score"])
        aggregator, min_valid = ensemble_settings(ctx, MentalBenchGeneration, len(members))
        final: dict[str, float | None] = {}
        ens_status: dict[str, str] = {}
        for a in ATTRIBUTES:
            vals = [member_scores[label][a] for label, _ in members]
            if text is None:
                final[a], ens_status[a] = None, "no_response"
            elif len(members) == 1:
                final[a] = vals[0]
                ens_status[a] = ratings[request_name(members[0][0], 1, repeats)]["status"][a]
            else:
                final[a], ens_status[a] = combine(vals, aggregator, min_valid)
        vals7 = [final[a] for a in ATTRIBUTES]
        out.update(ratings=ratings, raters=raters, scores=final, score_status=ens_status,
                   mean7=None if any(v is None for v in vals7) else float(np.mean(vals7)))
        if out["mean7"] is not None:
            out["inspect_value"] = out["mean7"]
        return out

    # ---------------------------------------------------------------- aggregate

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        reason = super().not_computed_reason(ctx)
        if reason is not None:
            return reason
        if not ctx.has_judge:
            return "no judge configured (MentalBench scores come from LLM judges: pass --judge)"
        return None

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        return aggregate_mentalbench(records, ctx)

    def finish_run(self, records: list[Record], out: Any, ctx: RunContext) -> list[str]:
        """The judges' scores as the tidy long table `trustmh align` reads (judge_long.csv)."""
        written = export_long_table(records, out, model_label=ctx.model)
        if "judge_long" in written:
            return []
        return ["judge_long.csv not written: no judged reply in this run is one of the human-rated MentalAlign "
                "responses (judge the released responses with `trustmh rescore --format mentalbench` to compare "
                "a judge with the experts)"]


# ==========================================================================================================
# Aggregation
# ==========================================================================================================

def _attr_matrix(recs: Sequence[Record], key: str = "scores") -> np.ndarray:
    out = np.full((len(recs), len(ATTRIBUTES)), np.nan)
    for i, r in enumerate(recs):
        s = r.score.get(key) or {}
        for j, a in enumerate(ATTRIBUTES):
            v = s.get(a)
            if v is not None:
                out[i, j] = float(v)
    return out


def attribute_means(values: np.ndarray, clusters: Sequence[object], *, seed: int,
                    n_boot: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-attribute means (NaN rows ignored per attribute) and their cluster-bootstrap replicates.

    Returns (means (A,), counts (A,), replicates (B, A)); one draw matrix serves every attribute, so
    composites of the attribute means are bootstrapped on the same replicates."""
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v)
    codes, n_c = cluster_codes(list(clusters))
    sums = np.zeros((n_c, v.shape[1]))
    cnts = np.zeros((n_c, v.shape[1]))
    np.add.at(sums, codes, np.where(ok, v, 0.0))
    np.add.at(cnts, codes, ok.astype(float))
    counts = cnts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums.sum(axis=0) / np.maximum(counts, 1), np.nan)
        w = draw_counts(n_c, n_boot, seed) if n_c else np.zeros((n_boot, 0))
        reps = (w @ sums) / (w @ cnts)
    return means, counts, reps


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def _ci(reps: np.ndarray) -> list[float | None] | None:
    lo, hi = percentile_ci(reps)
    return None if math.isnan(lo) else [float(lo), float(hi)]


def _unit_mean(mat: np.ndarray) -> np.ndarray:
    """Per-unit mean over the valid attributes (NaN when none)."""
    with np.errstate(invalid="ignore"):
        cnt = np.isfinite(mat).sum(axis=1)
        return np.where(cnt > 0, np.nansum(mat, axis=1) / np.maximum(cnt, 1), np.nan)


def aggregate_mentalbench(records: list[Record], ctx: RunContext) -> SubtaskResult:
    """Per-source attribute means with cluster-bootstrap CIs (cluster = context), CSS/ARS composites
    (default mode), parse-status counts per judge × attribute, gen_status counts, ensemble agreement,
    self-preference and test–retest. `value` = the model's mean over the 7 attribute means."""
    if not records:
        return SubtaskResult.not_computed("no scored samples", "higher")
    label = model_label(ctx, records)
    members = judge_members(ctx)
    repeats = judge_repeats(ctx)
    aggregator, min_valid = ensemble_settings(ctx, MentalBenchGeneration, len(members))
    # Published (fixed) replies are judged once: later epochs of the same item are duplicates.
    recs = [r for r in records if not ("fixed_response" in r.metadata and r.epoch > 1)]
    notes: list[str] = []
    metrics: dict[str, Any] = {"model_label": label}

    def source_of(r: Record) -> str:
        return str(r.score.get("source", r.metadata.get("source", MODEL_SOURCE)))

    # ------------------------------------------------------------- gen_status (model replies)
    model_recs = [r for r in recs if source_of(r) == MODEL_SOURCE]
    gen_counts = dict.fromkeys(GEN_STATUSES, 0)
    for r in model_recs:
        st = r.score.get("gen_status", "empty")
        if r.error:
            st = "error"
        gen_counts[st] = gen_counts.get(st, 0) + 1
    metrics["gen_status"] = gen_counts
    metrics["no_response"] = sum(not r.score.get("valid", False) for r in model_recs)
    pub = [r for r in recs if source_of(r) != MODEL_SOURCE]
    if pub:
        metrics["published_status"] = dict(Counter(str(r.score.get("gen_status")) for r in pub))
        n_placeholder = sum(1 for r in pub if r.score.get("placeholder"))
        if n_placeholder:
            notes.append(f"faithful: {n_placeholder} missing published repl(ies) were judged as the text "
                         "'nan', as in the original pipeline")

    # ------------------------------------------------------------- per-source attribute means
    by_source: dict[str, list[Record]] = {}
    for r in recs:
        by_source.setdefault(source_of(r), []).append(r)
    per_source: dict[str, Any] = {}
    model_value: float | None = None
    model_ci: list[float | None] | None = None
    for src, rs in by_source.items():
        mat = _attr_matrix(rs)
        means, counts, reps = attribute_means(mat, [r.cluster for r in rs], seed=ctx.seed, n_boot=ctx.n_boot)
        entry: dict[str, Any] = {"n": len(rs), "label": label if src == MODEL_SOURCE else src}
        for j, a in enumerate(ATTRIBUTES):
            entry[a] = {"mean": _num(means[j]), "ci": _ci(reps[:, j]), "n": int(counts[j])}
        if np.isfinite(means).all():
            entry["mean7"] = float(means.mean())
            entry["mean7_ci"] = _ci(reps.mean(axis=1))
        else:
            entry["mean7"], entry["mean7_ci"] = None, None
        if ctx.mode == "default":
            for name, group in (("css", CSS), ("ars", ARS)):
                idx = [ATTRIBUTES.index(a) for a in group]
                sub = mat[:, idx]
                comp = np.where(np.isfinite(sub).all(axis=1), sub.mean(axis=1) if sub.size else np.nan, np.nan)
                val, ci = bootstrap_mean(comp, [r.cluster for r in rs], seed=ctx.seed, n_boot=ctx.n_boot)
                entry[name] = {"mean": _num(val), "ci": None if math.isnan(ci[0]) else list(ci),
                               "n": int(np.isfinite(comp).sum())}
        per_source[src] = entry
        if src == MODEL_SOURCE:
            model_value, model_ci = entry["mean7"], entry["mean7_ci"]
    metrics["sources"] = per_source
    if MODEL_SOURCE in per_source:
        m = per_source[MODEL_SOURCE]
        for a in ATTRIBUTES:
            metrics[a] = m[a]["mean"]
        if ctx.mode == "default":
            metrics["css"] = m["css"]["mean"]
            metrics["ars"] = m["ars"]["mean"]
    if ORIGINAL in per_source:
        metrics["original_mean7"] = per_source[ORIGINAL]["mean7"]
    if ctx.mode == "faithful":
        notes.append("faithful: scores from the strict parser (a score outside 1-5 left out, counted in "
                     "parse_status); CSS/ARS composites are a default-mode extension and are not reported")

    # ------------------------------------------------------------- parse statuses
    status_counts: dict[str, dict[str, dict[str, int]]] = {}
    unparsed: dict[str, dict[str, int]] = {}
    for r in recs:
        src = source_of(r)
        for name, rating in (r.score.get("ratings") or {}).items():
            per_attr = status_counts.setdefault(name, {a: {} for a in ATTRIBUTES})
            bad = 0
            for a in ATTRIBUTES:
                st = rating["status"][a]
                per_attr[a][st] = per_attr[a].get(st, 0) + 1
                bad += st not in ("ok", "recovered")
            u = unparsed.setdefault(name, {})
            u[src] = u.get(src, 0) + bad
    metrics["parse_status"] = status_counts
    metrics["unparsed"] = unparsed
    n_unparsed_judged = sum(
        1 for r in recs for rating in (r.score.get("ratings") or {}).values() for a in ATTRIBUTES
        if rating["status"][a] not in ("ok", "recovered", "no_response"))
    metrics["n_unparsed"] = n_unparsed_judged
    if n_unparsed_judged:
        notes.append(f"{n_unparsed_judged} judge score(s) could not be parsed (counted per judge × attribute "
                     "in parse_status; never dropped silently)")

    # ------------------------------------------------------------- ensemble
    judged = [r for r in recs if r.score.get("ratings")]
    labels = [lab for lab, _ in members]
    member_mats = {lab: np.array([[np.nan if v is None else v for v in
                                   (rating_scores(r.score["ratings"][request_name(lab, 1, repeats)], ctx.mode)
                                    .values())] for r in judged]).reshape(len(judged), len(ATTRIBUTES))
                   for lab in labels}
    if len(members) > 1:
        n_incomplete = sum(1 for r in judged for a in ATTRIBUTES
                           if (r.score.get("score_status") or {}).get(a) == "ensemble_incomplete")
        metrics["ensemble"] = {"members": labels, "aggregator": aggregator, "min_valid": min_valid,
                               "n_incomplete": n_incomplete,
                               "member_means": {lab: _num(np.nanmean(m)) if np.isfinite(m).any() else None
                                                for lab, m in member_mats.items()},
                               "agreement": member_agreement(member_mats, ATTRIBUTES)}
        judge_note = (f"scores: ensemble of {len(members)} judges ({', '.join(labels)}), {aggregator}, "
                      f"min_valid={min_valid}")
    else:
        judge_note = f"scores: judge {labels[0]}"
    notes.append(judge_note + ("" if repeats == 1 else f"; each judge asked {repeats} times, the first answer "
                               "is the rating, the rest feed test–retest"))

    # ------------------------------------------------------------- self-preference
    src_family = [model_family(label) if source_of(r) == MODEL_SOURCE else SOURCE_FAMILY.get(source_of(r),
                  model_family(source_of(r))) for r in judged]
    judge_fam = {lab: model_family(model or lab) for lab, model in members}
    if judged:
        unit_scores = {lab: _unit_mean(m) for lab, m in member_mats.items()}
        sp = self_preference(unit_scores, judge_fam, src_family, [r.cluster for r in judged], seed=ctx.seed,
                             n_boot=ctx.n_boot)
        model_fam = model_family(label)
        for lab in labels:
            sp[lab]["same_family"] = bool(model_fam is not None and judge_fam.get(lab) == model_fam)
            if sp[lab]["same_family"]:
                notes.append(f"judge {lab} is from the same family ({model_fam}) as the model under test: "
                             "self-preference may inflate its scores (see self_preference)")
        metrics["self_preference"] = sp

    # ------------------------------------------------------------- test–retest
    if repeats > 1 and judged:
        tr: dict[str, Any] = {}
        for lab in labels:
            reps_mats = []
            for k in range(1, repeats + 1):
                name = request_name(lab, k, repeats)
                reps_mats.append(np.array([[np.nan if v is None else v for v in
                                            rating_scores(r.score["ratings"][name], ctx.mode).values()]
                                           for r in judged]).reshape(len(judged), len(ATTRIBUTES)))
            tr[lab] = retest_reliability(reps_mats, ATTRIBUTES)
        metrics["test_retest"] = tr

    # ------------------------------------------------------------- data notes
    info = next((r.metadata.get("data") for r in recs if r.metadata.get("data")), None)
    if info:
        metrics["data"] = {k: info.get(k) for k in ("origin", "file", "counts", "duplicates_dropped",
                                                    "generate_template_sha256", "judge_template_sha256")}
        notes.extend(info.get("notes") or [])
        if info.get("duplicates_dropped"):
            notes.append(f"{info['duplicates_dropped']} row(s) with a duplicate context left out of the sample")
    if ctx.mode == "faithful":
        notes.append("faithful: the original judged at temperature 0.7; trustmh's judge calls run at "
                     "temperature 0 with the run seed")

    n_model = len(model_recs)
    n_invalid = sum(1 for r in model_recs if r.score.get("mean7") is None)
    if not model_recs or model_value is None:
        # A rescore of published replies has no model under test: the primary value is not defined.
        if not model_recs:
            result = SubtaskResult.not_computed("no model under test (published replies only): see the "
                                                "per-source scores in metrics.sources", "higher",
                                                metrics=metrics, notes=notes)
            result.method = "judge"
            return result
        return SubtaskResult.not_computed("no attribute has a valid judge score for the model", "higher",
                                          n=n_model, n_invalid=n_invalid, metrics=metrics, notes=notes)
    ci = tuple(model_ci) if model_ci else None
    return SubtaskResult(value=model_value, ci=ci, n=n_model, n_invalid=n_invalid,  # type: ignore[arg-type]
                         direction="higher", metrics=metrics, method="judge",
                         notes=[f"value: mean over the 7 attributes (1–5, higher is better) of {label}"] + notes)
