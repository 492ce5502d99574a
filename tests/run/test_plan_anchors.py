"""The anchors' calls in a full default run's plan (docs/judge-probes.md#drift): every judged sub-task's judge
is watched, certified or not; counted in the totals, printed by `trustmh plan`, and at most 2% of the run's
calls."""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from trustmh.run.config import RunOptions, resolve
    from trustmh.run.estimate import estimate, plan_settings
    from trustmh.run.select import plan_run

    # no certificate anywhere: the anchors are judged all the same
    spec = resolve(RunOptions(model="mockllm/model", judge="mockllm/judge", display="none",
                              certificates=str(tmp_path_factory.mktemp("no-certificates"))))
    return estimate(plan_run(spec), plan_settings(spec))


@pytest.mark.slow  # plans the whole default suite: 22 s of CPU (back in the fast lane once the plan takes under 12 s)
def test_a_full_default_run_judges_anchor_items(planned: Any) -> None:
    assert planned.anchor_calls > 0


@pytest.mark.slow  # plans the whole default suite: 22 s of CPU (back in the fast lane once the plan takes under 12 s)
def test_the_anchors_are_at_most_two_percent_of_a_full_default_runs_calls(planned: Any) -> None:
    assert planned.anchor_share <= 0.02


@pytest.mark.slow  # plans the whole default suite: 22 s of CPU (back in the fast lane once the plan takes under 12 s)
def test_plan_json_carries_the_anchors(planned: Any) -> None:
    assert planned.to_json()["anchors"]["calls"] == planned.anchor_calls


@pytest.mark.slow  # plans the whole default suite: 22 s of CPU (back in the fast lane once the plan takes under 12 s)
def test_plan_prints_the_anchors_calls(planned: Any) -> None:
    from trustmh.run.estimate_table import table

    assert "anchors (judge drift" in table(planned)


def test_anchors_0_leaves_the_anchor_items_out() -> None:
    from trustmh.run.config import RunOptions, resolve
    from trustmh.run.select import plan_run
    from trustmh.run.tasks import ANCHORS_OF

    spec = resolve(RunOptions(model="mockllm/model", judge="mockllm/judge", display="none",
                              subtasks=["safety/over_refusal"], options={"anchors": "0"}))
    assert [t for t in plan_run(spec).tasks if ANCHORS_OF in (t.metadata or {})] == []
