"""The `http` provider against a stateful loopback chatbot: a conversation sub-task and a single-turn sub-task
through `--model http/...`, its secrets kept out of the run directory, clear errors, and resume after SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chatbot_server import GREETING, TOKEN, ChatbotServer, Seen
from trustmh.cli import main

SUBTASKS = "gradual_disclosure,knowledge"


def _args(endpoint: Path, out: Path, *extra: str, subtasks: str = SUBTASKS) -> list[str]:
    return ["run", "--model", "http/acme", "--endpoint", str(endpoint), "--suite", "starter", "--subtasks",
            subtasks, "--no-judge", "--out", str(out), "--display", "none", "--timeout", "10", "--max-retries", "1",
            "--n-boot", "200", *extra]


def _items(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]


@pytest.fixture
def auth(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACME_AUTH", TOKEN)


def test_conversation_and_single_turn_through_a_stateful_product(tmp_path: Path, auth: None) -> None:
    with ChatbotServer() as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        assert main(_args(endpoint, tmp_path / "out", "--limit", "2")) == 0  # two of each: the 3-s rule
        chats = server.chats()
        sessions = dict(server.sessions)
    items = _items(tmp_path / "out")
    convo = next(r for r in items if r["subtask"] == "conversation/gradual_disclosure")
    turns = convo["metadata"]["turns"]
    n_patient = sum(1 for t in turns if t["role"] == "patient")
    assert all(isinstance(c.body, dict) and set(c.body) == {"session_id", "text"} for c in chats)
    # one session holds the whole scripted conversation, one message per request, in order
    held = next(h for h in sessions.values() if h and h[0]["content"] == turns[0]["content"])
    assert [m["content"] for m in held if m["role"] == "user"] == [t["content"] for t in turns
                                                                   if t["role"] == "patient"]
    assert len([m for m in held if m["role"] == "user"]) == n_patient
    assert [t["content"] for t in turns if t["role"] == "model"][-1].startswith(f"(reply {n_patient})")
    assert convo["metadata"]["greeting"] == GREETING
    single = [r for r in items if r["subtask"] == "reliability/knowledge"]
    assert single and all("I'm an AI" in r["response"] for r in single)


def test_header_secret_never_written(tmp_path: Path, auth: None) -> None:
    with ChatbotServer() as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        assert main(_args(endpoint, tmp_path / "out")) == 0
        assert all(s.headers["authorization"] == f"Bearer {TOKEN}" for s in server.seen)
    leaked = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and "cache" not in p.parts
              and (TOKEN.encode() in p.read_bytes())]
    assert leaked == []


@pytest.mark.slow
def test_reply_not_at_path_names_the_field(tmp_path: Path, auth: None, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatbotServer(reply_key="message") as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        main(_args(endpoint, tmp_path / "out"))
    err = capsys.readouterr().err
    assert "reply.path = 'data.reply.text': the response has no 'text' at data.reply" in err


@pytest.mark.slow
def test_refused_session_names_the_field(tmp_path: Path, auth: None, capsys: pytest.CaptureFixture[str]) -> None:
    with ChatbotServer(refuse_sessions=True) as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        main(_args(endpoint, tmp_path / "out"))
        chats = server.chats()
    assert chats == []
    err = capsys.readouterr().err
    assert f"{endpoint}: session.url http://127.0.0.1:" in err
    assert "the server answered HTTP 403 (it refused the session)" in err


def test_bad_endpoint_file_is_one_line_before_any_call(tmp_path: Path, auth: None,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('url = "ftp://x"\n[body]\ntext = "{{message}}"\n[reply]\npath = "a"\n')
    assert main(_args(bad, tmp_path / "out")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"trustmh: error: {bad}: url must be an http:// or https:// URL, got 'ftp://x'"
    assert not (tmp_path / "out" / "results.json").exists()


def test_missing_endpoint_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_ENDPOINT", raising=False)
    assert main(["run", "--model", "http/acme", "--out", str(tmp_path)]) == 2
    assert "needs --endpoint FILE" in capsys.readouterr().err


def _run(endpoint: Path, out: Path, env: dict[str, str], server: ChatbotServer,
         kill_when: Callable[[list[Seen]], bool] | None, subtasks: str = SUBTASKS) -> int:
    cmd = [sys.executable, "-m", "trustmh.cli", *_args(endpoint, out, "--max-tasks", "1", "--max-connections", "1",
                                                       subtasks=subtasks)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        if kill_when is not None and kill_when(server.chats()):
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return -9
        time.sleep(0.02)
    if proc.poll() is None:
        proc.kill()
        pytest.fail("run did not finish")
    return proc.returncode


@pytest.mark.slow
@pytest.mark.parametrize("subtasks", [SUBTASKS, "harm_to_others,knowledge"], ids=["scripted", "probe"])
def test_sigkill_mid_conversation_then_resume_repeats_no_finished_call(tmp_path: Path, subtasks: str) -> None:
    env = {**os.environ, "ACME_AUTH": TOKEN}
    env.pop("TRUSTMH_CACHE_DIR", None)  # the run directory keeps its own cache (and session file)
    env.pop("INSPECT_CACHE_DIR", None)

    def slow(history: list[dict[str, str]], system: str) -> str:
        time.sleep(0.15)
        return f"(reply {sum(1 for m in history if m['role'] == 'user')}) I'm an AI. Call 988 if in danger."

    with ChatbotServer(respond=slow) as ref_server:
        endpoint = ref_server.endpoint_file(tmp_path / "ref.toml")
        assert _run(endpoint, tmp_path / "ref", env, ref_server, None, subtasks) == 0
        ref_chats = len(ref_server.chats())
    with ChatbotServer(respond=slow) as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        # killed after the conversation's first turn was answered: the resumed run must continue that session
        assert _run(endpoint, tmp_path / "run", env, server, lambda chats: any(
            len(c.said) == 1 and not c.said[0].startswith("Below is") for c in chats), subtasks) == -9
        before = [c.said for c in server.chats()]
        assert _run(endpoint, tmp_path / "run", env, server, None, subtasks) == 0
        after = [c.said for c in server.chats()][len(before):]
    # a call is its conversation so far: nothing the product already answered is asked again (in its
    # session, or replayed into a new one)
    # (except the one call in flight when the process died: answered by the product, never cached)
    repeated = [c for c in after if c in before]
    assert len(repeated) <= 1
    assert len(before) + len(after) <= ref_chats + 1
    conversation = [c for c in before + after if not c[0].startswith("Below is")]
    assert max(len(c) for c in conversation) >= 2  # the conversation went on after the kill
    ref, run = _items(tmp_path / "ref"), _items(tmp_path / "run")
    assert sorted((r["subtask"], r["item_id"]) for r in run) == sorted((r["subtask"], r["item_id"]) for r in ref)


@pytest.mark.slow
def test_workers_split_a_product_run(tmp_path: Path) -> None:
    env = {**os.environ, "ACME_AUTH": TOKEN}
    with ChatbotServer() as server:
        endpoint = server.endpoint_file(tmp_path / "acme.toml")
        proc = subprocess.run([sys.executable, "-m", "trustmh.cli", "run", "--model", "http/acme", "--endpoint",
                               str(endpoint), "--subtasks", "ai_disclosure", "--no-judge", "--out", str(tmp_path / "out"),
                               "--display", "none", "--workers", "2", "--n-boot", "200", "--limit", "10"], env=env,
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-500:]
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    # --limit keeps the run within the server's request budget (the full set has long chats of up to 40 turns)
    assert results["subtasks"]["conversation/ai_disclosure"]["n"] == 10


# issue 34: a product that fails names the endpoint file and the status or network error, never only
# `RetryError(<Future …>)`
def _failing_run(tmp: Path, endpoint: Path) -> str:
    code = main(["run", "--model", "http/acme", "--endpoint", str(endpoint), "--suite", "starter", "--subtasks",
                 "knowledge", "--limit", "1", "--no-judge", "--out", str(tmp / "out"), "--display", "none",
                 "--timeout", "5", "--max-retries", "0", "--n-boot", "200"])
    assert code == 5  # incomplete: the run finished, its sub-task errored (docs/exit-codes.md)
    return " ".join(json.loads((tmp / "out" / "results.json").read_text())["errors"])


@pytest.fixture(scope="module")
def answered_500(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("http500")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACME_AUTH", TOKEN)
        with ChatbotServer(chat_status=500) as server:
            endpoint = server.endpoint_file(tmp / "acme.toml")
            return endpoint, _failing_run(tmp, endpoint)


def test_a_500_names_the_endpoint_file(answered_500: tuple[Path, str]) -> None:
    assert str(answered_500[0]) in answered_500[1]


def test_a_500_names_the_status(answered_500: tuple[Path, str]) -> None:
    assert "the server answered HTTP 500" in answered_500[1]


def test_a_500_is_not_reported_as_a_retry_future(answered_500: tuple[Path, str]) -> None:
    assert "RetryError" not in answered_500[1]


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("refused")
    endpoint = tmp / "acme.toml"
    endpoint.write_text('url = "http://127.0.0.1:9/chat"\n[body]\nmessages = "{{messages}}"\n[reply]\npath = "t"\n',
                        encoding="utf-8")  # port 9 (discard): nothing listens
    return endpoint, _failing_run(tmp, endpoint)


def test_a_refused_connection_names_the_endpoint_file(refused: tuple[Path, str]) -> None:
    assert str(refused[0]) in refused[1]


def test_a_refused_connection_names_the_network_error(refused: tuple[Path, str]) -> None:
    assert "ConnectError" in refused[1]


def _hang(history: list[dict[str, str]], system: str) -> str:
    time.sleep(4)  # past the run's --timeout of 1 s
    return "late"


@pytest.fixture(scope="module")
def hung(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    tmp = tmp_path_factory.mktemp("hung")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACME_AUTH", TOKEN)
        with ChatbotServer(respond=_hang) as server:
            endpoint = server.endpoint_file(tmp / "acme.toml")
            code = main(["run", "--model", "http/acme", "--endpoint", str(endpoint), "--suite", "starter",
                         "--subtasks", "knowledge", "--limit", "1", "--no-judge", "--out", str(tmp / "out"),
                         "--display", "none", "--timeout", "1", "--max-retries", "0", "--n-boot", "200"])
            assert code == 5  # incomplete
    return endpoint, " ".join(json.loads((tmp / "out" / "results.json").read_text())["errors"])


@pytest.mark.slow  # waits out the attempt timeout
def test_a_hang_names_the_endpoint_file(hung: tuple[Path, str]) -> None:
    assert str(hung[0]) in hung[1]


@pytest.mark.slow  # its fixture waits out the attempt timeout against a hung server (about 4 s of CPU), as its sibling
def test_a_hang_is_not_reported_as_a_retry_future(hung: tuple[Path, str]) -> None:
    assert "RetryError" not in hung[1]

