"""The steps of a run, each written once, in plain Python: what a run does with one item.

A single-turn item is generated and re-asked with the format reminder while its reply does not parse
(`generate_and_reask`), its reply judged by every ensemble member (`judge_outputs`) and scored into a record
(`item_record`). A conversation is played turn by turn (`play_turns`: the patient speaks, the model under test
answers, an empty line or reply asked again) and its transcript judged (`judge_transcript`). Every re-ask
goes through the one loop of `trustmh.judges.reask`.

The steps do not know who answers: they are handed `ask` callables. The Inspect solvers and scorers
(`trustmh.run.tasks`, `trustmh.run.conversation`) hand them Inspect-backed calls (`trustmh.run.calls`,
bounded, cached, budgeted); the offline drivers (`trustmh.offline`) hand them the plain functions of a test
or a rescore. So the loops a live run walks are the loops the fast tests walk.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from trustmh.core import Item, JudgeRequest, Record, RunContext, Subtask, make_record, max_reasks
from trustmh.judges.ensemble import fans_out, judged_score
from trustmh.judges.reask import ask_until_valid
from trustmh.multiturn import PATIENT_ROLE, SCRIPT_MODEL, ConversationSubtask, said_something, usable_requests
from trustmh.safe_text import safe_text

# The model under test, single turn: `reminder` None asks the item as it stands, else the format reminder is
# sent after the conversation so far. Returns the reply's text.
AskModel = Callable[[str | None], Awaitable[str]]
# One attempt (1, 2, …) of a judge request; `member` is the index of the run's ensemble member that judges it
# (`RunContext.judges`), None for the request's own judge (`JudgeRequest.model`, else the run's judge).
AskJudge = Callable[[JudgeRequest, int | None, int], Awaitable[str]]
# One attempt of the patient's next line, given the messages the patient model sees: (text, who said it).
AskPatient = Callable[[list[dict[str, str]], int], Awaitable[tuple[str, str]]]
# One attempt of the model under test's reply to the conversation so far (its last turn: the patient's line;
# `elapsed_seconds`: the scripted clock, None without one).
AskReply = Callable[[list[dict[str, Any]], float | None, int], Awaitable[str]]


def stored_reply(item: Item) -> str | None:
    """The reply an item carries to be judged (`skip_generation`: a human reference reply, a certification's
    or an anchor's fixed reply), else None: the model under test is asked."""
    if not item.metadata.get("skip_generation"):
        return None
    return str(item.metadata.get("stored_response") or "")


async def generate_and_reask(subtask: Subtask, item: Item, ctx: RunContext, ask: AskModel) -> tuple[str, int]:
    """(reply, re-asks): generate; while the reply does not parse, ask again with the sub-task's format reminder
    (at most `max_reasks`). An item that carries its reply is not generated."""
    stored = stored_reply(item)
    if stored is not None:
        return stored, 0
    response = await ask(None)
    reasks = 0
    while (subtask.format_reminder is not None and reasks < max_reasks(ctx.options)
           and not subtask.parse_valid(item, response, ctx)):
        response = await ask(subtask.format_reminder)
        reasks += 1
    return response, reasks


async def _until_valid(req: JudgeRequest, member: int | None, ask: AskJudge) -> str:
    return await ask_until_valid(lambda attempt: ask(req, member, attempt), req.validate)


async def judge_outputs(subtask: Subtask, item: Item, response: str, ctx: RunContext,
                        ask: AskJudge) -> dict[str, dict[str, str]]:
    """Raw judge outputs per judge (member name → request name → text), each request re-asked until it
    validates: every ensemble member judges every request, unless the sub-task names its judges itself."""
    requests = subtask.judge_requests(item, response, ctx)
    if fans_out(requests, ctx):
        return {member: {req.name: await _until_valid(replace(req, model=member), index, ask) for req in requests}
                for index, member in enumerate(ctx.judges)}
    return {ctx.judge.model or "judge": {req.name: await _until_valid(req, None, ask) for req in requests}}


def item_record(subtask: Subtask, item: Item, response: str, outputs: dict[str, dict[str, str]] | None,
                ctx: RunContext, *, epoch: int, reasks: int, finish_reason: str | None = None,
                extra: dict[str, Any] | None = None) -> Record:
    """The record of one judged (or rule-scored, `outputs` None) reply."""
    score, judge_raw = judged_score(subtask, item, response, outputs, ctx)
    return make_record(subtask, item, response, score, epoch=epoch, finish_reason=finish_reason,
                       judge_raw=judge_raw, extra={"reasked": reasks > 0, "reasks": reasks, **(extra or {})})


async def play_turns(subtask: ConversationSubtask, item: Item, ctx: RunContext, ask_patient: AskPatient,
                     ask_reply: AskReply, *, model_name: str) -> list[dict[str, Any]]:
    """The conversation's turns `[{role, content, model, turn, marks}]`: up to `n_turns` times the patient
    speaks (a scripted line, or the patient model's) and the model under test answers; an empty line or reply
    is asked again (the one re-ask loop), one that stays empty is kept (`multiturn.empty_turns`)."""
    turns: list[dict[str, Any]] = []
    for i in range(subtask.n_turns(item, ctx)):
        move = subtask.patient_turn(item, turns, ctx)
        if move.end:
            break
        if move.text is not None:
            said, who = move.text, SCRIPT_MODEL
        else:
            said_by: list[str] = []
            messages = list(move.messages or [])

            async def patient_line(attempt: int, messages: list[dict[str, str]] = messages,
                                   said_by: list[str] = said_by) -> str:
                text, speaker = await ask_patient(messages, attempt)
                said_by.append(speaker)
                return text

            said = safe_text(await ask_until_valid(patient_line, said_something))
            who = said_by[-1]
        turns.append({"role": PATIENT_ROLE, "content": said, "model": who, "turn": i, "marks": {}})
        elapsed = move.elapsed_seconds
        reply = await ask_until_valid(lambda attempt, elapsed=elapsed: ask_reply(turns, elapsed, attempt),
                                      said_something)
        turns.append({"role": "model", "content": safe_text(reply), "model": model_name, "turn": i, "marks": {}})
    return turns


async def judge_transcript(subtask: ConversationSubtask, item: Item, turns: list[dict[str, Any]],
                           ctx: RunContext, ask: AskJudge) -> dict[str, str]:
    """The judge's raw outputs about a finished conversation (request name → text), each request re-asked until
    it validates; none that reads an empty turn is sent (`multiturn.usable_requests`)."""
    requests = usable_requests(subtask.conversation_judge_requests(item, turns, ctx), turns)
    return {req.name: await _until_valid(req, None, ask) for req in requests}
