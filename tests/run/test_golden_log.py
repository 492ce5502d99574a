"""Golden-log regression: a log written by the pinned Inspect version must still read back into the same
trustmh records and the same aggregate. Regenerate with tests/support/make_golden_log.py only when upgrading."""

from __future__ import annotations

import pytest

from fixture_paths import FIXTURES
from trustmh.catalogue import get_subtask
from trustmh.core import RunContext, judge_info
from trustmh.run.collect import read_log, records_from_log
from trustmh.run.tasks import context_from_dict

GOLDEN = FIXTURES / "golden" / "ethics_log.json"


def test_golden_log_reads_back() -> None:
    log = read_log(GOLDEN)
    assert log.status == "success"
    assert log.eval.metadata["trustmh_subtask"] == "ethics/ethical_reasoning"
    ctx = context_from_dict(log.eval.metadata["trustmh_context"])
    assert ctx == RunContext(mode="default", seed=3, suite="starter", limit=3,
                             judge=judge_info(["mockllm/judge"], seed=3), n_boot=100)
    records, n_errors, reported = records_from_log(log)
    assert n_errors == 0
    assert reported == "canned"
    assert len(records) == 3
    assert all(r.score["choice"] == "B" and r.score["judge_valid"] for r in records)
    result = get_subtask("ethics/ethical_reasoning").aggregate(records, ctx)
    gold_b = sum(r.metadata["target"] == "B" for r in records)
    assert result.value == pytest.approx(gold_b / 3)
    assert result.metrics["sc1"] == pytest.approx(5.0)
    assert result.metrics["sc4"] == pytest.approx(3.0)


def test_an_inspect_eval_task_carries_the_context_its_arguments_give() -> None:
    """`inspect eval trustmh/<task> -T ...`: the task's context is made as a run's (`run/direct.py`), from its
    arguments, and a log reads it back whole."""
    from trustmh.catalogue import BY_ID
    from trustmh.run.registry import TASKS

    task = TASKS[BY_ID["reliability/knowledge"].task_name](suite="starter", limit=1, seed=7, judge="mockllm/j")
    ctx = context_from_dict(task.metadata["trustmh_context"])
    assert (ctx.seed, ctx.suite, ctx.limit, ctx.judges, ctx.model) == (7, "starter", 1, ["mockllm/j"], None)
