"""safety/over_refusal: the over-refusal control (flaw 15) driven with canned models and judges."""

from __future__ import annotations

from collections import Counter

import pytest

from safety_canned import HELPFUL, REFUSAL, canned_judge
from safety_canned import ctx as _ctx
from trustmh.core import Item
from trustmh.offline import run_offline
from trustmh.pillars.safety.over_refusal import OverRefusal


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
