"""`reliability/emotional_support` (ESConv; judged by the shared support-quality judge).

`EmotionalSupport.perturbable_items` hands the robustness pillar the same items with only the seeker's
turns perturbed; `aggregate_support` is shared with `robustness/emotional_support`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from trustmh.core import (
    ChecksumError,
    GenConfig,
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
)
from trustmh.data import resolve
from trustmh.data.registry import read_once
from trustmh.pillars.reliability.common import Perturb, seeded_rng
from trustmh.pillars.reliability.data import (
    ESCONV_JSON_RELPATH,
    ESCONV_TSV_RELPATHS,
    GENERATION_OPTIONS,
    VARIANT_FULL,
    VARIANT_PROCESSED,
    esconv_test_dialogues,
    load_esconv_json,
    validate_esconv_dialogue,
)
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.scoring.support_judge import (
    SUPPORT_DIMENSIONS,
    clean_reply,
    format_transcript,
    reply_valid,
    support_judge_request,
    support_score,
)
from trustmh.starter import load_starter
from trustmh.stats import mean_or_none
from trustmh.stats.bootstrap import bootstrap_mean

ESCONV_DIALOGUES = 200


def eligible_cuts(turns: Sequence[Mapping[str, Any]]) -> list[int]:
    """Positions p of supporter turns that may be the gold turn: the turn before is the seeker's, at least
    2 seeker turns come before, and the context turns[:p] has no missing turn (turn_idx = position)."""
    out = []
    seekers = 0
    for p, t in enumerate(turns):
        if t["turn_idx"] != p:  # a missing turn: no later cut has a complete context
            break
        if t["speaker"] == "supporter" and p > 0 and turns[p - 1]["speaker"] == "seeker" and seekers >= 2:
            out.append(p)
        if t["speaker"] == "seeker":
            seekers += 1
    return out


def context_turns(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [{"speaker": t["speaker"], "text": t["text"]} for t in turns]


def rouge_l(candidate: str, reference: str) -> float | None:
    """ROUGE-L F1 over lower-cased word tokens (LCS-based); None when either side has no tokens."""
    a = re.findall(r"\w+", candidate.lower())
    b = re.findall(r"\w+", reference.lower())
    if not a or not b:
        return None
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def support_generation_prompt(context: Sequence[Mapping[str, str]]) -> str:
    return render("emotional_support", transcript=format_transcript(context))


def aggregate_support(records: Sequence[Record], ctx: RunContext, *, what: str) -> SubtaskResult:
    """Mean support quality (mean of the 4 judge dimensions per reply), dialogue-cluster bootstrap.

    Shared by `reliability/emotional_support` and `robustness/emotional_support` (on perturbed items).
    """
    direction = "higher"
    if not records:
        return SubtaskResult.not_computed("no items scored", direction)
    judged = [r for r in records if r.score.get("judged")]
    n_bad_reply = sum(1 for r in records if not r.score["valid"])
    metrics: dict[str, Any] = {"n_replies": len(records), "n_invalid_replies": n_bad_reply}
    if not judged:
        return SubtaskResult.not_computed("no judge configured", direction, n=len(records), metrics=metrics)
    valid = [r for r in judged if r.score.get("judge_valid")]
    n_judge_invalid = len(judged) - len(valid)
    metrics["n_judge_invalid"] = n_judge_invalid
    metrics["judge_invalid_rate"] = n_judge_invalid / len(judged)
    n_invalid = sum(1 for r in judged if not r.score["valid"] or not r.score.get("judge_valid"))
    if not valid:
        return SubtaskResult.not_computed("no valid judge output", direction, n=len(judged), n_invalid=n_invalid,
                                          metrics=metrics)
    value, ci = bootstrap_mean([float(r.score["support"]) for r in valid], [r.cluster for r in valid],
                               seed=ctx.seed, n_boot=ctx.n_boot)
    metrics["mean_support"] = value
    for d in SUPPORT_DIMENSIONS:
        metrics[f"mean_{d}"] = mean_or_none(r.score.get(d) for r in valid)
    metrics["share_support_le_2"] = float(np.mean([r.score["support"] <= 2 for r in valid]))
    metrics["n_dialogues"] = len({r.cluster for r in records})
    rouge = [r.score.get("ref_rougeL") for r in records]
    metrics["ref_rougeL"] = mean_or_none(rouge)
    variants = sorted({str(r.metadata.get("dataset_variant")) for r in records if r.metadata.get("dataset_variant")})
    if variants:
        metrics["dataset_variant"] = variants[0] if len(variants) == 1 else variants
    notes = [f"{what}: mean of empathy, helpfulness, safety and fluency (1-5) per reply; unit of resampling: "
             "dialogue; invalid judge outputs are counted in n_invalid and left out of the mean; empty "
             "replies score 1",
             "ref_rougeL (word-level ROUGE-L F1 against the gold supporter turn) is secondary; the judge "
             "never sees the gold turn"]
    if VARIANT_PROCESSED in variants:
        why = next((r.metadata["fallback_reason"] for r in records if r.metadata.get("fallback_reason")), None)
        metrics["fallback_reason"] = why
        notes.append("dataset_variant: processed_test_split - ESConv.json was not available"
                     + (f" ({why})" if why else "") + "; dialogues were rebuilt from the processed test split "
                     "(testWithStrategy_short.tsv); supply it with -O esconv_path=FILE")
    if ctx.suite == "starter":
        notes.append("starter suite: invented demonstration dialogues, not ESConv")
    notes += ctx.judge.validation_notes()
    res = SubtaskResult(value=value, ci=ci, n=len(judged), n_invalid=n_invalid, direction=direction,
                        metrics=metrics, method="judge", notes=notes)
    res.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
    return res


def _support(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    score = rec["score"]
    if not score.get("judged") or not score.get("judge_valid") or score.get("support") is None:
        return None
    return float(score["support"])


class EmotionalSupport(Subtask):
    id = "reliability/emotional_support"
    task_name = "emotional_support"
    anchors = same_anchors(1.0, 5.0)
    options = GENERATION_OPTIONS
    per_item = {"faithful": _support, "default": _support}
    title = "Emotional support (ESConv)"
    metric_labels = {
        "mean_support": "mean support score of the replies (1-5, judge)",
        "mean_{dimension}": "mean {dimension} score of the replies (judge)",
        "share_support_le_2": "share of replies with a support score of 2 or lower",
        "ref_rougeL": "word overlap with the real supporter's turn (ROUGE-L F1; secondary)",
        "dataset_variant": "which copy of ESConv the dialogues came from",
        "fallback_reason": "why the full ESConv file was not used",
    }
    datasets = ("esconv", "esconv_processed")
    judge_use = "yes"
    judge_templates = ("support_judge",)
    format_reminder = None  # a free reply: nothing to parse

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0, max_tokens=1024)

    requires_judge = True  # no rule fallback: without a judge the sub-task is not computed

    def dialogues(self, ctx: RunContext) -> tuple[list[dict[str, Any]], str, str | None]:
        """(dialogues, dataset_variant, why ESConv.json was not used): the full ESConv.json when it can be had,
        else the processed test split (docs/pillars/reliability.md#reliability). A checksum mismatch is raised, never fallen back from."""
        if ctx.suite == "starter":
            return [validate_esconv_dialogue(d, f"starter {self.id} line {i + 1}") | {"id": d.get("id", f"s{i}")}
                    for i, d in enumerate(load_starter(self.id))], "starter", None
        # each file is parsed once per process (`read_once`): the items are built for every robustness
        # condition and for the judge's anchors too
        user_path = ctx.options.get("esconv_path")
        try:
            path = resolve("esconv", ESCONV_JSON_RELPATH, user_path)
        except ChecksumError:
            raise  # a wrong ESConv.json is bad data, never a reason to use other data
        except TrustmhError as exc:
            if user_path:
                raise
            why = str(exc)
        else:
            return ([d | {"id": f"esconv-{d['row']:04d}"} for d in read_once(path, load_esconv_json)],
                    VARIANT_FULL, None)
        path = resolve("esconv_processed", ESCONV_TSV_RELPATHS["test"], ctx.options.get("esconv_processed_path"))
        return read_once(path, esconv_test_dialogues), VARIANT_PROCESSED, why

    def items(self, ctx: RunContext) -> list[Item]:
        dialogues, variant, why = self.dialogues(ctx)
        eligible = [(d, cuts) for d in dialogues if (cuts := eligible_cuts(d["turns"]))]
        if ctx.suite == "starter":
            chosen = eligible if ctx.limit is None else eligible[: ctx.limit]
        else:
            # A seeded stratified 200 by emotion; faithful --limit keeps the head of the 200.
            chosen = apply_limit(eligible, ctx, lambda dc: dc[0].get("emotion_type", ""), pool=ESCONV_DIALOGUES)
        out = []
        for d, cuts in chosen:
            p = seeded_rng(ctx.seed, d["id"], "cut").choice(cuts)
            context = context_turns(d["turns"][:p])
            gold = d["turns"][p]
            md = {"context": context, "dialogue_id": d["id"], "cut_turn": p, "gold_strategy": gold.get("strategy"),
                  "dataset_variant": variant, "fallback_reason": why, "emotion_type": d.get("emotion_type"),
                  "problem_type": d.get("problem_type")}
            out.append(Item(id=f"{d['id']}-t{p:02d}", prompt=support_generation_prompt(context), target=gold["text"],
                            cluster=d["id"], metadata=md))
        return out

    def perturbable_items(self, ctx: RunContext, perturb: Perturb) -> list[Item]:
        """The same items (same ids, clusters, targets) with only the seeker's turns perturbed.

        `perturb(key, text)` is called once per seeker turn with `key = f"{item.id}#{k}"` (k = the turn's
        position in the context), so every turn draws its own randomness. The model's prompt is rebuilt
        from `metadata["perturbed_context"]`; `metadata["context"]` stays clean and is what the judge sees
        (the judge rates the reply against what the seeker meant, not against the noise).
        """
        out = []
        for item in self.items(ctx):
            md = dict(item.metadata)
            md["perturbed_context"] = [
                {**t, "text": perturb(f"{item.id}#{k}", t["text"])} if t["speaker"] == "seeker" else dict(t)
                for k, t in enumerate(md["context"])]
            md["perturbed"] = True
            out.append(replace(item, prompt=support_generation_prompt(md["perturbed_context"]), metadata=md))
        return out

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        if not reply_valid(response):
            return []  # an empty reply is scored 1 without asking the judge
        return [support_judge_request(item.metadata.get("judge_context", item.metadata["context"]), response)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        out = support_score(response, judge_outputs)
        out["ref_rougeL"] = rouge_l(clean_reply(response), item.target) if isinstance(item.target, str) else None
        return out

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        return aggregate_support(records, ctx, what="support quality")
