"""sycophancy/oeq: offline runs with canned judges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sycophancy_canned import NO_JUDGE, ctx_for, oeq_judge, raw_rows, reply
from trustmh.offline import run_offline
from trustmh.pillars.sycophancy.data import OEQ_METRICS, SAMPLE_NOTE
from trustmh.pillars.sycophancy.oeq import OpenEndedQuestions


def test_oeq_items_are_the_bare_posts_from_the_sample(elephant: Path) -> None:
    sub = OpenEndedQuestions()
    items = sub.items(ctx_for())
    raw = raw_rows(elephant / "OEQ_sample.csv")
    assert [it.prompt for it in items] == [x["prompt"].strip() for x in raw]  # no framing, file order
    assert all(it.metadata["dataset_variant"] == "sample" for it in items)
    assert len(sub.items(ctx_for(limit=4))) == 4
    assert [i.id for i in sub.items(ctx_for(mode="faithful", limit=3))] == [i.id for i in items[:3]]
    assert [i.id for i in sub.items(ctx_for(limit=4))] == [i.id for i in sub.items(ctx_for(limit=4))]


def test_oeq_rates_human_baseline_and_excess(elephant: Path) -> None:
    raw = raw_rows(elephant / "OEQ_sample.csv")
    human = {m: float(np.mean([float(x[f"{m}_human"]) for x in raw])) for m in OEQ_METRICS}
    sub = OpenEndedQuestions()
    _, res = run_offline(sub, ctx_for(), reply, oeq_judge({"emotional_validation"}))
    assert res.status == "sample"
    assert res.method == "judge"
    assert res.direction == "lower"
    assert res.metrics["emotional_validation"] == 1.0
    assert res.metrics["indirect_language"] == res.metrics["indirect_action"] == res.metrics["accept_framing"] == 0.0
    assert res.value == pytest.approx(0.25)
    for m in OEQ_METRICS:
        assert res.metrics[f"human_{m}"] == pytest.approx(human[m])
        assert res.metrics[f"excess_{m}"] == pytest.approx(res.metrics[m] - human[m])
    assert SAMPLE_NOTE in res.notes
    assert SAMPLE_NOTE.startswith("10-item sample")
    assert res.judge == {"model": "judge/test", "validated": False}
    _, res_f = run_offline(sub, ctx_for(mode="faithful"), reply, oeq_judge({"emotional_validation"}))
    assert res_f.value == pytest.approx(0.25)
    assert "excess_emotional_validation" not in res_f.metrics
    assert res_f.metrics["human_accept_framing"] == pytest.approx(human["accept_framing"])


def test_oeq_invalid_judge_counted_per_metric(elephant: Path) -> None:
    first = raw_rows(elephant / "OEQ_sample.csv")[0]["prompt"].strip()[:60]
    sub = OpenEndedQuestions()
    records, res = run_offline(sub, ctx_for(), reply, oeq_judge({"accept_framing"}, bad=(first, "indirect_language")))
    assert res.metrics["n_invalid_indirect_language"] == 1
    assert res.metrics["n_invalid_accept_framing"] == 0
    assert res.n_invalid == 1
    assert res.metrics["accept_framing"] == 1.0  # the other 3 judgements of that reply still count
    assert res.value == pytest.approx(0.25)


def test_oeq_empty_reply_is_invalid_and_no_judge_is_not_computed() -> None:
    sub = OpenEndedQuestions()
    _, res = run_offline(sub, ctx_for(), lambda it, p: "", oeq_judge(set()))
    assert res.status == "not_computed"
    assert res.n_invalid == res.n == 10
    assert res.metrics["n_invalid_reply"] == 10
    assert sub.not_computed_reason(ctx_for(judge=NO_JUDGE)) == "no judge configured"
