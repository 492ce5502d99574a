"""Kill a real run (SIGKILL, at several points) and run the same command again: nothing already answered is
asked again, and the results equal those of an uninterrupted run."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, RecordedRequest, message_text
from trustmh.cli import main

MAX_CONNECTIONS = 2


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "sc1" in text:  # the ethics judge
        return '{"sc1": 4, "sc2": 3, "sc3": 5, "sc4": 3, "sc5": 4}'
    if "Scenario:" in text:
        return '```json\n{"choice": "B", "reasoning": "Synthetic reasoning."}\n```'
    return "Answer: A" if len(text) % 2 else "Answer: B"


def key(r: RecordedRequest) -> str:
    body = r.json or {}
    return hashlib.sha256(json.dumps([body.get("model"), body.get("messages")], sort_keys=True).encode()).hexdigest()


def command(server: LoopbackServer, out: Path) -> list[str]:
    return [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--judge",
            server.model_name("judge"), "--suite", "trustmh", "--subtasks", "knowledge,ethical_reasoning",
            "--limit", "4", "--seed", "5", "--n-boot", "200", "--out", str(out), "--display", "none",
            "--max-tasks", "1", "--max-connections", str(MAX_CONNECTIONS), "--timeout", "10"]


def run_until(server: LoopbackServer, out: Path, stop: Callable[[list[RecordedRequest]], bool] | None,
              env: dict[str, str], since: int = 0) -> int:
    """Run the command; SIGKILL it once `stop(calls answered since call number `since`)` holds."""
    proc = subprocess.Popen(command(server, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if stop is not None and stop(server.completed()[since:]):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return -9
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
        pytest.fail("run did not finish")
    return proc.returncode


def comparable(out: Path) -> tuple[dict[str, Any], list[str]]:
    results = json.loads((out / "results.json").read_text())
    results.pop("created")
    results.pop("usage")  # calls and tokens: a resumed run answers some from the response cache, by design
    return results, sorted((out / "items.jsonl").read_text().splitlines())


def judged(reqs: list[RecordedRequest]) -> int:
    return sum(1 for r in reqs if (r.json or {}).get("model") == "judge")


KILL_POINTS = {
    # mid-generation of the first sub-task (knowledge: 4 model calls)
    "mid_generation": lambda done: len(done) >= 2,
    # the first sub-task finished, the second not started: between sub-tasks
    "between_subtasks": lambda done: len(done) >= 4 and not any("Scenario:" in message_text(
        (r.json or {})["messages"][-1]) for r in done),
    # during the judge phase of the ethics sub-task
    "judge_phase": lambda done: judged(done) >= 1,
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_then_rerun_continues(point: str, tmp_path: Path) -> None:
    with LoopbackServer(respond, latency=0.15, max_requests=400, max_seconds=240) as server:
        # each run directory keeps its own response cache (OUT/cache): the reference shares nothing
        env = {k: v for k, v in {**os.environ, **server.env()}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        assert run_until(server, tmp_path / "ref", None, env) == 0
        ref_calls = len(server.completed())
        start = len(server.requests)

        assert run_until(server, tmp_path / "run", KILL_POINTS[point], env, since=ref_calls) == -9
        answered_before_kill = {key(r) for r in server.completed()[ref_calls:]}
        assert answered_before_kill, "the run was killed after some calls were answered"
        resume_from = len(server.requests)
        assert run_until(server, tmp_path / "run", None, env) == 0
        again = [r for r in server.requests[resume_from:] if r.chat_number is not None]
        repeated = [r for r in again if key(r) in answered_before_kill]
        total = len([r for r in server.requests[start:] if r.status == 200 and r.reply is not None])
    # at most the calls in flight when the process died (answered by the server, never cached) are repeated
    assert len(repeated) <= MAX_CONNECTIONS, f"{len(repeated)} answered calls were asked again"
    assert total <= ref_calls + MAX_CONNECTIONS
    assert comparable(tmp_path / "run") == comparable(tmp_path / "ref")
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["subtasks"] == ["reliability/knowledge", "ethics/ethical_reasoning"]


@pytest.mark.slow  # a run, then its resume refused: 4.5 s of CPU
def test_changed_configuration_is_refused_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(respond, max_requests=100, max_seconds=60) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        base = ["run", "--model", server.model_name("m-config"), "--suite", "trustmh", "--subtasks", "knowledge",
                "--limit", "2", "--out", str(tmp_path), "--display", "none", "--no-judge"]
        assert main(base) == 0
        good = (tmp_path / "results.json").read_bytes()
        n = len(server.requests)
        assert main([*base, "--seed", "9"]) == 2
        err = capsys.readouterr().err
        assert "different configuration" in err
        assert "seed: 0 vs 9" in err
        assert "--overwrite" in err
        assert len(server.requests) == n, "refused before any model call"
        assert (tmp_path / "results.json").read_bytes() == good, "the good result is untouched"
        assert main([*base, "--seed", "9", "--overwrite"]) == 0
        assert json.loads((tmp_path / "run.json").read_text())["seed"] == 9
