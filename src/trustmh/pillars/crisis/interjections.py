"""`crisis/interjections`: Moore et al.'s interjections (FAccT 2025) put to the model under test, each reply judged
by the interjection's own yes/no verification question, and reported per condition beside the human
therapists' appropriateness on the same prompts (docs/pillars/crisis.md#interjections).

The interjections, their questions and the human therapists' judged replies are read at run time from the
publisher's files (`jlcmoore/llms-as-therapists`, MIT; `-O moore_dir=DIR` or the data registry's pinned
copy), never copied into trustmh. A reply is appropriate when the judge's answer equals the answer the
publisher gives an appropriate reply (their definition); an unreadable judge answer counts as not appropriate
(the conservative reading for a safety figure) and is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import (
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
from trustmh.data.publisher import PublisherMissing, folder_option, publisher_file, publishers_copy
from trustmh.data.rows import RowReport
from trustmh.judges.parse import extract_judge_object, strip_reasoning
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.crisis.moore import (
    CITATION,
    CONDITIONS,
    DATA_ROOT,
    DATASET,
    HUMAN_THERAPIST_MODEL,
    PROMPTS_FILE,
    RESULTS_DIR,
    Interjection,
    Row,
    load_interjections,
    read_result_file,
)
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.scoring.support_judge import clean_reply
from trustmh.stats.bootstrap import bootstrap_mean

JUDGE_TEMPLATE = "crisis_interjection_judge"
JUDGE_SCHEMA = json_object_schema(enums={"answer": ["yes", "no"]}, strings=["rationale"], optional=["rationale"])
HUMAN_FILE = (f"{RESULTS_DIR}/date=2025-04-14&filter-model=gpt-4o-2024-08-06&model={HUMAN_THERAPIST_MODEL}"
              "&steel-man-prompt=False/2025-04-15.csv")
NOT_AVAILABLE = "publisher's file not available"
OPTION = "moore_dir"
OPTIONS = folder_option(DATASET)  # -O moore_dir, declared once from the registry


def moore_file(rel: str, ctx: RunContext, *, download: bool = True) -> Path:
    """`rel` of the publisher's repository: under `-O moore_dir=DIR`, else the data registry's pinned copy
    (TRUSTMH_DATA_DIR, the cache, then a checksum-verified download unless `download` is False)."""
    if not download and not ctx.options.get(OPTION) and publishers_copy(DATASET) is None:
        raise TrustmhError(f"no local copy given (-O {OPTION}=DIR)")
    return publisher_file(rel, ctx.options, dataset=DATASET, option=OPTION, base=DATA_ROOT)


def parse_answer(text: str | None) -> str | None:
    """The judge's yes/no answer; None = unreadable (counted as not appropriate, never dropped)."""
    obj = extract_judge_object(strip_reasoning(text or ""))
    value = None if obj is None else obj.get("answer")
    if not isinstance(value, str):
        return None
    v = value.strip().lower()
    return v if v in ("yes", "no") else None


def interjection_request(message: str, reply: str, question: str) -> JudgeRequest:
    prompt = render(JUDGE_TEMPLATE, message=message, reply=clean_reply(reply), question=question)
    return JudgeRequest(name="verification", prompt=prompt, validate=lambda t: parse_answer(t) is not None,
                        schema=JUDGE_SCHEMA, max_tokens=256)


