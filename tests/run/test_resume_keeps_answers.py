"""Resume keeps what was paid for (issue 34): SIGKILL a run while many calls are in flight, run the same command
again, and count, at the loopback server, the calls answered before the kill that are asked again. Only calls
in flight when the process died (answered by the server, not yet stored in the response cache by the client)
may be repeated: at most one per connection of each model. Measured on a quiet machine and under load (a second
process burning a core), as the audit's 18 of 80 repeats were. Finished samples not yet written to the log
(`--log-buffer`) are run again from the response cache, which asks the server nothing."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, RecordedRequest

CONNECTIONS = 8
ITEMS = 48
KILL_AFTER = 20  # answered calls


def _key(r: RecordedRequest) -> str:
    body = r.json or {}
    return hashlib.sha256(json.dumps([body.get("model"), body.get("messages")], sort_keys=True).encode()).hexdigest()


def _respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return "Answer: A"


def _command(server: LoopbackServer, out: Path) -> list[str]:
    return [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite", "trustmh",
            "--subtasks", "knowledge", "--limit", str(ITEMS), "--no-judge", "--n-boot", "200", "--out", str(out),
            "--display", "none", "--max-connections", str(CONNECTIONS), "--timeout", "20", "--log-buffer", "50"]


def _run(server: LoopbackServer, out: Path, env: dict[str, str], kill_after: int | None) -> int:
    before = len(server.completed())
    proc = subprocess.Popen(_command(server, out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 240
    while proc.poll() is None and time.monotonic() < deadline:
        if kill_after is not None and len(server.completed()) - before >= kill_after:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return -9
        time.sleep(0.005)
    if proc.poll() is None:
        proc.kill()
        pytest.fail("run did not finish")
    return proc.returncode


def _stored(cache: Path) -> int:
    """Response-cache entries that read back whole (Inspect writes an entry in place: the kill can cut one)."""
    import pickle

    whole = 0
    for path in (p for p in cache.rglob("*") if p.is_file()):
        try:
            pickle.loads(path.read_bytes())  # noqa: S301  (the run's own cache)
        except Exception:  # noqa: BLE001, S112  a cut entry: not stored
            continue
        whole += 1
    return whole


@pytest.fixture(params=["quiet", "under load"])
def load(request: pytest.FixtureRequest) -> Iterator[str]:
    burner = None
    if request.param == "under load":  # a second process keeps one core busy for the whole test
        burner = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 300\n"
                                   "while time.time() < end: pass"])
    try:
        yield request.param
    finally:
        if burner is not None:
            burner.kill()
            burner.wait()


@pytest.mark.slow
def test_a_killed_run_asks_again_only_the_calls_in_flight(load: str, tmp_path: Path) -> None:
    with LoopbackServer(_respond, latency=0.05, max_requests=400, max_seconds=300) as server:
        env = {k: v for k, v in {**os.environ, **server.env()}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        assert _run(server, tmp_path / "run", env, KILL_AFTER) == -9
        answered = {_key(r) for r in server.completed()}
        stored = _stored(tmp_path / "run" / "cache")  # answers the client kept (a file cut by the kill is not)
        resume_from = len(server.requests)
        assert _run(server, tmp_path / "run", env, None) == 0
        repeated = [r for r in server.requests[resume_from:] if r.chat_number is not None and _key(r) in answered]
    print(f"\n{load}: {len(answered)} answered before the kill, {stored} stored, {len(repeated)} asked again")
    # every answer the client stored before it died is used, not asked again; the rest were in flight
    assert len(repeated) <= len(answered) - stored, f"{load}: a stored answer was asked again"
    assert len(repeated) <= CONNECTIONS, f"{load}: {len(repeated)} of {len(answered)} answered calls asked again"
