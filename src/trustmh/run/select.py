"""What a run evaluates: the resolved spec's sub-tasks, planned before any model call (`plan_run`).

Each chosen sub-task becomes an Inspect task (its data is loaded here), a result known already (not
implemented, not computed and why, a bad input), or a sub-task aggregated from another's records (`derived`).
A sub-task may also say something about the run before it starts (`Subtask.warnings_before_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trustmh.catalogue import get_subtask, is_implemented
from trustmh.core import Direction, Item, RunContext, Subtask, SubtaskResult, TrustmhError, notice
from trustmh.data.locate import reset_resolved
from trustmh.data.publisher import PublisherMissing, how_to_supply, repo_name
from trustmh.run.anchors import anchor_items, anchored
from trustmh.run.calls import capped, item_from_metadata
from trustmh.run.config import RunSpec
from trustmh.run.plan_figures import PlanEstimate
from trustmh.run.tasks import build_task, fixed_reply_task


@dataclass
class RunPlan:
    """What a run will do, decided before any model call: the spec, its context, the sub-tasks and their Inspect
    tasks, and the results already known (not computed, errors). Shared by `run` and `merge`."""

    spec: RunSpec
    ctx: RunContext
    results: dict[str, SubtaskResult] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    item_order: dict[str, dict[str, int]] = field(default_factory=dict)
    subtasks: dict[str, Subtask] = field(default_factory=dict)
    derived: dict[str, Subtask] = field(default_factory=dict)  # aggregated from another's records
    hidden: set[str] = field(default_factory=set)  # run only for a derived sub-task: not published
    generation: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    n_errors: dict[str, int] = field(default_factory=dict)  # errored samples per sub-task
    stalls: list[dict[str, Any]] = field(default_factory=list)  # endpoints the progress line named as not answering
    error_messages: dict[str, list[str]] = field(default_factory=dict)  # their distinct messages per sub-task
    planned: PlanEstimate | None = None  # `trustmh.run.estimate.estimate` of this plan (plan.json)
    # per watched sub-task, its anchor items' verdicts once judged (`run/anchors.py`; `collect` fills them)
    anchors: dict[str, dict[str, Any]] = field(default_factory=dict)
    anchor_records: dict[str, list[Any]] = field(default_factory=dict)  # their records (the calls' usage)
    # per result of a sub-task played in rounds (`--until-decided`, `run/rounds.py`): its stop and its checks
    sequential: dict[str, dict[str, Any]] = field(default_factory=dict)


def plan_run(spec: RunSpec) -> RunPlan:
    """The run context and the Inspect tasks of a resolved run (data is loaded here; no model is called)."""
    ctx = spec.context()
    plan = RunPlan(spec=spec, ctx=ctx)
    if spec.patient is not None:
        notice(f"simulated patient: {spec.patient.label} ({spec.patient.source})")
    reset_resolved()
    missing: dict[str, tuple[PublisherMissing, list[str]]] = {}  # repository -> (why, the sub-tasks it removes)
    queue = list(spec.subtasks)
    while queue:
        sid = queue.pop(0)
        if sid in plan.subtasks or sid in plan.results:
            continue
        if not is_implemented(sid):
            plan.results[sid] = SubtaskResult.not_computed("not implemented yet", "higher")
            continue
        subtask = get_subtask(sid)
        direction = subtask.direction(spec.mode)
        try:
            reason = subtask.not_computed_reason(ctx)
        except PublisherMissing as exc:
            _publisher_missing(plan, missing, sid, exc, direction)
            continue
        if reason is not None:
            plan.results[sid] = SubtaskResult.not_computed(reason, direction)
            notice(f"{sid}: not computed ({reason})")
            continue
        if subtask.derived_from is not None:
            plan.derived[sid] = subtask
            if subtask.derived_from not in spec.subtasks:
                plan.hidden.add(subtask.derived_from)
                queue.append(subtask.derived_from)
            continue
        try:
            task = build_task(sid, ctx)
            plan.tasks.append(task)
            plan.item_order[sid] = {str(sample.id): i for i, sample in enumerate(task.dataset)}
            gen = subtask.generation(ctx)
            plan.generation[sid] = {"temperature": gen.temperature, "top_p": gen.top_p, "samples": gen.epochs,
                                    "max_tokens": capped(gen.max_tokens, ctx), "seed": ctx.seed,
                                    # the run's --epochs, where the sub-task repeats its items
                                    **({"epochs": ctx.epochs} if subtask.repeats else {})}
        except PublisherMissing as exc:
            _publisher_missing(plan, missing, sid, exc, direction)
            continue
        except TrustmhError as exc:
            plan.errors.append(f"{sid}: {exc}")
            plan.results[sid] = SubtaskResult.not_computed(f"error: {exc}", direction)
            notice(f"{sid}: ERROR {exc}")
            continue
        plan.subtasks[sid] = subtask
        # every judge is watched on its anchors, certified or not: the certificate's own anchors are compared
        # when there is one, and `trustmh compare` compares two runs' anchors when there is none
        # (docs/judge-probes.md#drift)
        add_anchors(plan, subtask, task)
        for warning in subtask.warnings_before_run(ctx):
            notice(f"warning: {warning}")
    for exc, sids in missing.values():
        notice(f"{repo_name(exc.dataset)} not available here ({exc.detail}): {', '.join(sids)} not computed; "
               f"{how_to_supply(exc.dataset, exc.flag)}")
    if not plan.tasks and plan.errors and not plan.derived:
        # nothing could be evaluated: bad input, reported before any model call, and no result written
        raise TrustmhError("; ".join(plan.errors))
    return plan



def _publisher_missing(plan: RunPlan, missing: dict[str, tuple[PublisherMissing, list[str]]], sid: str,
                       exc: PublisherMissing, direction: Direction) -> None:
    """A sub-task whose publisher's repository cannot be had: not computed, and said once per repository."""
    plan.results[sid] = SubtaskResult.not_computed(f"publisher's repository not available: {exc}", direction)
    missing.setdefault(exc.dataset, (exc, []))[1].append(sid)


