"""The reference driver of a sub-task: every step of a run, in plain Python, without Inspect.

`core.Subtask` is the contract; this module drives it exactly as the Inspect glue (`trustmh.run.tasks`) does,
so tests, rescoring of outputs produced elsewhere and readers of the code have one plain account of what a
run does with each item: generate, re-ask with the format reminder while the reply does not parse, judge
(every ensemble member, each request re-asked by the one judge loop), score and aggregate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from trustmh.core import (
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    make_record,
    max_reasks,
)
from trustmh.judges.ensemble import fans_out, judged_score
from trustmh.judges.reask import ask_until_valid_sync


def run_offline(subtask: Subtask, ctx: RunContext, respond: Callable[[Item, str], str],
                judge: Callable[[JudgeRequest], str] | None = None,
                items: list[Item] | None = None) -> tuple[list[Record], SubtaskResult]:
    """Drive a sub-task without Inspect: the same steps as the Inspect glue, in plain Python.

    `respond(item, prompt)` returns the model's reply to a prompt (the item's prompt, or the format
    reminder on a re-ask); `judge(request)` returns the judge's raw text (for an ensemble, `request.model`
    names the member). Used by tests, by rescoring of outputs produced elsewhere, and as the reference for
    what the Inspect glue must do.
    """
    records: list[Record] = []
    for item in items if items is not None else subtask.items(ctx):
        for epoch in range(1, subtask.generation(ctx).epochs + 1):
            skip = bool(item.metadata.get("skip_generation"))  # a reply supplied with the item, to be judged
            response = "" if skip else respond(item, item.prompt)
            reasks = 0
            while (subtask.format_reminder and not skip and reasks < max_reasks(ctx.options)
                   and not subtask.parse_valid(item, response, ctx)):
                response = respond(item, subtask.format_reminder)
                reasks += 1
            outputs: dict[str, dict[str, str]] | None = None
            if judge is not None and ctx.has_judge:
                requests = subtask.judge_requests(item, response, ctx)
                members: list[str | None] = list(ctx.judges) if fans_out(requests, ctx) else [None]
                outputs = {}
                for member in members:
                    got: dict[str, str] = {}
                    for req in requests:
                        req = req if member is None else replace(req, model=member)
                        got[req.name] = ask_until_valid_sync(lambda _attempt, r=req: judge(r), req.validate)
                    outputs[member or ctx.judge.model or "judge"] = got
            score, judge_raw = judged_score(subtask, item, response, outputs, ctx)
            records.append(make_record(subtask, item, response, score, epoch=epoch, judge_raw=judge_raw,
                                       extra={"reasked": reasks > 0, "reasks": reasks}))
    return records, subtask.aggregate(records, ctx)
