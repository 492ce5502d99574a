"""A run's Inspect eval leaves the process as it found it: Inspect 0.3.285 sets its active model and generate
config in the caller's context and does not reset them, so a judge asked later in the same process (a
certification, `rescore --judge`, the next test of a pytest worker) inherited the last run's
--max-connections, retries and timeout; `run.inspect_eval.evaluate` runs the eval set in a copy of the context.
Seen as a CI flake: a test's judge with 8 connections held 3 after another test's run with --max-connections 3."""

from __future__ import annotations

import pytest
from inspect_ai.model._model import active_generate_config, active_model

from loopback_server import LoopbackServer
from trustmh.cli import main


@pytest.fixture(scope="module")
def after_a_run(tmp_path_factory: pytest.TempPathFactory) -> int:
    out = tmp_path_factory.mktemp("run")
    with pytest.MonkeyPatch.context() as env, \
            LoopbackServer(lambda messages, request: "Answer: A", max_requests=4, max_seconds=30) as server:
        for key, value in server.env().items():
            env.setenv(key, value)
        return main(["run", "--model", server.model_name("m"), "--subtasks", "knowledge", "--limit", "1",
                     "--seed", "3", "--out", str(out), "--display", "none", "--n-boot", "200",
                     "--max-connections", "3", "--max-retries", "1", "--timeout", "7"])


def test_the_run_ran(after_a_run: int) -> None:
    assert after_a_run == 0


def test_no_max_connections_is_left_behind(after_a_run: int) -> None:
    assert active_generate_config().max_connections is None


def test_no_timeout_is_left_behind(after_a_run: int) -> None:
    assert active_generate_config().timeout is None


def test_no_active_model_is_left_behind(after_a_run: int) -> None:
    assert active_model() is None
