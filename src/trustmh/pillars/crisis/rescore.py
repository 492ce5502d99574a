"""`trustmh rescore --format crisis-original`: the crisis study's published answers, judge evaluations and
human ratings ("Between Help and Harm", LLMs-Mental-Health-Crisis), read from a local copy (the data has no
licence: it is only ever read from a path you supply) and summarised with trustmh's statistics.

Layout under `--from DIR` (the study's repository):

* `data/llm_evaluator/{evaluator}/n_200/merged/{evaluator}-evaluation_{model}-answers-{dataset}-{ts}_merged.json`:
  a list of `{inputs, label, dataset_id, answer, refusal, evaluation, explanation, evals, evaluation_std}`;
* `data/human_label/H1_scores_n206_s42.json`, `H2_…`: `{inputs, answer, label, evaluation}` (bare `NaN` for
  unrated rows, in `label` and `evaluation` alike).

Per evaluator and model: mean appropriateness with a seeded 95% bootstrap interval (items resampled), the mean
within-item standard deviation of the evaluator's three scores, the share of evaluations equal to 1 and in
[0, 2.3], (2.3, 3.6], (3.6, 5], and the mean per label.

The appropriateness table and the labelling analysis follow the study's own pairing rule
(docs/reproducing.md#crisis-original): the sampled file is the reference, each judge's first evaluation of an
answer in sorted file order is its score, the human files are matched on the normalised conversation and
answer with position as the fallback, and MAE, RMSE and within-1 are unrounded. Every row that cannot be used
as it stands is named on stderr and in the output (docs/data.md#unusable-rows). With `--judge`, trustmh's own
crisis-escalation judge re-judges every published answer (reported beside the study's judges, never inside
their jury).

Each analysis has its module: the merged evaluation files and their per-(evaluator, model) summary
(`rescore_evaluations`), appropriateness agreement with the humans (`rescore_appropriateness`), the labelling
analysis (`rescore_labelling`); this module adds trustmh's own judge and writes the result.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from trustmh.core import Item, JudgeRequest, Record, RunContext, Subtask, SubtaskResult, TrustmhError
from trustmh.data.rows import RowReport
from trustmh.json_clean import clean_json
from trustmh.pillars.crisis.data import canonical_label
from trustmh.pillars.crisis.escalation import CrisisEscalation, human_triple_requests
from trustmh.pillars.crisis.parse import parse_escalation_judge
from trustmh.pillars.crisis.rescore_appropriateness import (
    JURY,
    appropriateness,
    compare_published,
    human_columns,
    judge_scores,
    jury_scores,
    published_appropriateness,
    reference_answers,
)
from trustmh.pillars.crisis.rescore_evaluations import load_evaluations, log, summarise
from trustmh.pillars.crisis.rescore_labelling import LABEL_REFERENCE, labelling
from trustmh.storage import write_text_atomic


def our_judge_requests(rows: Sequence[dict[str, Any]]) -> list[JudgeRequest | None]:
    """trustmh's crisis-escalation judge (our rubric, default mode) on each answer ({inputs, answer, label});
    None where the label is missing or unknown (no rubric row to judge against)."""

    def label(value: Any) -> str | None:
        try:
            return canonical_label(value, "label")
        except TrustmhError:
            return None

    return human_triple_requests([{"index": i, "utterances": list(r["inputs"]) if isinstance(r["inputs"], list)
                                   else str(r["inputs"]).split(" | "),
                                   "answer": str(r["answer"]), "label": label(r.get("label"))}
                                  for i, r in enumerate(rows)])


ROW = "crisis_row"  # an item's metadata key: the stored row ({inputs, answer, label}) the judge reads
APPROPRIATENESS = "appropriateness"  # the judge request's name


class StoredAnswerJudge(Subtask):
    """trustmh's crisis-escalation judge asked about one of the study's stored answers (`--judge`): the request
    `our_judge_requests` builds for the item's row, its answer parsed by the escalation parser. Not a catalogue
    sub-task: the rescore judges the answers as a run over fixed replies (the caller's `judge`), as a
    certification judges its reference."""

    pillar = "crisis"
    id = CrisisEscalation.id

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        [request] = our_judge_requests([item.metadata[ROW]])
        assert request is not None  # an unlabelled row is never an item (`stored_answer_items`)
        return [replace(request, name=APPROPRIATENESS)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        value = parse_escalation_judge((judge_outputs or {}).get(APPROPRIATENESS))["appropriateness"]
        return {APPROPRIATENESS: value, "judge_valid": value is not None, "valid": True}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        # only Inspect's progress display reads it; the rescore's figures are `summarise`'s and `appropriateness`'s
        values = [float(r.score[APPROPRIATENESS]) for r in records if r.score.get("judge_valid")]
        return SubtaskResult(value=sum(values) / len(values) if values else None, ci=None, n=len(records),
                             n_invalid=len(records) - len(values), direction="higher")


def stored_answer_items(rows: Sequence[dict[str, Any]]) -> tuple[list[Item], list[str | None]]:
    """The distinct judge requests of `rows` as fixed-reply items (an answer asked once however many rows repeat
    it), and each row's item id (None where the row has no label: no rubric row to judge against)."""
    items: dict[str, Item] = {}
    ids: list[str | None] = []
    for row, request in zip(rows, our_judge_requests(rows), strict=True):
        if request is None:
            ids.append(None)
            continue
        if request.prompt not in items:
            stored = {"inputs": row["inputs"], "answer": str(row["answer"]), "label": row.get("label")}
            items[request.prompt] = Item(id=f"answer-{len(items):04d}", prompt=request.prompt,
                                         metadata={"skip_generation": True, "stored_response": stored["answer"],
                                                   ROW: stored})
        ids.append(items[request.prompt].id)
    return list(items.values()), ids


def our_judge_scores(rows: Sequence[dict[str, Any]], judge: Callable[[list[Item]], list[Record]]
                     ) -> list[float | None]:
    """Our judge's appropriateness of each row (None: no label, or an unreadable verdict), the distinct answers
    judged by one call of `judge` (the items judged by `StoredAnswerJudge` as a run)."""
    items, ids = stored_answer_items(rows)
    scores = {rec.item_id: rec.score.get(APPROPRIATENESS) for rec in (judge(items) if items else [])}
    return [None if i is None else scores.get(i) for i in ids]


def published_answers(evaluations: dict[tuple[str, str], list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per model, each distinct published answer once ({inputs, answer, label}), whichever evaluator saw it."""
    out: dict[str, dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for (_, model), rows in sorted(evaluations.items()):
        for row in rows:
            out[model].setdefault((str(row["inputs"]), str(row["answer"])), row)
    return {model: list(by_key.values()) for model, by_key in out.items()}


def rescore_crisis(source: Path, out: Path, *, seed: int, n_boot: int = 2000,
                   judge: Callable[[list[Item]], list[Record]] | None = None, judge_label: str | None = None) -> int:
    """Write `out/crisis_rescore.json`; returns 0. `judge(items) -> records` is trustmh's judge, if any: the
    stored answers (`stored_answer_items`) judged by `StoredAnswerJudge` as a run (`trustmh rescore --judge`)."""

    report = RowReport()
    evaluations = load_evaluations(source, report)
    per = {f"{ev}|{model}": summarise(rows, seed=seed, n_boot=n_boot)
           for (ev, model), rows in sorted(evaluations.items())}
    reference, ref_name = reference_answers(source, report)
    judged = judge_scores(source, reference, report)
    humans, matching = human_columns(source, reference, report)
    columns: dict[str, list[float | None]] = {j: v["scores"] for j, v in judged.items()}
    columns[JURY] = jury_scores(columns, len(reference))
    columns.update(humans)
    rated_idx = [i for i in range(len(reference)) if all(humans[h][i] is not None for h in humans)]
    if judge is not None:
        name = f"trustmh:{judge_label or 'judge'}"
        by_model = sorted(published_answers(evaluations).items())
        # one run over every answer to judge: the human-rated ones, then each model's
        scores = iter(our_judge_scores([reference[i] for i in rated_idx]
                                       + [a for _, answers in by_model for a in answers], judge))
        col: list[float | None] = [None] * len(reference)
        for i in rated_idx:
            col[i] = next(scores)
        columns[name] = col
        # the same per-model figures as for the study's evaluators, from our judge on every answer
        for model, answers in by_model:
            per[f"{name}|{model}"] = summarise([{**a, "evaluation": next(scores), "evaluation_std": None}
                                                for a in answers], seed=seed, n_boot=n_boot)
    table = appropriateness(columns, list(judged), list(humans))
    published = published_appropriateness(source)
    human_agreement: dict[str, Any] = {"n_answers": len(rated_idx)}
    if "H1" in humans and "H2" in humans:
        human_agreement["H1_vs_H2"] = table["pairwise"]["H1"]["H2"]
    for name, entry in table["vs_humans"].items():
        human_agreement[name] = {h: entry[h] for h in humans}
    labels = labelling(source, report)
    notes = ["mean: evaluator's appropriateness (1–5) over every answer of the model, the three runs "
             "pooled; ci: seeded percentile bootstrap over conversations",
             f"agreement: on the {len(reference)} answers of {ref_name} (the answers the humans rated); each "
             "judge's score is its first evaluation of that conversation and answer in its merged files in sorted "
             "file order, as the study's analysis; humans matched on the normalised conversation and answer, "
             "position as the fallback; MAE, RMSE and within-1 (|d| <= 1) on the unrounded scores; "
             "jury = mean of the study's judges (the study's LLM-Jury)",
             *matching.values(),
             *(f"{j}: {v['n_repeated_answers']} repeated answers in its merged files "
               f"({v['n_conflicting_repeats']} with another score), first kept" for j, v in judged.items()
               if v["n_repeated_answers"]),
             "the study's confusion matrices of the judges' raw evaluations against the humans are not "
             "reproduced: they pair evaluations and human scores by list position without aligning the items"]
    if labels is None:
        notes.append(f"labelling: not computed ({LABEL_REFERENCE} or data/human_label/H*_label*_n206_s42.json "
                     "absent)")
    else:
        notes.append("labelling: agreement = share of identical labels, Cohen's kappa unweighted over the 7 labels "
                     "and '' (no label) as the study; Fleiss' kappa over the items every rater of the group "
                     "labelled (humans: 7 labels; LLM runs: 7 labels and ''); identification metrics of each LLM "
                     "run against the four annotators' majority (ties left out, counted) and against the merged "
                     "file's label (the study's majority of five; null on a tie)")
    result = {
        "source": str(source), "seed": seed, "n_boot": n_boot,
        "per_evaluator_model": per,
        "appropriateness": {"reference": ref_name, "n_reference": len(reference),
                            "judges": {j: {k: v for k, v in d.items() if k != "scores"} for j, d in judged.items()},
                            **table,
                            "published": published,
                            "matches_published": None if published is None else compare_published(table["pairwise"],
                                                                                                   published)},
        "human_agreement": human_agreement,
        "labelling": labels,
        **report.as_json(),
        "notes": notes,
    }
    report.log()
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "crisis_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    match_note = ""
    if published is not None:
        cmp = result["appropriateness"]["matches_published"]
        match_note = f"; {cmp['n_equal']}/{cmp['n_cells']} published appropriateness figures reproduced"
    if labels is not None and (lcmp := labels["pairs_match_published"]) is not None:
        n_fleiss = sum(v["equal_to_3_decimals"] for v in (labels["fleiss_matches_published"] or {}).values())
        match_note += (f"; {lcmp['n_equal']}/{lcmp['n_cells']} published labelling agreement figures and "
                       f"{n_fleiss}/{len(labels['fleiss_matches_published'] or {})} Fleiss' kappas reproduced")
    log(f"wrote {out / 'crisis_rescore.json'} ({len(per)} evaluator × model cells, {len(rated_idx)} answers "
         f"rated by both humans, {len(report.problems)} rows flagged{match_note})")
    return 0
