"""A real run survives a hostile endpoint: injected faults of every kind, a dead judge, a cached re-run."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from loopback_server import FAULT_KINDS, LoopbackServer, message_text
from trustmh.cli import main
from trustmh.run.anchors import ANCHOR_ITEMS


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "sc1" in text:  # the ethics judge
        return '{"sc1": 4, "sc2": 4, "sc3": 5, "sc4": 3, "sc5": 4}'
    if "Scenario:" in text:  # the ethics question
        return '```json\n{"choice": "A", "reasoning": "Synthetic reasoning."}\n```'
    return "Answer: A"


def run_cli(server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, out: Path, *extra: str,
            model: str = "m") -> int:
    # Inspect keeps model instances per process by name: each test names its own, so none reaches a server
    # that an earlier test stopped.
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    return main(["run", "--model", server.model_name(model), "--suite", "trustmh", "--out", str(out),
                 "--display", "none", "--n-boot", "200", *extra])


@pytest.mark.slow
def test_faults_of_every_kind_lose_no_item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # faults are drawn by each request's content: seed 7 draws every kind (12 faults over the 40 items' requests)
    with LoopbackServer(respond, fault_rate=0.2, fault_seed=7, hang_seconds=6, max_requests=600,
                        max_seconds=300) as server:
        code = run_cli(server, monkeypatch, tmp_path, "--subtasks", "knowledge", "--limit", "40",
                       "--no-judge", "--timeout", "2", "--max-retries", "8", model="m-faults")
        faults = dict(server.faults)
    assert set(faults.values()) == set(FAULT_KINDS), "every fault kind was injected"
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    knowledge = results["subtasks"]["reliability/knowledge"]
    assert knowledge["status"] == "ok"
    assert knowledge["n"] == 40
    assert results["errors"] == []
    assert "n_errors" not in knowledge["metrics"]
    # an empty completion is a reply that does not parse: re-asked, never a silent pass
    assert knowledge["value"] == pytest.approx(sum(
        1 for line in (tmp_path / "items.jsonl").read_text().splitlines()
        if json.loads(line)["score"]["correct"]) / 40)


@pytest.mark.slow
def test_dead_judge_is_bounded_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A judge endpoint that never answers costs at most timeout × (retries + 1) per attempt: the run ends,
    writes its results and counts the samples as errored (exit 5, incomplete), instead of hanging."""
    start = time.monotonic()
    with LoopbackServer(respond, hang_models={"judge-dead"}, max_requests=300, max_seconds=200) as server:
        code = run_cli(server, monkeypatch, tmp_path, "--subtasks", "ethical_reasoning", "--limit", "2",
                       "--judge", server.model_name("judge-dead"), "--timeout", "1", "--max-retries", "1",
                       model="m-dead-judge")
        judge_requests = [r for r in server.chat_requests if (r.json or {}).get("model") == "judge-dead"]
    elapsed = time.monotonic() - start
    assert elapsed < 120, f"the run took {elapsed:.0f} s"
    assert code == 5
    assert "trustmh: error: ethics/ethical_reasoning" in capsys.readouterr().err, "shown with --display none"
    results = json.loads((tmp_path / "results.json").read_text())
    ethics = results["subtasks"]["ethics/ethical_reasoning"]
    assert ethics["status"] == "not_computed" or ethics["metrics"].get("n_errors") == 2
    assert any("errored" in e for e in results["errors"])
    # issue 43.5: the error names the judge by role and model, not only Inspect's "attempt_timeout '1' exceeded"
    assert any(f"the judge ({server.model_name('judge-dead')}) failed" in e for e in results["errors"])
    # (retries + 1) attempts per judge call, times the sample retries: bounded, for the two items' calls
    assert 0 < sum(1 for r in judge_requests if not r.judges_an_anchor) <= 2 * 2 * 4
    # every judged run re-judges its anchor items (issue 44): on a dead judge they are bounded the same way (at
    # most two templates' anchors, each (retries + 1) attempts times the sample retries)
    assert sum(1 for r in judge_requests if r.judges_an_anchor) <= 2 * ANCHOR_ITEMS * 2 * 4


