"""Inspect glue: one generic Task built from any `trustmh.core.Subtask`. Thin by design.

The solver and the scorer walk the run's steps (`trustmh.steps`: generate → re-asks on unparseable replies →
judge calls in the `grader` role (and `grader_2`… for an ensemble) at temperature 0, seeded and bounded by
the run's timeout/retries, each re-asked until it validates → plain `Subtask.score`, combined across an
ensemble), handing them one-attempt Inspect calls (`trustmh.run.calls`); the offline driver
(`trustmh.offline.run_offline`) walks the same steps with plain functions, so a live run, a test and a
rescore of imported outputs are scored by the same code.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from trustmh.catalogue import BY_ID, get_subtask
from trustmh.core import Item, JudgeRequest, Patient, RunContext, Subtask, TrustmhError
from trustmh.multiturn import ConversationSubtask
from trustmh.run.budget import active_budget
from trustmh.run.calls import (
    ITEM_KEY,
    SCORER_NAME,
    answer_format,
    bounded_config,
    capped,
    generate_once,
    inspect_display_value,
    item_from_metadata,
    judge_model,
    judge_once,
    primary_metric,
)
from trustmh.run.conversation import conversation_scorer, play_conversation
from trustmh.run.direct import direct_spec
from trustmh.run.parts import Execution
from trustmh.run.usage import USAGE_KEY, judge_reported_extra, sample_usage
from trustmh.steps import AskJudge, generate_and_reask, item_record, judge_outputs


def samples(subtask: Subtask, items: list[Item], ctx: RunContext, source: str | None = None) -> list[Sample]:
    """The Inspect samples of a sub-task's items. An item id given twice is refused naming the id and where
    the items were read (`source`, else the sub-task's `-O` files and folders the user gave, else its bundled
    data): Inspect's own "duplicate sample ids" names neither. (A run prefixes the sub-task's id.)"""
    seen: dict[str, int] = {}
    for item in items:
        seen[item.id] = seen.get(item.id, 0) + 1
    twice = [i for i, n in seen.items() if n > 1]
    if twice:
        files = [f"-O {k}={v}" for k, v in ctx.options.items()
                 if k in subtask.options and k.endswith(("_path", "_dir")) and v]
        where = source or (", ".join(files) if files else "its bundled data")
        raise TrustmhError(f"item id {twice[0]!r} appears {seen[twice[0]]} times in {where}"
                           + (f" ({len(twice)} ids repeated)" if len(twice) > 1 else "")
                           + "; each item needs an id of its own")
    return [item_to_sample(i) for i in items]


def item_to_sample(item: Item) -> Sample:
    messages: list[Any] = []
    for turn in item.history or []:
        cls = ChatMessageAssistant if turn["role"] == "assistant" else ChatMessageUser
        messages.append(cls(content=turn["content"]))
    messages.append(ChatMessageUser(content=item.prompt))
    return Sample(id=item.id, input=messages, target=target_text(item.target), metadata={ITEM_KEY: item.to_dict()})


def target_text(target: Any) -> str:
    """The gold answer as Inspect View shows it (TARGET); "" where the sub-task has none (judged replies)."""
    if target is None:
        return ""
    return target if isinstance(target, str) else json.dumps(target, ensure_ascii=False)


# Where sub-tasks keep the answer they read from a reply, in order of preference (Inspect View's ANSWER).
ANSWER_KEYS = ("parsed", "pred", "choice", "label", "level", "rating", "verdict", "list")


def answer_text(score: dict[str, Any]) -> str:
    for key in ANSWER_KEYS:
        if score.get(key) is not None:
            value = score[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "" if score.get("valid", True) else "(invalid: no answer could be read)"


def explanation_text(score: dict[str, Any], judge_raw: dict[str, str]) -> str:
    """Why the sample scored as it did: the judge's rationale or its raw reply, else the rule."""
    for key in ("rationale", "explanation"):
        if isinstance(score.get(key), str) and score[key]:
            return score[key]
    if judge_raw:
        return "\n\n".join(f"[{name}] {text}" for name, text in judge_raw.items())
    return "scored by rule"


@solver
def generate_with_reask(subtask: Subtask, ctx: RunContext) -> Solver:
    """The model under test's reply to the item, re-asked with the format reminder while it does not parse
    (`steps.generate_and_reask`); each attempt is one Inspect generate (`calls.generate_once`)."""

    cap = capped(subtask.generation(ctx).max_tokens, ctx)  # each call's reply limit, for its budget reservation

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        budget = active_budget()
        if budget is not None:
            budget.check()
        asked = False
        answer = answer_format(subtask, item_from_metadata(state.metadata), ctx)

        async def ask(reminder: str | None) -> str:
            nonlocal state, asked
            asked = True
            if reminder is not None:
                state.messages.append(ChatMessageUser(content=reminder))
            state = await generate_once(state, generate, ctx, max_tokens=cap, answer_format=answer)
            return state.output.completion

        response, reasks = await generate_and_reask(subtask, item_from_metadata(state.metadata), ctx, ask)
        state.metadata["reasks"] = reasks
        if not asked:  # the item carried its reply (`steps.stored_reply`): no model answered
            state.output = ModelOutput.from_content(model="none", content=response)
        return state

    return solve


