"""The offline drivers of a sub-task: a run's own steps, with plain functions in place of Inspect's models.

`run_offline` (single-turn) and `run_conversations_offline` (conversations) walk each item through the steps
the Inspect solvers and scorers walk (`trustmh.steps`: generate, re-ask with the format reminder while the
reply does not parse, judge every ensemble member, each request re-asked by the one loop, score; play the
turns, judge the transcript), and aggregate. Only who answers differs: the `respond`, `patient` and `judge`
functions a test or a rescore of outputs produced elsewhere gives, wrapped as the steps' `ask` callables.
Those functions are plain, so the steps never suspend and each driver runs them without an event loop
(`judges.reask.run_without_loop`): it works inside a running loop as outside one, at no loop's cost.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trustmh.core import Item, JudgeRequest, Record, RunContext, Subtask, SubtaskResult, TrustmhError
from trustmh.invalid import aggregate_records
from trustmh.judges.reask import run_without_loop
from trustmh.multiturn import ConversationSubtask, conversation_record, model_messages, read_system_prompt
from trustmh.steps import (
    AskJudge,
    generate_and_reask,
    item_record,
    judge_outputs,
    judge_transcript,
    play_turns,
)

Judge = Callable[[JudgeRequest], str]
Speaker = Callable[[list[dict[str, Any]]], str]


def _judge_asker(judge: Judge) -> AskJudge:
    """A plain `judge(request)` as the steps' judge: an ensemble member is named by the request's model."""

    async def ask(req: JudgeRequest, member: int | None, attempt: int) -> str:
        return judge(req)

    return ask


def run_offline(subtask: Subtask, ctx: RunContext, respond: Callable[[Item, str], str],
                judge: Judge | None = None,
                items: list[Item] | None = None) -> tuple[list[Record], SubtaskResult]:
    """Drive a sub-task through the run's steps without Inspect.

    `respond(item, prompt)` returns the model's reply to a prompt (the item's prompt, or the format
    reminder on a re-ask); `judge(request)` returns the judge's raw text (for an ensemble, `request.model`
    names the member). Used by tests and by rescoring of outputs produced elsewhere."""
    ask_judge = _judge_asker(judge) if judge is not None and ctx.has_judge else None

    async def drive() -> list[Record]:
        records: list[Record] = []
        for item in items if items is not None else subtask.items(ctx):
            async def ask(reminder: str | None, item: Item = item) -> str:
                return respond(item, item.prompt if reminder is None else reminder)

            for epoch in range(1, subtask.generation(ctx).epochs + 1):
                response, reasks = await generate_and_reask(subtask, item, ctx, ask)
                outputs = None if ask_judge is None else await judge_outputs(subtask, item, response, ctx,
                                                                              ask_judge)
                records.append(item_record(subtask, item, response, outputs, ctx, epoch=epoch, reasks=reasks))
        return records

    records = run_without_loop(drive())
    return records, aggregate_records(subtask, records, ctx)


def run_conversations_offline(subtask: ConversationSubtask, ctx: RunContext, respond: Speaker,
                              patient: Speaker | None = None, judge: Judge | None = None,
                              items: list[Item] | None = None, *, model_name: str = "model",
                              patient_name: str = "patient") -> tuple[list[Record], SubtaskResult]:
    """Play every item's conversation through the run's steps without Inspect: `respond(messages)` is the model
    under test, `patient(messages)` the patient model, `judge(request)` the judge (each re-asked up to
    MAX_ATTEMPTS)."""
    system = read_system_prompt(ctx)
    ask_judge = _judge_asker(judge) if judge is not None and ctx.has_judge else None

    async def ask_patient(messages: list[dict[str, str]], attempt: int) -> tuple[str, str]:
        if patient is None:
            raise TrustmhError(f"{subtask.id}: a simulated patient needs a patient model")
        return patient(messages), patient_name

    async def ask_reply(turns: list[dict[str, Any]], elapsed_seconds: float | None, attempt: int) -> str:
        asked: list[dict[str, Any]] = list(model_messages(turns, system))
        if elapsed_seconds is not None:  # as the `http` provider sends it: on the newest user message
            asked[-1] = {**asked[-1], "elapsed_seconds": elapsed_seconds}
        return respond(asked)

    async def drive() -> list[Record]:
        records: list[Record] = []
        for item in items if items is not None else subtask.items(ctx):
            turns = await play_turns(subtask, item, ctx, ask_patient, ask_reply, model_name=model_name)
            outputs = None if ask_judge is None else await judge_transcript(subtask, item, turns, ctx, ask_judge)
            records.append(conversation_record(subtask, item, turns, outputs, ctx))
        return records

    records = run_without_loop(drive())
    return records, aggregate_records(subtask, records, ctx)
