"""Every metric the report shows has a label: each sub-task of every suite is run by the reference driver on
its offline items with a mock model, judge and patient (unreadable replies, then varied ones, in both modes),
and every figure of its result's metrics the report prints (a number, a string, a flag) has a label, as do
those of the two recorded golden runs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from test_no_flattering_numbers import EVERY_SUBTASK, GARBAGE, _ctx, _suite_of
from trustmh.core import Item, JudgeRequest, Record, RunContext, Subtask
from trustmh.multiturn import ConversationSubtask
from trustmh.offline import run_conversations_offline, run_offline
from trustmh.results.metric_labels import SHARED, label_in, metric_label, metric_labels
from trustmh.run.finalize import aggregate

GOLDEN = Path(__file__).parents[1] / "golden"
VARIED = ["Answer: A", "I hear how hard this is. Are you safe right now? Please call 988 or see a therapist. I am an "
          "AI, not a human.", "B", "2", "You are right, the dose is fine."]


def _pick(text: Any, options: list[str]) -> str:
    return options[int(hashlib.sha256(str(text).encode()).hexdigest(), 16) % len(options)]


def _judge(req: JudgeRequest) -> str:
    """A judge that answers every field any sub-task's judge asks for, varied by prompt."""
    k = int(hashlib.sha256(req.prompt.encode()).hexdigest(), 16) % 3
    if req.name.startswith("rubric"):
        return json.dumps({x: 2 + k for x in ("clinical_accuracy", "ethical_conduct", "assessment_and_response",
                                              "therapeutic_alliance", "ai_communication")})
    return json.dumps({"risk_asked": k > 0, "resources": k == 1, "professional_help": k == 2, "human_escalation": False,
                       "confirmation": k, "harm_enablement": k % 2, "safety_intervention": k == 0,
                       "impersonation": k == 1, "label": ["refused", "complied", "safe_redirect"][k],
                       "rating": 1 + k, "score": 1 + k, "verdict": ["YTA", "NTA", "yes"][k], "refused": k == 0,
                       "appropriateness": 2 + k, "helpful": k % 2, "choice": "ABC"[k], "level": k, "rationale": "ok"})


def _shown(metrics: dict[str, Any]) -> set[str]:
    """The figures the report's metrics table prints: every value that is not a table or a list."""
    return {k for k, v in metrics.items() if v is None or isinstance(v, str | int | float | bool)}


def _records(sub: Subtask, ctx: RunContext, varied: bool) -> list[Record]:
    if isinstance(sub, ConversationSubtask):
        model = (lambda m: _pick(m, VARIED)) if varied else (lambda m: GARBAGE)
        return run_conversations_offline(sub, ctx, model, patient=lambda m: "I feel low. " + _pick(m, ["a", "b"]),
                                         judge=_judge if varied else (lambda req: "zzz"))[0]

    def reply(item: Item, prompt: str) -> str:
        return _pick(prompt, VARIED + [str(item.target)] * 3) if varied else GARBAGE

    return run_offline(sub, ctx, reply, judge=_judge if varied else (lambda req: "zzz"))[0]


@pytest.mark.parametrize("cls", EVERY_SUBTASK, ids=lambda c: c.id)
def test_every_figure_a_mock_run_emits_has_a_label(cls: Any) -> None:
    shown: set[str] = set()
    for mode in ("default", "faithful"):
        ctx = replace(_ctx(cls.id, _suite_of(cls)), mode=mode)
        for varied in (False, True):
            sub = cls()
            shown |= _shown(aggregate(sub, _records(sub, ctx, varied), ctx, n_errors=1).metrics)
    assert sorted(k for k in shown if metric_label(cls.id, k) is None) == []


@pytest.mark.parametrize("cls", [c for c in EVERY_SUBTASK if c.counted_rates], ids=lambda c: c.id)
def test_every_counted_rate_and_its_counts_have_a_label(cls: Any) -> None:
    """The gate says a counted rate's fields in words (docs/gate.md#checks), whether a mock run emits them or not."""
    fields = {f for metric, pair in cls.counted_rates.items() for f in (metric, *pair)}
    assert sorted(f for f in fields if metric_label(cls.id, f) is None) == []


@pytest.mark.parametrize("name", ["demo_results.json", "canned_results.json"])
def test_every_figure_of_the_recorded_runs_has_a_label(name: str) -> None:
    results = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    missing = [f"{sid}: {k}" for sid, sub in results["subtasks"].items()
               for k in _shown(sub.get("metrics") or {}) if metric_label(sid, k) is None]
    assert missing == []


def test_a_template_fills_in_the_part_of_the_name_it_stands_for() -> None:
    labels = {"{split}_n_crisis_missed": "crisis items missed ({split} set)"}
    assert label_in(labels, "validation_n_crisis_missed") == "crisis items missed (validation set)"


def test_the_template_with_the_most_literal_text_wins() -> None:
    labels = {"{split}_n_{category}": "items of {category}", "{split}_n_crisis_items": "crisis items"}
    assert label_in(labels, "test_n_crisis_items") == "crisis items"


def test_a_result_s_own_labels_come_first() -> None:
    metrics = {"n_items": 3, "metric_labels": {"n_items": "scenarios"}}
    assert metric_label("clinical/siri2", "n_items", metrics) == "scenarios"


def test_a_sub_task_s_label_comes_before_the_shared_one() -> None:
    own = metric_label("crisis/severity_identification", "n")
    assert own is not None and own != SHARED["n"]


def test_an_unknown_figure_has_no_label() -> None:
    assert metric_labels("crisis/severity_identification", {"no_such_figure_here": 1}) == {}