def judge_asker(ctx: RunContext) -> AskJudge:
    """One attempt of a judge request on the run's Inspect models (`steps.AskJudge`): an ensemble member's
    `grader` role, or the request's own judge (MentalBench's ensembles, the privacy proxy), equally bounded;
    each model looked up once per asker (one reply's judging)."""
    models: dict[str | int, Model] = {}

    def model_for(req: JudgeRequest, member: int | None) -> Model:
        key: str | int = member if member is not None else (req.model or "")
        if key not in models:
            models[key] = (judge_model(ctx, member) if member is not None else judge_model(ctx) if not req.model
                           else get_model(req.model, config=bounded_config(ctx, temperature=0.0, seed=ctx.seed)))
        return models[key]

    async def ask(req: JudgeRequest, member: int | None, attempt: int) -> str:
        proxy = member is None and req.model is not None and req.model == ctx.options.get("privacy_proxy_model")
        return await judge_once(model_for(req, member), req, ctx, attempt, role="proxy" if proxy else "judge")

    return ask


def trustmh_scorer(subtask: Subtask, ctx: RunContext) -> Any:
    @scorer(metrics=[primary_metric(subtask, ctx)], name=SCORER_NAME)
    def make() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            item = item_from_metadata(state.metadata)
            response = state.output.completion
            # the judges are looked up inside the eval, where its model roles are bound
            outputs = await judge_outputs(subtask, item, response, ctx, judge_asker(ctx)) if ctx.has_judge else None
            record = item_record(subtask, item, response, outputs, ctx, epoch=state.epoch,
                                 reasks=int(state.metadata.get("reasks", 0)), finish_reason=state.output.stop_reason,
                                 extra={"model_reported": state.output.model, USAGE_KEY: sample_usage(),
                                        **judge_reported_extra()})
            return Score(value=inspect_display_value(record.score), answer=answer_text(record.score),
                         explanation=explanation_text(record.score, record.judge_raw or {}),
                         metadata={"record": record.to_dict()})

        return score

    return make()


def build_task(subtask_id: str, ctx: RunContext) -> Task:
    """The Inspect Task for one sub-task under one run context."""
    subtask = get_subtask(subtask_id)
    reason = subtask.not_computed_reason(ctx)
    if reason is not None:
        raise TrustmhError(f"{subtask.id}: {reason}")
    items = subtask.items(ctx)
    if not items:
        raise TrustmhError(f"{subtask.id}: no items to evaluate")
    gen = subtask.generation(ctx)
    config = GenerateConfig(temperature=gen.temperature, max_tokens=capped(gen.max_tokens, ctx),
                            top_p=gen.top_p, seed=ctx.seed)
    info = BY_ID[subtask.id]

    if isinstance(subtask, ConversationSubtask):

        solver, scorer_ = play_conversation(subtask, ctx), conversation_scorer(subtask, ctx)
    else:
        solver, scorer_ = generate_with_reask(subtask, ctx), trustmh_scorer(subtask, ctx)
    return Task(
        name=info.task_name,
        dataset=MemoryDataset(samples(subtask, items, ctx), name=subtask.id),
        solver=solver,
        scorer=scorer_,
        config=config,
        epochs=gen.epochs,
        metadata={"trustmh_subtask": subtask.id, "trustmh_context": context_to_dict(ctx)},
    )


# A task's metadata key naming the sub-task whose anchor items it judges (`run/anchors.py`): its records are
# the judge's anchor verdicts, not the sub-task's results.
ANCHORS_OF = "trustmh_anchors_of"


def task_key(metadata: dict[str, Any] | None) -> str:
    """What a task (or its log, by its metadata) holds: its sub-task's id, or `anchors:<id>` for the anchor
    items of that sub-task's judge (its usage rows and its samples are kept under that key)."""
    meta = metadata or {}
    return str(meta.get("trustmh_subtask") or f"anchors:{meta.get(ANCHORS_OF)}")


def fixed_reply_task(subtask: Subtask, items: list[Item], ctx: RunContext, name: str, *,
                     anchors: bool = False) -> Task:
    """The Inspect Task of a certification (`RunSpec.reference`), or of a sub-task's anchor items (`anchors`):
    the items carry their fixed replies (`skip_generation`), so the sub-task's own scorer only asks and scores
    its judge, as in a run."""
    slug = subtask.id.replace("/", "_")
    role = {ANCHORS_OF: subtask.id} if anchors else {"trustmh_subtask": subtask.id}
    return Task(name=f"anchors_{slug}" if anchors else f"certify_{slug}",
                dataset=MemoryDataset(samples(subtask, items, ctx, source=name), name=name),
                solver=generate_with_reask(subtask, ctx), scorer=trustmh_scorer(subtask, ctx),
                metadata={**role, "trustmh_context": context_to_dict(ctx)})


def context_to_dict(ctx: RunContext) -> dict[str, Any]:
    return asdict(ctx)


def context_from_dict(d: dict[str, Any]) -> RunContext:
    """The RunContext a task's metadata carries (`context_to_dict`), as Inspect's log holds it."""
    judge, patient = d["judge"], d.get("patient")
    # a log of an older trustmh lacks the later fields (their defaults), and names a lone judge by `model` only
    plain = {k: d[k] for k in PLAIN_CONTEXT_FIELDS if k in d}
    execution = Execution(**{k: d[k] for k in EXECUTION_CONTEXT_FIELDS if k in d})
    # a spec given whole (`run/direct.py`), so that the context is made as a run's is
    return direct_spec(**plain, judges=judge.get("members") or ([judge["model"]] if judge.get("model") else []),
                       judge_validated=judge["validated"], execution=execution,
                       patient=Patient(models=tuple(patient["models"]), source=patient["source"]) if patient
                       else None).context()


# The RunContext fields `context_to_dict` writes as they are (the judge, the patient and the call settings, which
# belong to the spec's `Execution`, are rebuilt).
PLAIN_CONTEXT_FIELDS = ("mode", "seed", "suite", "limit", "options", "n_boot", "model", "ensemble", "epochs")
EXECUTION_CONTEXT_FIELDS = ("timeout", "max_retries", "cache")
