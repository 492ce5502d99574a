"""Each sub-task's answer schema (`Subtask.answer_schema`) describes replies its own parser reads: a reply the
bundled model is held to (`-O answer_schema=1`, the offline demo's) must never be counted unusable."""

from __future__ import annotations

import json

import pytest

from trustmh.catalogue import catalogue, get_subtask
from trustmh.core import JudgeInfo, RunContext, Subtask
from trustmh.run.calls import answer_format
from trustmh.run.config import demo_trims

DECLARING = [cls.id for cls in catalogue().subtasks if cls.answer_schema is not Subtask.answer_schema]
STARTER = RunContext(suite="starter", mode="default", options={"robustness_grid": "quick"})


def replies_held_to(schema: dict | None) -> list[str]:
    """Every reply the schema allows that changes one field's value at a time (the others at their first); none
    for a sub-task whose replies stay free text (a robustness wrapper of a judged sub-task)."""
    if schema is None:
        return []
    first = {key: prop["enum"][0] for key, prop in schema["properties"].items()}
    return [json.dumps({**first, key: value}) for key, prop in schema["properties"].items() for value in prop["enum"]]


def test_the_choice_sub_tasks_declare_an_answer_schema() -> None:
    assert {"crisis/crisis_identification", "reliability/knowledge", "reliability/emotion_recognition",
            "robustness/psychological_diagnosis"} <= set(DECLARING)


@pytest.mark.parametrize("subtask_id", DECLARING)
def test_every_reply_the_schema_allows_parses(subtask_id: str) -> None:
    subtask = get_subtask(subtask_id)
    item = subtask.items(STARTER)[0]
    unread = [reply for reply in replies_held_to(subtask.answer_schema(item, STARTER))
              if not subtask.parse_valid(item, reply, STARTER)]
    assert unread == []


def test_a_gguf_model_is_held_to_the_schema_under_the_option() -> None:
    subtask = get_subtask("reliability/knowledge")
    ctx = RunContext(suite="starter", model="gguf/smollm2", options={"answer_schema": "1"})
    assert answer_format(subtask, subtask.items(ctx)[0], ctx) is not None


def test_a_hosted_model_is_never_sent_the_schema() -> None:
    subtask = get_subtask("reliability/knowledge")
    ctx = RunContext(suite="starter", model="openai/gpt-4o", options={"answer_schema": "1"})
    assert answer_format(subtask, subtask.items(ctx)[0], ctx) is None


def test_without_the_option_the_reply_stays_free_text() -> None:
    subtask = get_subtask("reliability/knowledge")
    ctx = RunContext(suite="starter", model="gguf/smollm2")
    assert answer_format(subtask, subtask.items(ctx)[0], ctx) is None


def test_the_offline_demo_holds_answers_to_their_format() -> None:
    assert demo_trims("gguf/smollm2", "starter", JudgeInfo(model="gguf/smollm2", validated=False))["answer_schema"] == 1