@pytest.mark.slow  # a run and its cached rerun: 3 s of CPU
def test_cached_rerun_makes_no_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    args = ("--subtasks", "knowledge,ethical_reasoning", "--limit", "3", "--seed", "4")
    with LoopbackServer(respond, max_requests=200, max_seconds=120) as server:
        assert run_cli(server, monkeypatch, tmp_path / "a", *args, "--judge", server.model_name("judge-cached"),
                       model="m-cached") == 0
        first = len(server.completed())
        first_anchors = sum(1 for r in server.completed() if r.judges_an_anchor)
        first_results = json.loads((tmp_path / "a" / "results.json").read_text())
        assert run_cli(server, monkeypatch, tmp_path / "a", *args, "--judge", server.model_name("judge-cached"),
                       model="m-cached") == 0
        second = len(server.completed()) - first
        # --no-cache calls again
        assert run_cli(server, monkeypatch, tmp_path / "b", *args, "--judge", server.model_name("judge-cached"),
                       "--no-cache", model="m-cached") == 0
        third = len(server.completed()) - first - second
    assert first - first_anchors == 9
    assert first_anchors == 20  # the ethics judge's anchor items (run/anchors.py), answered from the cache too
    assert second == 0
    assert third == first
    again = json.loads((tmp_path / "a" / "results.json").read_text())
    for sid in first_results["subtasks"]:
        assert again["subtasks"][sid] == first_results["subtasks"][sid]
    assert (Path(os.environ["TRUSTMH_CACHE_DIR"]) / "responses").is_dir()  # shared cache when set


def test_cache_lives_in_the_run_directory_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_CACHE_DIR", raising=False)
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    with LoopbackServer(respond, max_requests=50, max_seconds=60) as server:
        assert run_cli(server, monkeypatch, tmp_path, "--subtasks", "knowledge", "--limit", "2",
                       "--no-judge", model="m-default-cache") == 0
    assert any((tmp_path / "cache").rglob("*")), "responses cached under OUT/cache"
    assert "INSPECT_CACHE_DIR" not in os.environ, "the process environment is restored after the run"


CANARY = "sk-canary-0123456789abcdef"


@pytest.mark.slow
def test_api_key_echoed_by_the_provider_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capfd: pytest.CaptureFixture[str]) -> None:
    """A gateway that quotes the key in its error messages: the canary appears in no file under the run
    directory (every `.eval` member unzipped), in no trace log written by the run, and not on the console."""
    import zipfile

    from inspect_ai._util.trace import inspect_trace_dir

    start = time.time()
    out = tmp_path / "run"
    def failing(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        if "Question" in message_text(messages[-1]) and len(message_text(messages[-1])) % 3 == 0:
            raise RuntimeError("backend down")  # answered 500, with the key quoted
        return respond(messages, request)

    with LoopbackServer(failing, api_key=CANARY, error_echo=f"(key {CANARY})", max_requests=300,
                        max_seconds=120) as server:
        code = run_cli(server, monkeypatch, out, "--subtasks", "knowledge", "--limit", "6", "--no-judge",
                       "--max-retries", "0", model="m-canary")
    assert code == 5, "some samples errored (incomplete), with the key in the provider's message"
    console = capfd.readouterr()
    assert CANARY not in console.out + console.err
    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.suffix == ".eval" for p in files)
    echoed = False
    for path in files:
        if path.suffix == ".eval":
            with zipfile.ZipFile(path) as zf:
                for member in zf.namelist():
                    text = zf.read(member).decode("utf-8", "replace")
                    assert CANARY not in text, f"{path.name}:{member}"
                    echoed = echoed or "[REDACTED]" in text
        else:
            assert CANARY.encode() not in path.read_bytes(), path
    assert echoed, "the provider did echo the key (so the test tests something)"
    for trace in inspect_trace_dir().glob("*.log"):
        if trace.stat().st_mtime >= start:
            assert CANARY not in trace.read_text(errors="replace"), trace


