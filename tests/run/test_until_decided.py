"""`trustmh run --until-decided` end to end on loopback products (slow lane: each run is several seconds of
CPU): a clearly careful and a clearly unsafe product decide the jailbreak check on at most 0.3x the calls of
the full run, with the full run's gate verdict; the same command without the flag finishes the run, asking
only the items not yet asked; killed mid-round and run again, it asks nothing twice."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, RecordedRequest
from trustmh.cli import main

REFUSE = "I'm sorry, but I can't help with that."
COMPLY = "Sure! Here is exactly what you asked for, step by step."
LIMIT = 240
MAX_CONNECTIONS = 2


def args(server: LoopbackServer, out: Path, *extra: str, model: str = "m") -> list[str]:
    # a model name of its own per server: Inspect keeps one provider per model in a process (and its base URL)
    return ["run", "--model", server.model_name(model), "--no-judge", "--suite", "trustmh", "--subtasks",
            "jailbreak_resistance", "--limit", str(LIMIT), "--seed", "1", "--n-boot", "200", "--display", "none",
            "--max-connections", str(MAX_CONNECTIONS), "--out", str(out), *extra]


def gate_verdict(out: Path) -> str:
    main(["gate", str(out)])
    rows = json.loads((out / "gate.json").read_text())["checks"]
    return next(r["verdict"] for r in rows if r["id"] == "jailbreak_resistance")


def played(reply: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The product run with --until-decided, then the same command without it: calls and verdicts of each."""
    out = tmp_path / "run"
    with LoopbackServer(lambda messages, request: reply, max_requests=2 * LIMIT, max_seconds=400) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        assert main(args(server, out, "--until-decided", model=name)) == 0
        early_calls = len(server.chat_requests)
        early = gate_verdict(out)
        sequential = json.loads((out / "results.json").read_text())["subtasks"]["safety/jailbreak_resistance"][
            "sequential"]
        assert main(args(server, out, model=name)) == 0
        total_calls = len(server.chat_requests)
    return {"early_calls": early_calls, "total_calls": total_calls, "early": early, "full": gate_verdict(out),
            "sequential": sequential}


@pytest.fixture(scope="module")
def careful(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        return played(REFUSE, "careful", tmp_path_factory.mktemp("careful"), mp)


@pytest.fixture(scope="module")
def unsafe(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        return played(COMPLY, "unsafe", tmp_path_factory.mktemp("unsafe"), mp)


@pytest.mark.slow
def test_a_careful_product_decides_on_at_most_a_third_of_the_calls(careful: dict[str, Any]) -> None:
    assert careful["early_calls"] <= 0.3 * LIMIT


@pytest.mark.slow
def test_a_careful_product_gets_the_full_runs_verdict(careful: dict[str, Any]) -> None:
    assert (careful["early"], careful["full"]) == ("pass", "pass")


@pytest.mark.slow
def test_an_unsafe_product_decides_on_at_most_a_third_of_the_calls(unsafe: dict[str, Any]) -> None:
    assert unsafe["early_calls"] <= 0.3 * LIMIT


@pytest.mark.slow
def test_an_unsafe_product_gets_the_full_runs_verdict(unsafe: dict[str, Any]) -> None:
    assert (unsafe["early"], unsafe["full"]) == ("fail", "fail")


@pytest.mark.slow
def test_the_results_say_where_it_stopped(careful: dict[str, Any]) -> None:
    assert careful["sequential"]["items_played"] == careful["early_calls"]


@pytest.mark.slow
def test_finishing_without_the_flag_asks_only_the_rest(careful: dict[str, Any]) -> None:
    """The full run's items: the ones asked before from the response cache, only the others asked now."""
    assert careful["total_calls"] == LIMIT


def key(r: RecordedRequest) -> str:
    body = r.json or {}
    return hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()


@pytest.mark.slow
def test_killed_mid_round_and_run_again_it_asks_nothing_twice(tmp_path: Path) -> None:
    """SIGKILL once the second round has calls answered; the same command again: no answered call is asked
    again, beyond those in flight at the kill (answered by the server, never cached), and it stops where an
    uninterrupted run stops (60 items: rounds of 30, 38, 48, 60)."""
    out = tmp_path / "run"
    with LoopbackServer(lambda messages, request: REFUSE, latency=0.1, max_requests=300, max_seconds=300) as server:
        env = {k: v for k, v in {**os.environ, **server.env()}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        command = [sys.executable, "-m", "trustmh.cli", *args(server, out, "--until-decided")]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 200
        while proc.poll() is None and time.monotonic() < deadline and len(server.completed()) < 34:
            time.sleep(0.02)
        assert proc.poll() is None, "still running in its second round"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        answered = {key(r) for r in server.completed()}
        resume_from = len(server.requests)
        done = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        repeated = [r for r in server.requests[resume_from:] if r.chat_number is not None and key(r) in answered]
    assert len(repeated) <= MAX_CONNECTIONS, f"{len(repeated)} answered calls were asked again"
    sequential = json.loads((out / "results.json").read_text())["subtasks"]["safety/jailbreak_resistance"]["sequential"]
    assert sequential["items_played"] == 60
