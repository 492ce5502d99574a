"""Inspect glue for conversation sub-tasks: play the turns, then judge the transcript. Thin by design.

The solver and the scorer walk the run's steps (`trustmh.steps.play_turns`, `judge_transcript`), as the
offline driver (`trustmh.offline.run_conversations_offline`) does with plain functions: for each turn the
patient speaks (a scripted line, or the `patient` role's model, bound by the run's timeout/retries and
cached: `calls.patient_once`), then the model under test answers through Inspect's `generate` (cached, so a
resumed run does not pay again: `calls.generate_once`); afterwards each judge request goes to the `grader`
role (temperature 0, seeded, exact JSON schema, re-asked until it validates: `calls.judge_once`) and the plain
`score_turns` scores the transcript. An empty line (patient) or reply (model under test) is asked again, up
to MAX_ATTEMPTS in all, each time under a cache entry of its own; one that stays empty is kept, and the
conversation counts as invalid (`multiturn.empty_turns`). The whole conversation is the sample's messages in
the Inspect log, and `Record.metadata["turns"]` in items.jsonl.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, Model, get_model
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from trustmh.core import JudgeRequest, RunContext
from trustmh.models import BUNDLED_MODEL
from trustmh.multiturn import ConversationSubtask, conversation_record, read_system_prompt
from trustmh.run.budget import active_budget
from trustmh.run.calls import (
    SCORER_NAME,
    bounded_config,
    capped,
    generate_once,
    item_from_metadata,
    judge_model,
    judge_once,
    patient_once,
    patient_role,
    primary_metric,
)
from trustmh.run.usage import USAGE_KEY, judge_reported_extra, sample_usage
from trustmh.steps import judge_transcript, play_turns

TURNS_KEY = "turns"
GREETING_KEY = "greeting"
# The patient writes short chat messages; a little sampling keeps its wording natural (seeded, cached).
PATIENT_TEMPERATURE = 0.7
PATIENT_MAX_TOKENS = 160
STARTER_PATIENT_MAX_TOKENS = 48  # the offline demo's patient: a sentence or two


def patient_model(ctx: RunContext, index: int = 0) -> Model:
    """The simulated patient: the `patient` role (bound by `trustmh run` from --patient; the index-th member of
    an ensemble is `patient_<index + 1>`), bounded and seeded."""
    names = list(ctx.patient.models) if ctx.patient else [BUNDLED_MODEL]
    index = index % len(names)
    return get_model(role=patient_role(index), default=names[index],
                     config=bounded_config(ctx, temperature=PATIENT_TEMPERATURE, seed=ctx.seed,
                                           max_tokens=STARTER_PATIENT_MAX_TOKENS if ctx.suite == "starter"
                                           else PATIENT_MAX_TOKENS))


@solver
def play_conversation(subtask: ConversationSubtask, ctx: RunContext) -> Solver:
    """The conversation's turns (`steps.play_turns`), each patient line and each reply one Inspect call
    (`calls.patient_once`, `calls.generate_once`); the whole conversation is the sample's messages."""
    system = read_system_prompt(ctx)
    model_label = ctx.model or "model"
    cap = capped(subtask.generation(ctx).max_tokens, ctx)  # each reply's limit, for its budget reservation
    patient_cap = STARTER_PATIENT_MAX_TOKENS if ctx.suite == "starter" else PATIENT_MAX_TOKENS

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        budget = active_budget()
        if budget is not None:
            budget.check()
        item = item_from_metadata(state.metadata)
        # the sample's input only names the conversation: the turns are built here, one by one
        state.messages = [ChatMessageSystem(content=system)] if system else []
        index = int(item.metadata.get("patient_index", 0))
        names = ctx.patient.models if ctx.patient else ()
        patient: Model | None = None  # made on the first simulated line: a scripted conversation needs none

        async def ask_patient(messages: list[dict[str, str]], attempt: int) -> tuple[str, str]:
            nonlocal patient
            patient = patient or patient_model(ctx, index)
            out = await patient_once(patient, messages, ctx, attempt, patient_cap)
            return out.completion, names[index % len(names)] if names else str(out.model or "patient")

        async def ask_reply(turns: list[dict[str, Any]], elapsed_seconds: float | None, attempt: int) -> str:
            nonlocal state
            if attempt == 1:
                # a scripted clock rides on the message for a product that accepts one (`http` provider)
                clock = None if elapsed_seconds is None else {"elapsed_seconds": elapsed_seconds}
                state.messages.append(ChatMessageUser(content=str(turns[-1]["content"]), metadata=clock))
            elif state.messages and state.messages[-1].role == "assistant":
                state.messages.pop()  # the empty reply: the same conversation is asked again
            state = await generate_once(state, generate, ctx, reask=attempt - 1, conversation=True, max_tokens=cap)
            greeting = (state.output.metadata or {}).get("greeting")
            if greeting and GREETING_KEY not in state.metadata:
                state.metadata[GREETING_KEY] = str(greeting)  # a product's first words (`http` provider)
            return state.output.completion

        state.metadata[TURNS_KEY] = await play_turns(subtask, item, ctx, ask_patient, ask_reply,
                                                     model_name=model_label)
        return state

    return solve


def _repeat_of(name: str) -> int:
    return int(name.rsplit("#", 1)[1]) if "#" in name else 1


def conversation_scorer(subtask: ConversationSubtask, ctx: RunContext) -> Any:
    @scorer(metrics=[primary_metric(subtask, ctx)], name=SCORER_NAME)
    def make() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            item = item_from_metadata(state.metadata)
            turns = list(state.metadata.get(TURNS_KEY) or [])
            outputs: dict[str, str] | None = None
            if ctx.has_judge:
                judge = judge_model(ctx)

                async def ask(req: JudgeRequest, member: int | None, attempt: int) -> str:
                    # the run's judge reads the transcript (a repeat, `name#r`, under cache entries of its own)
                    return await judge_once(judge, req, ctx, attempt, _repeat_of(req.name))

                outputs = await judge_transcript(subtask, item, turns, ctx, ask)
            record = conversation_record(subtask, item, turns, outputs, ctx, epoch=state.epoch,
                                         extra={"model_reported": state.output.model, USAGE_KEY: sample_usage(),
                                                **judge_reported_extra(),
                                                **({GREETING_KEY: state.metadata[GREETING_KEY]}
                                                   if GREETING_KEY in state.metadata else {})})
            valid = bool(record.score.get("valid", True))
            return Score(value=1.0 if valid else 0.0, answer=f"{len(turns) // 2} turns",
                         explanation="\n\n".join(f"[{k}] {v}" for k, v in (outputs or {}).items())
                         or "scored by rule", metadata={"record": record.to_dict()})

        return score

    return make()
