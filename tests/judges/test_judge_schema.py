"""Judge schemas (`JudgeRequest.schema`) match what each request's parser accepts.

Under JSON mode the in-process judge can only write what the schema allows, so a schema that names a key
the parser does not read, or allows a value it rejects, turns every judgement invalid. Each sub-task's
requests are built from starter items and checked against replies constructed from the schema alone.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fixture_paths import FIXTURES
from trustmh import catalogue
from trustmh.core import JudgeInfo, JudgeRequest, RunContext
from trustmh.judges.schema import json_object_schema
from trustmh.multiturn import ConversationSubtask
from trustmh.pillars.crisis.data import LABELS as CRISIS_LABELS
from trustmh.pillars.crisis.escalation import human_triple_requests
from trustmh.run.calls import JUDGE_JSON, judge_response_schema
from trustmh.starter import starter_path

REPLY = "I hear you, that sounds hard. Answer: A"
# Requests whose answer is free text, not JSON (the faithful privacy proxy question).
UNSCHEMED = {"proxy"}


# ------------------------------------------------------------------------------------------- helper

def test_helper_shape() -> None:
    s = json_object_schema(integers={"score": (1, 3)}, enums={"label": ["a", "b"]}, booleans=["flag"],
                           strings=["why"], optional=["why"])
    assert s == {
        "type": "object",
        "properties": {"score": {"type": "integer", "enum": [1, 2, 3]},
                       "label": {"type": "string", "enum": ["a", "b"]},
                       "flag": {"type": "boolean"},
                       "why": {"type": "string", "maxLength": 400}},
        "required": ["score", "label", "flag"],
        "additionalProperties": False,
    }
    assert list(s["properties"])[-1] == "why"  # free text last


@pytest.mark.parametrize("kwargs", [
    {"integers": {"a": (3, 1)}},
    {"enums": {"a": []}},
    {"integers": {"a": (1, 2)}, "optional": ["b"]},
    {"integers": {"a": (1, 2)}, "strings": ["a"]},
])
def test_helper_rejects_bad_specs(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        json_object_schema(**kwargs)


def test_glue_uses_the_request_schema() -> None:
    schema = json_object_schema(integers={"q": (1, 5)}, strings=["why"], optional=["why"])
    req = JudgeRequest("q", "rate", validate=bool, schema=schema)
    got = judge_response_schema(req).json_schema.model_dump(exclude_none=True)
    assert got == schema  # nested properties, enums and additionalProperties survive the round trip
    assert judge_response_schema(JudgeRequest("q", "rate", validate=bool)) is JUDGE_JSON


def test_judge_text_chars_shortens_free_text_only() -> None:
    """`-O judge_text_chars=N` (the offline demo) bounds free-text fields; scores and enums are untouched."""
    schema = json_object_schema(integers={"q": (1, 5)}, enums={"v": ["yes", "no"]}, strings=["why"])
    req = JudgeRequest("q", "rate", validate=bool, schema=schema)
    got = judge_response_schema(req, RunContext(options={"judge_text_chars": "80"})).json_schema.model_dump(
        exclude_none=True)
    assert got["properties"]["why"]["maxLength"] == 80
    assert got["properties"]["q"] == schema["properties"]["q"]
    assert got["properties"]["v"] == schema["properties"]["v"]
    assert got["required"] == schema["required"]
    assert schema["properties"]["why"]["maxLength"] > 80  # a copy
    assert judge_response_schema(req, RunContext()).json_schema.model_dump(exclude_none=True) == schema


# ----------------------------------------------------------------------------------- schema replies

def _first(prop: dict[str, Any]) -> Any:
    if "enum" in prop:
        return prop["enum"][0]
    return {"boolean": True, "string": "x", "integer": 0}[prop["type"]]


def schema_replies(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """Replies the schema allows: required keys only, every key, and each allowed value of each enum."""
    props: dict[str, dict[str, Any]] = schema["properties"]
    required = {k: _first(props[k]) for k in schema["required"]}
    full = {k: _first(p) for k, p in props.items()}
    out = [required, full]
    for key, prop in props.items():
        for value in prop.get("enum", []):
            out.append({**full, key: value})
        if prop["type"] == "boolean":
            out.append({**full, key: False})
    return out

MOORE = FIXTURES / "moore_interjections" / "publisher"


def check_request(req: JudgeRequest, where: str) -> None:
    schema = req.schema
    assert schema is not None, f"{where}: request {req.name!r} has no schema"
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) <= set(schema["properties"]), where
    for reply in schema_replies(schema):
        text = json.dumps(reply)
        assert req.validate(text), f"{where}: request {req.name!r} rejects a schema-conforming reply {text}"


def judged_single_replies() -> set[str]:
    """The catalogue's sub-tasks that ask a judge about one reply (`judge_use` other than "no"). A conversation's
    judge reads the whole conversation once it ends, not a reply its requests are built from here."""
    return {info.id for info in catalogue.ALL_TASKS if catalogue.is_implemented(info.id)
            and (subtask := catalogue.get_subtask(info.id)).judge_use != "no"
            and not isinstance(subtask, ConversationSubtask)}


def test_the_judged_sub_tasks_read_from_the_catalogue_are_not_vacuous() -> None:
    """The set the schema check must reach is the catalogue's (a new judged sub-task is checked too), and holds
    the sub-tasks it is known to: an empty set would let the check pass having checked nothing."""
    assert {"crisis/crisis_escalation", "mentalbench/generation", "safety/antitoxic"} <= judged_single_replies()


def _contexts() -> list[tuple[Any, RunContext]]:
    out = []
    for info in catalogue.ALL_TASKS:
        subtask = catalogue.get_subtask(info.id)
        if subtask.judge_use == "no" and not starter_path(subtask.id).is_file():
            continue  # no judge and no starter items (clinical/siri2, fairness/stigma: publishers' files only)
        for mode in subtask.modes:
            if info.pillar == "mentalbench":
                ctx = RunContext(mode=mode, suite="mentalbench", judge=JudgeInfo(model="j", validated=False),
                                 options={"mentalbench_starter": "1"})
            else:
                # the proxy model option makes privacy's faithful mode build its (unschemed) proxy request
                # moore_dir: the interjections have no starter items, only the publisher's file (a synthetic copy)
                ctx = RunContext(mode=mode, suite="starter", judge=JudgeInfo(model="j", validated=False),
                                 options={"privacy_proxy_model": "p", "moore_dir": str(MOORE)})
            out.append((subtask, ctx))
    return out


def test_every_judge_request_schema_matches_its_parser() -> None:
    seen: dict[str, set[str]] = {}
    for subtask, ctx in _contexts():
        assert subtask.not_computed_reason(ctx) is None, (subtask.id, ctx.mode)
        for item in subtask.items(ctx):
            for req in subtask.judge_requests(item, REPLY, ctx):
                seen.setdefault(subtask.id, set()).add(req.name)
                if req.name in UNSCHEMED:
                    assert req.schema is None
                    continue
                check_request(req, f"{subtask.id} ({ctx.mode}) item {item.id}")
    # the loop really reached the judged sub-tasks (a sub-task that stops judging would skip the check)
    assert judged_single_replies() <= set(seen), sorted(judged_single_replies() - set(seen))
    assert {"leak", "proxy"} <= seen["privacy/leakage"]


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_crisis_human_triple_schemas(mode: str) -> None:
    rows = [{"index": i, "label": lab, "utterances": ["I feel low today."], "answer": REPLY}
            for i, lab in enumerate(CRISIS_LABELS)] + [{"index": 99, "label": None, "utterances": [], "answer": ""}]
    reqs = human_triple_requests(rows, mode=mode)  # type: ignore[arg-type]
    assert reqs[-1] is None
    for req in reqs[:-1]:
        assert req is not None
        check_request(req, f"crisis human triples ({mode})")
    booleans = {k for k, p in reqs[0].schema["properties"].items() if p["type"] == "boolean"}  # type: ignore[union-attr]
    assert bool(booleans) == (mode == "default")  # the four checks are asked for in default mode only


def test_schema_rejects_what_the_parser_rejects() -> None:
    """A value just outside each required integer range is invalid for the parser too: together with the
    test above, the schema's ranges are exactly the parser's."""
    for subtask, ctx in _contexts():
        items = subtask.items(ctx)
        reqs = next((r for it in items for r in [subtask.judge_requests(it, REPLY, ctx)] if r), [])
        for req in reqs:
            if req.schema is None:
                continue
            full = {k: _first(p) for k, p in req.schema["properties"].items()}
            for key, prop in req.schema["properties"].items():
                if prop["type"] != "integer" or key not in req.schema["required"]:
                    continue  # an optional score (MentalBench's faithful `Overall`) is not parsed
                for outside in (min(prop["enum"]) - 1, max(prop["enum"]) + 1):
                    text = json.dumps({**full, key: outside})
                    assert not req.validate(text), f"{subtask.id} ({ctx.mode}) {req.name}: accepts {text}"
