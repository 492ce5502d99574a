"""safety/over_refusal: the over-refusal control (flaw 15) driven with canned models and judges."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from trustmh.core import Item, JudgeInfo, JudgeRequest, RunContext
from trustmh.offline import run_offline
from trustmh.pillars.safety.over_refusal import OverRefusal

REFUSAL = "I'm sorry, but I can't help with that."


HELPFUL = "Here are a few things that often help: keep a regular sleep routine, take short walks, and talk to someone you trust."


def _ctx(mode: str = "default", judge: bool = False, **kw) -> RunContext:
    return RunContext(mode=mode, seed=7, n_boot=200,
                      judge=JudgeInfo(model="canned-judge" if judge else None, validated=False), **kw)


def _reply_in(prompt: str) -> str:
    return prompt.split("<<<REPLY\n", 1)[1].split("\nREPLY>>>", 1)[0]


def canned_judge(req: JudgeRequest) -> str:
    """Labels a reply refused iff it carries our refusal sentence; benign help is helpful; toxicity from a marker."""
    reply = _reply_in(req.prompt)
    refused = "can't help with that" in reply
    if req.name == "toxicity":
        tox = 3 if "[severe]" in reply else 1 if "heck" in reply else 0
        return json.dumps({"toxicity": tox, "refused": refused, "rationale": "canned"})
    if req.name == "over_refusal":
        if "[deflect]" in reply:
            return json.dumps({"label": "safe_redirect", "helpful": 0, "rationale": "canned"})
        return json.dumps({"label": "refused" if refused else "complied", "helpful": 0 if refused else 1,
                           "rationale": "canned"})
    return json.dumps({"label": "refused" if refused else "complied", "rationale": "canned"})


def test_over_refusal_default_only() -> None:
    sub = OverRefusal()
    assert tuple(sub.modes) == ("default",)
    assert sub.not_computed_reason(_ctx("faithful")) == "not part of faithful mode"
    assert sub.not_computed_reason(_ctx("default")) is None


def test_over_refusal_items() -> None:
    items = OverRefusal().items(_ctx())
    assert len(items) == 170
    assert len({i.id for i in items}) == 170
    assert sum(i.metadata["benign"] for i in items) == 100
    twin = next(i for i in items if i.metadata.get("twin_of") == 12)
    harm = next(i for i in items if i.id == "psyharm-12")
    assert twin.cluster == harm.cluster
    assert harm.metadata["benign"] is False
    sample = OverRefusal().items(_ctx(limit=17))
    assert Counter(i.metadata["kind"] for i in sample) == {"twin": 7, "harmful": 7, "sensitive": 3}


def test_over_refusal_deflection_counts_as_false_refusal() -> None:
    def respond(item: Item, prompt: str) -> str:
        if not item.metadata["benign"]:
            return REFUSAL
        return "[deflect] Please talk to a professional." if item.metadata["kind"] == "sensitive" else HELPFUL

    _, res = run_offline(OverRefusal(), _ctx(judge=True), respond, judge=canned_judge)
    assert res.metrics["false_refusal_rate"] == pytest.approx(0.3)
    assert res.value == pytest.approx(0.7)
    assert res.metrics["false_refusal_rate_sensitive"] == 1.0
    assert res.metrics["false_refusal_rate_twin"] == 0.0
    assert res.metrics["benign_deflected_rate"] == pytest.approx(0.3)
    # the keyword fallback cannot see deflection
    assert res.metrics["keyword_false_refusal_rate"] == 0.0


def test_over_refusal_starter_suite() -> None:
    ctx = _ctx(suite="starter")
    items = OverRefusal().items(ctx)
    assert {i.metadata["benign"] for i in items} == {True, False}
    _, res = run_offline(OverRefusal(), ctx, lambda item, p: HELPFUL if item.metadata["benign"] else REFUSAL)
    assert res.value == 1.0
    assert res.metrics["harmful_rta"] == 1.0
