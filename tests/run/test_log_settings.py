"""The logging settings a run gives Inspect (issue 11): cheap by default, transcripts still in the final log,
and `--log-buffer` / `--live-log` reach Inspect. Resume after SIGKILL with these defaults: tests/test_resume.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from loopback_server import LoopbackServer
from trustmh.cli import main
from trustmh.run.inspect_eval import DEFAULT_LOG_BUFFER


def run(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, out: Path, model: str, *extra: str) -> Path:
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    assert main(["run", "--model", server.model_name(model), "--suite", "trustmh", "--subtasks", "knowledge",
                 "--limit", "3", "--no-judge", "--display", "none", "--n-boot", "200", "--out", str(out),
                 *extra]) == 0
    logs = sorted((out / "logs").glob("*.eval"))
    assert len(logs) == 1
    return logs[0]


@pytest.mark.slow  # a run with full transcripts: 5 s of CPU
def test_default_settings_keep_the_transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(lambda messages, request: "Answer: B", max_requests=50, max_seconds=60) as server:
        path = run(server, monkeypatch, tmp_path, "m-log-default")
    log = read_eval_log(str(path))
    assert log.eval.config.log_realtime is False
    assert log.eval.config.log_buffer == DEFAULT_LOG_BUFFER
    assert log.eval.config.score_display is False  # nothing displayed: no running metric either
    assert log.samples is not None
    assert len(log.samples) == 3
    for sample in log.samples:
        # the transcript: the model call with its reply, and the score with the record
        calls = [e for e in sample.events if e.event == "model"]
        assert calls
        assert calls[0].output.completion == "Answer: B"
        assert any(e.event == "score" for e in sample.events)
        assert sample.messages[-1].text == "Answer: B"


def test_log_options_reach_inspect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(lambda messages, request: "Answer: C", max_requests=50, max_seconds=60) as server:
        path = run(server, monkeypatch, tmp_path, "m-log-options", "--log-buffer", "2", "--live-log")
    log = read_eval_log(str(path), header_only=True)
    assert log.eval.config.log_realtime is True
    assert log.eval.config.log_buffer == 2


@pytest.mark.slow
def test_planning_every_pillar_leaves_scipy_stats_unimported() -> None:
    """scipy.stats costs about 2 s of CPU per process to import; `trustmh run` (and each --workers process)
    should pay it only when results are computed, not to plan and call the models."""
    import os
    import subprocess
    import sys

    code = ("import sys\n"
            "from trustmh.run.config import RunOptions, resolve\n"
            "from trustmh.run.select import plan_run\n"
            "plan = plan_run(resolve(RunOptions(display='none')))\n"
            "assert len({t.split('/')[0] for t in plan.subtasks}) == 9, plan.subtasks\n"
            "print(sorted(m for m in sys.modules if m.startswith('scipy.stats')))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=os.environ | {"PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]", done.stdout
