"""No number that flatters, for both kinds of invalid (docs/results.md#invalid), in every sub-task of the
catalogue, the TrustMH-Bench suite and MentalBench alike: a model whose every reply is unusable gets at most its
worst case, said as such (the model's invalid counts against it); a judge that writes only garbage measures
nothing (the judge's invalid is not computed, "judge unreadable"). Each
sub-task is driven by the reference driver (`trustmh.offline`, `trustmh.multiturn`) on the items it has
offline: the starter suite's, the synthetic publisher fixtures for the three read only from publishers' files."""

from __future__ import annotations

from typing import Any

import pytest

from fixture_paths import FIXTURES
from trustmh.catalogue import catalogue
from trustmh.core import JudgeInfo, Patient, RunContext, Subtask, SubtaskResult
from trustmh.invalid import EVERY_REPLY_UNUSABLE, JUDGE_UNREADABLE
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
def test_an_all_invalid_model_gets_only_its_worst_case(cls: Any) -> None:
    """The model's invalid: every reply unusable counts against the model. A figure with status ok is the
    scale's worst end and says every reply was unusable; else the sub-task has no figure at all."""
    sub = cls()
    ctx = _ctx(cls.id, _suite_of(cls))
    assert sub.not_computed_reason(ctx) is None  # it runs: its items are here offline
    result = _run(sub, ctx)
    assert result.status != "ok" or (_at_worst(sub, ctx, result), EVERY_REPLY_UNUSABLE in result.metrics) == (
        True, True), f"{cls.id}: status ok with value {result.value}, metrics {sorted(result.metrics)[:8]}"


def _at_worst(sub: Subtask, ctx: RunContext, result: SubtaskResult) -> bool:
    """The value is the worst anchor or past it (an accuracy of 0 below chance): never a flattering figure."""
    worst = sub.anchors[ctx.mode][0] if ctx.mode in sub.anchors else None
    if worst is None or result.value is None:
        return result.value == worst
    return result.value <= worst if sub.direction(ctx.mode) == "higher" else result.value >= worst


@pytest.mark.parametrize("cls", EVERY_SUBTASK, ids=lambda c: c.id)
def test_a_readable_non_answer_is_never_better_than_the_worst_anchor(cls: Any) -> None:
    """A reply that says nothing ("zzz") is readable where a rule scores it (a crisis referral that names no
    line fails): there a figure may be computed, but only at the scale's worst end, never one that flatters."""
    sub = cls()
    ctx = _ctx(cls.id, _suite_of(cls))
    result = _run(sub, ctx, "zzz")
    assert result.status != "ok" or _at_worst(sub, ctx, result), f"{cls.id}: status ok with value {result.value}"


READABLE = "I hear how hard this is. You deserve support; please reach out to someone you trust."
JUDGED = [cls for cls in EVERY_SUBTASK if cls.judge_use in ("yes", "rule_fallback")]
# their own reason names the judge's unreadable output already, in the words of their unit
OWN_WORDS = {"mentalbench/generation": "no attribute has a valid judge score",
             "conversation/simulated_patient": "no conversation with a valid rubric"}


@pytest.mark.parametrize("cls", JUDGED, ids=lambda c: c.id)
def test_a_judge_that_writes_only_garbage_measures_nothing(cls: Any) -> None:
    """The judge's invalid: a readable reply whose every judge mark is unreadable is no measurement of the
    model. The sub-task is not computed with "judge unreadable", unless a rule scored it (then a figure at
    its worst end at most: the rule, not the judge, decided)."""
    sub = cls()
    ctx = _ctx(cls.id, _suite_of(cls))
    result = _run(sub, ctx, READABLE)
    if result.status == "ok":
        assert _at_worst(sub, ctx, result), f"{cls.id}: status ok with value {result.value}"
    else:
        assert str(result.reason).startswith(OWN_WORDS.get(cls.id, JUDGE_UNREADABLE)), f"{cls.id}: {result.reason}"