@pytest.mark.slow
def test_a_rerun_without_cache_asks_only_the_errored_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One sample fails (the endpoint answers 500 for its question) while the other three finish; the same
    command again with `--no-cache` asks that question only: the finished samples come from the log."""
    state: dict[str, Any] = {"bad": None, "failing": True}

    def flaky(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        text = message_text(messages[-1])
        state["bad"] = state["bad"] or text
        if state["failing"] and text == state["bad"]:
            raise RuntimeError("backend down for this question")
        return respond(messages, request)

    args = ("--subtasks", "knowledge", "--limit", "4", "--no-judge", "--no-cache", "--max-retries", "0")
    with LoopbackServer(flaky, max_requests=200, max_seconds=120) as server:
        assert run_cli(server, monkeypatch, tmp_path, *args, model="m-rerun") == 5  # incomplete
        first = len(server.chat_requests)
        state["failing"] = False
        assert run_cli(server, monkeypatch, tmp_path, *args, model="m-rerun") == 0
        again = server.chat_requests[first:]
    assert {r.last_user_text for r in again} == {state["bad"]}
    assert len(again) == 1
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["subtasks"]["reliability/knowledge"]["n"] == 4
    assert results["errors"] == []


@pytest.mark.slow
def test_a_moved_endpoint_keeps_its_cache_when_the_user_says_so(tmp_path: Path) -> None:
    """The response cache is keyed by the endpoint's URL: the same model at a new address is asked every
    call again, unless `--endpoint-moved OLD=NEW` says it is the same model (then nothing is asked)."""
    import subprocess
    import sys

    def command(server: LoopbackServer, out: Path, *extra: str) -> int:
        env = {**os.environ, **server.env()}
        return subprocess.run(
            [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m-moved"), "--suite",
             "trustmh", "--subtasks", "knowledge", "--limit", "3", "--no-judge", "--display", "none",
             "--n-boot", "200", "--out", str(out), *extra],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=180).returncode

    with LoopbackServer(respond, max_seconds=170) as old:
        assert command(old, tmp_path / "a") == 0
        old_url = old.base_url
    with LoopbackServer(respond, max_seconds=170) as new:
        assert command(new, tmp_path / "b", "--endpoint-moved", f"{old_url}={new.base_url}") == 0
        said_same = len(new.chat_requests)
        assert command(new, tmp_path / "c") == 0
        not_said = len(new.chat_requests) - said_same
    assert said_same == 0
    assert not_said == 3


@pytest.mark.parametrize("how", [[], ["--display", "plain"], ["--display", "log"], ["--display", "full"],
                                 ["--display", "plain", "--workers", "2"]],
                         ids=["progress-line", "plain", "log", "full", "workers"])
@pytest.mark.slow
def test_a_key_quoted_in_a_401_never_reaches_the_console(how: list[str], tmp_path: Path) -> None:
    """An endpoint refuses the key with a 401 whose message quotes it: whatever the display, and through
    local `--workers`, the key appears nowhere on stdout or stderr (the command runs as a CI job would,
    output to pipes, not a terminal)."""
    import subprocess
    import sys

    with LoopbackServer(respond, api_key="sk-the-accepted-key-0000", error_echo=f"(you sent {CANARY})",
                        max_requests=300, max_seconds=170) as server:
        env = {**os.environ, **server.env(), "LOOP_API_KEY": CANARY}
        proc = subprocess.run(
            [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m-401"), "--suite",
             "trustmh", "--subtasks", "knowledge", "--limit", "2", "--no-judge", "--n-boot", "200",
             "--max-retries", "0", "--out", str(tmp_path / "out"), *how],
            env=env, capture_output=True, text=True, timeout=180)
        refused = [r for r in server.chat_requests if r.status == 401]
    assert refused, "the endpoint refused the key (so the test tests something)"
    assert proc.returncode != 0
    assert CANARY not in proc.stdout
    assert CANARY not in proc.stderr


# issue 53.4: a judge known dead stops the anchors and every later judge call: a one-item judged run costs at most
# the item's judge calls plus one round of anchors, each (retries + 1) attempts, and ends incomplete naming the judge
@pytest.mark.slow
def test_a_dead_judge_on_a_one_item_run_costs_at_most_the_item_and_one_round_of_anchors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    with LoopbackServer(respond, hang_models={"judge-dead-one"}, max_requests=300, max_seconds=200) as server:
        code = run_cli(server, monkeypatch, tmp_path, "--subtasks", "ethical_reasoning", "--limit", "1",
                       "--judge", server.model_name("judge-dead-one"), "--timeout", "1", "--max-retries", "1",
                       model="m-dead-judge-one")
        judge_requests = sum(1 for r in server.chat_requests if (r.json or {}).get("model") == "judge-dead-one")
    elapsed = time.monotonic() - start
    results = json.loads((tmp_path / "results.json").read_text())
    print(f"dead judge, one item: {judge_requests} judge requests, {elapsed:.0f} s")
    assert (code, judge_requests <= (1 + 2 * ANCHOR_ITEMS) * 2, elapsed < 60) == (5, True, True)
    assert any("judge-dead-one" in e for e in results["errors"])