def plan_reference(spec: RunSpec, subtask: Subtask, items: list[Item], name: str, *,
                   anchors: bool = False) -> RunPlan:
    """The plan of a certification (`spec.reference`): one task judging the reference's fixed replies with
    `subtask`'s judge (the sub-task itself, or what asks its judge of a stored item), no generation; with
    `anchors`, the sub-task's anchor items too (the certificate keeps their verdicts)."""
    ctx = spec.context()
    task = fixed_reply_task(subtask, items, ctx, name)
    plan = RunPlan(spec=spec, ctx=ctx, tasks=[task], subtasks={subtask.id: subtask},
                   item_order={subtask.id: {str(sample.id): i for i, sample in enumerate(task.dataset)}})
    if anchors:
        add_anchors(plan, subtask)
    return plan


def add_anchors(plan: RunPlan, subtask: Subtask, task: Any = None) -> None:
    """The sub-task's anchor items as one more task of the plan, where its judge is watched (`run/anchors.py`;
    `task`: the sub-task's own task in this plan, if any)."""
    if anchored(subtask, plan.ctx):
        # without a limit the sub-task's task holds every item: the anchors are picked from them, not built again
        every_item = ([item_from_metadata(sample.metadata) for sample in task.dataset]
                      if task is not None and plan.ctx.limit is None else None)
        try:
            items = anchor_items(subtask, plan.ctx, every_item)
        except TrustmhError as exc:  # its data is not here (a certification on a reference alone): no anchors
            notice(f"{subtask.id}: no anchor items ({exc}); judge drift is not watched")
            return
        if items:
            plan.tasks.append(fixed_reply_task(subtask, items, plan.ctx, f"anchors of {subtask.id}", anchors=True))
