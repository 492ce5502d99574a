"""The anchors' calls in a full default run's plan (docs/judge-probes.md#drift): counted in the totals, printed by
`trustmh plan`, and at most 2% of the run's calls."""

from __future__ import annotations

from typing import Any

import pytest

from trustmh.cli import main

MODELS = ["--model", "mockllm/model", "--judge", "mockllm/judge"]


@pytest.fixture(scope="module")
def planned() -> Any:
    from trustmh.run.config import RunOptions, resolve
    from trustmh.run.estimate import estimate, plan_settings
    from trustmh.run.select import plan_run

    spec = resolve(RunOptions(model="mockllm/model", judge="mockllm/judge", display="none"))
    return estimate(plan_run(spec), plan_settings(spec))


def test_a_full_default_run_judges_anchor_items(planned: Any) -> None:
    assert planned.anchor_calls > 0


def test_the_anchors_are_at_most_two_percent_of_a_full_default_runs_calls(planned: Any) -> None:
    assert planned.anchor_share <= 0.02


def test_plan_json_carries_the_anchors(planned: Any) -> None:
    assert planned.to_json()["anchors"]["calls"] == planned.anchor_calls


def test_plan_prints_the_anchors_calls(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", *MODELS])
    assert "anchors (judge drift" in capsys.readouterr().out
