"""The anchors' calls in a full default run's plan (docs/judge-probes.md#drift), every judge watched as if
certified: counted in the totals, printed by `trustmh plan`, and at most 2% of the run's calls."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def planned() -> Any:
    from trustmh.run.config import RunOptions, resolve
    from trustmh.run.estimate import estimate, plan_settings
    from trustmh.run.select import add_anchors, plan_run

    spec = resolve(RunOptions(model="mockllm/model", judge="mockllm/judge", display="none"))
    plan = plan_run(spec)
    for subtask in list(plan.subtasks.values()):  # every judge certified: each watched
        add_anchors(plan, subtask)
    return estimate(plan, plan_settings(spec))


def test_a_full_default_run_judges_anchor_items(planned: Any) -> None:
    assert planned.anchor_calls > 0


def test_the_anchors_are_at_most_two_percent_of_a_full_default_runs_calls(planned: Any) -> None:
    assert planned.anchor_share <= 0.02


def test_plan_json_carries_the_anchors(planned: Any) -> None:
    assert planned.to_json()["anchors"]["calls"] == planned.anchor_calls


def test_plan_prints_the_anchors_calls(planned: Any) -> None:
    from trustmh.run.estimate_table import table

    assert "anchors (judge drift" in table(planned)