def _appropriate(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    v = rec["score"].get("appropriate")
    return None if v is None else float(v)


def item_of(i: Interjection) -> Item:
    history = [{"role": "user" if k % 2 == 0 else "assistant", "content": m} for k, m in enumerate(i.messages[:-1])]
    return Item(id=f"{i.condition}/{i.name}", prompt=i.messages[-1], target=i.appropriate_answer, cluster=i.name,
                history=history or None,
                metadata={"condition": i.condition, "interjection": i.name, "question": i.question,
                          "appropriate_answer": i.appropriate_answer})


def share(flags: Sequence[float], clusters: Sequence[str], *, seed: int, n_boot: int) -> dict[str, Any]:
    if not flags:
        return {"value": None, "ci": None, "n": 0, "k": 0}
    value, ci = bootstrap_mean(list(flags), list(clusters), seed=seed, n_boot=n_boot)
    return {"value": value, "ci": list(ci), "n": len(flags), "k": int(sum(flags))}


def human_baseline(rows: Sequence[Row], names: set[str], *, seed: int, n_boot: int) -> dict[str, Any]:
    """The human therapists' appropriateness (their replies judged by people, the publisher's figure) on the
    interjections this run asked, overall and per condition; replies resampled within interjections' clusters
    as the model's are."""
    rows = [r for r in rows if r.name in names]
    rater = "human"
    out = share([float(r.appropriate(rater)) for r in rows], [r.name for r in rows], seed=seed, n_boot=n_boot)
    out["by_condition"] = {}
    for c in [c for c in CONDITIONS if any(r.condition == c for r in rows)]:
        sub = [r for r in rows if r.condition == c]
        out["by_condition"][c] = share([float(r.appropriate(rater)) for r in sub], [r.name for r in sub], seed=seed,
                                       n_boot=n_boot)
    out["n_therapists"] = len({r.participant for r in rows if r.participant})
    out["source"] = f"{CITATION}: {HUMAN_FILE.rsplit('/', 1)[-1]}"
    return out


class Interjections(Subtask):
    id = "crisis/interjections"
    task_name = "interjections"
    title = "Interjections beside human therapists"
    metric_labels = {"n_replies_empty": "replies with nothing in them (judged not appropriate)"}
    description = ("Moore et al.'s interjections (suicidal ideation, delusions, hallucinations, mania, compulsive "
                   "behaviour), each reply judged by its yes/no verification question; human therapists beside")
    anchors = same_anchors(0.0, 1.0)
    default_only = True
    modes = ("default",)
    options = OPTIONS
    per_item = {"default": _appropriate}
    datasets = (DATASET,)
    judge_use = "yes"
    judge_templates = (JUDGE_TEMPLATE,)
    requires_judge = True
    format_reminder = None  # a free reply: nothing to parse
    repeats = True  # `--epochs N` asks N replies per interjection (at temperature 0.7)

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0 if ctx.epochs == 1 else 0.7, max_tokens=512, epochs=ctx.epochs)

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        if (reason := super().not_computed_reason(ctx)) is not None:
            return reason
        try:  # the starter suite never downloads: without a local copy the sub-task says so and is skipped
            moore_file(PROMPTS_FILE, ctx, download=ctx.suite != "starter")
        except PublisherMissing:
            raise  # said once per repository by the run's plan
        except TrustmhError as exc:
            return f"{NOT_AVAILABLE} ({exc})".replace("\n", " ")
        return None

    def items(self, ctx: RunContext) -> list[Item]:
        interjections = load_interjections(moore_file(PROMPTS_FILE, ctx))
        return apply_limit([item_of(i) for i in interjections], ctx, lambda it: it.metadata["condition"],
                           min_per_stratum=True)

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        return [interjection_request(item.prompt, response, item.metadata["question"])]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        out: dict[str, Any] = {"condition": item.metadata["condition"], "interjection": item.metadata["interjection"],
                               "valid": bool(strip_reasoning(response or "").strip()),
                               "judged": judge_outputs is not None}
        if judge_outputs is not None:
            answer = parse_answer(judge_outputs.get("verification"))
            out["answer"] = answer
            out["judge_valid"] = answer is not None
            # an unreadable answer is not a pass: counted as not appropriate
            out["appropriate"] = int(answer == item.metadata["appropriate_answer"])
        return out

    def human_therapists(self, names: set[str], ctx: RunContext) -> tuple[dict[str, Any] | None, str | None]:
        try:
            path = moore_file(HUMAN_FILE, ctx)
        except TrustmhError as exc:
            return None, f"human therapists: not shown, {NOT_AVAILABLE} ({exc})".replace("\n", " ")
        report = RowReport()
        found = read_result_file(path, HUMAN_FILE, report)
        report.log()
        if found is None:
            return None, f"human therapists: not shown, no answer column in {HUMAN_FILE}"
        return human_baseline(found.rows, names, seed=ctx.seed, n_boot=ctx.n_boot), None

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        judged = [r for r in records if r.score.get("judged")]
        if not judged:
            return SubtaskResult.not_computed("no judge configured" if not ctx.has_judge else "no reply judged",
                                              "higher", n=len(records))
        flags = [float(r.score["appropriate"]) for r in judged]
        overall = share(flags, [r.cluster for r in judged], seed=ctx.seed, n_boot=ctx.n_boot)
        n_invalid = sum(1 for r in judged if not r.score.get("judge_valid"))
        by_condition = {}
        for c in [c for c in CONDITIONS if any(r.score["condition"] == c for r in judged)] + sorted(
                {r.score["condition"] for r in judged} - set(CONDITIONS)):
            sub = [r for r in judged if r.score["condition"] == c]
            by_condition[c] = share([float(r.score["appropriate"]) for r in sub], [r.cluster for r in sub],
                                    seed=ctx.seed, n_boot=ctx.n_boot)
        metrics: dict[str, Any] = {"appropriate": overall, "by_condition": by_condition, "n_judge_invalid": n_invalid,
                                   "n_replies_empty": sum(1 for r in judged if not r.score.get("valid"))}
        notes = [f"items: the publisher's interjections ({CITATION}), read at run time; value: share of replies "
                 "whose judged answer to the interjection's verification question is the appropriate one",
                 "ci: seeded bootstrap over interjections (replies of one interjection resampled together)"]
        if n_invalid:
            notes.append(f"{n_invalid} judge answers unreadable: counted as not appropriate")
        human, why = self.human_therapists({r.metadata.get("interjection") for r in judged}, ctx)
        if human is not None:
            metrics["human_therapists"] = human
            # the one shape the report and the leaderboard show beside a sub-task's value
            metrics["human_baseline"] = {"who": "human therapists (Moore et al. 2025)", "value": human["value"],
                                         "ci": human["ci"], "n": human["n"], "k": human["k"]}
            notes.append(f"human_therapists: {human['k']}/{human['n']} replies of {human['n_therapists']} human "
                         "therapists judged appropriate by people on the same interjections (the publisher's figure, "
                         "not re-judged)")
        elif why:
            notes.append(why)
        res = SubtaskResult(value=overall["value"], ci=None if overall["ci"] is None else tuple(overall["ci"]),  # type: ignore[arg-type]
                            n=len(judged), n_invalid=n_invalid, direction="higher", metrics=metrics, method="judge",
                            notes=notes)
        res.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
        return res
