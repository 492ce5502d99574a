"""No number that flatters: a model (and judge, and simulated patient) whose every reply is unreadable gets no
figure with status ok in any sub-task of the catalogue, the TrustMH-Bench suite and MentalBench alike. Each
sub-task is driven by the reference driver (`trustmh.offline`, `trustmh.multiturn`) on the items it has
offline: the starter suite's, the synthetic publisher fixtures for the three read only from publishers' files."""

from __future__ import annotations

from typing import Any

import pytest

from fixture_paths import FIXTURES
from trustmh.catalogue import catalogue
from trustmh.core import JudgeInfo, Patient, RunContext, Subtask, SubtaskResult
from trustmh.multiturn import ConversationSubtask
from trustmh.offline import run_conversations_offline, run_offline

GARBAGE = ""  # an empty reply: unreadable in every sub-task (the judge's and patient's "zzz" likewise)
# the three sub-tasks read only from publishers' files, pointed at the synthetic copies the tests ship
PUBLISHER_FILES = {"clinical/siri2": ("trustmh", {"siri2_dir": str(FIXTURES / "siri2")}),
                   "fairness/stigma": ("trustmh", {"moore_dir": str(FIXTURES / "moore_stigma")}),
                   "crisis/interjections": ("trustmh", {"moore_dir": str(FIXTURES / "moore_interjections" /
                                                                       "publisher")})}
EVERY_SUBTASK = [*catalogue().subtasks, *(t for tasks in catalogue().suite_tasks.values() for t in tasks)]


def _ctx(sid: str, suite: str) -> RunContext:
    suite, options = PUBLISHER_FILES.get(sid, ("starter" if suite == "trustmh" else suite, {}))
    return RunContext(suite=suite, n_boot=50, judge=JudgeInfo(model="loop/judge", validated=False),
                      patient=Patient(models=("loop/patient",), source="--patient"),
                      options={"reasks": "0", "mentalbench_starter": "1", **options})


def _run(sub: Subtask, ctx: RunContext, reply: str = GARBAGE) -> SubtaskResult:
    if isinstance(sub, ConversationSubtask):
        return run_conversations_offline(sub, ctx, lambda m: reply, patient=lambda m: "zzz",
                                         judge=lambda req: "zzz")[1]
    return run_offline(sub, ctx, lambda item, prompt: reply, judge=lambda req: "zzz")[1]


def _suite_of(cls: Any) -> str:
    return next((s for s, tasks in catalogue().suite_tasks.items() if cls in tasks), "trustmh")


@pytest.mark.parametrize("cls", EVERY_SUBTASK, ids=lambda c: c.id)
def test_an_all_invalid_model_gets_no_figure_with_status_ok(cls: Any) -> None:
    sub = cls()
    ctx = _ctx(cls.id, _suite_of(cls))
    assert sub.not_computed_reason(ctx) is None  # it runs: its items are here offline
    result = _run(sub, ctx)
    assert result.status != "ok", f"{cls.id}: status ok with value {result.value}"


@pytest.mark.parametrize("cls", EVERY_SUBTASK, ids=lambda c: c.id)
def test_a_readable_non_answer_is_never_better_than_the_worst_anchor(cls: Any) -> None:
    """A reply that says nothing ("zzz") is readable where a rule scores it (a crisis referral that names no
    line fails): there a figure may be computed, but only at the scale's worst end, never one that flatters."""
    sub = cls()
    ctx = _ctx(cls.id, _suite_of(cls))
    result = _run(sub, ctx, "zzz")
    worst = sub.anchors[ctx.mode][0] if ctx.mode in sub.anchors else None
    assert result.status != "ok" or result.value == worst, f"{cls.id}: status ok with value {result.value}"
