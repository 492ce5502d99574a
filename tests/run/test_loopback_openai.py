"""Inspect's `openai-api` provider against the loopback server: retries, timeouts, usage, request records.

What these tests pin down about inspect-ai 0.3.285 (they fail if it changes):
* A 429 is retried inside one Inspect attempt by the OpenAI SDK itself (2 retries by default, ~0.5 s
  apart); with the SDK's retries off (`model_args={"max_retries": 0}`) Inspect retries, after a backoff of
  3-6 s. Server errors likewise: one Inspect attempt is up to 3 HTTP requests unless the SDK's are off.
* `timeout` bounds the whole retry loop but is only checked between attempts: it does not cut a reply
  that is slow in coming. `attempt_timeout` does: the attempt is abandoned and retried per `max_retries`.
  So a dead endpoint is bounded by `attempt_timeout` (per attempt) x `max_retries` (+ backoff).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.log import EvalLog
from inspect_ai.scorer import match
from inspect_ai.solver import generate

from bounded_http import StallError
from loopback_server import LoopbackServer, count_tokens, message_text

CANNED = {"What is two plus two?": "4", "Name the colour of the sky.": "blue", "Say yes.": "yes"}


def canned(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return CANNED.get(message_text(messages[-1]), "unknown")


def _task(prompts: list[str] | None = None) -> Task:
    prompts = prompts or list(CANNED)
    return Task(
        dataset=[Sample(input=p, target=CANNED.get(p, "x")) for p in prompts],
        solver=generate(),
        scorer=match(),
    )


def _eval(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, task: Task, **kwargs: Any
) -> EvalLog:
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    [log] = eval(task, model=server.model_name("judge"), log_dir=str(tmp_path), display="none", **kwargs)
    return log


def _sample_error(log: EvalLog) -> str:
    assert log.samples is not None
    return " ".join(s.error.message for s in log.samples if s.error is not None)


# ------------------------------------------------------------------------------------ through Inspect
def test_one_rate_limit_then_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(canned, fail_first=1) as server:
        log = _eval(
            server, tmp_path, monkeypatch, _task(["Say yes."]), max_retries=2, timeout=30, attempt_timeout=10
        )
    assert log.status == "success"
    assert log.samples is not None
    assert log.samples[0].output.completion == "yes"
    assert [r.status for r in server.chat_requests] == [429, 200]
    assert server.chat_requests[0].json == server.chat_requests[1].json  # the same request, resent


@pytest.mark.slow
def test_rate_limit_is_retried_by_inspect_when_the_sdk_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LoopbackServer(canned, fail_first=1) as server:
        log = _eval(
            server,
            tmp_path,
            monkeypatch,
            _task(["Say yes."]),
            max_retries=2,
            timeout=60,
            attempt_timeout=10,
            model_args={"max_retries": 0},
        )
    assert log.status == "success"
    first, second = server.chat_requests
    assert (first.status, second.status) == (429, 200)
    # Inspect's own backoff (exponential with jitter, starting at 3 s), not the SDK's (~0.5 s)
    assert second.started - first.started >= 2.5


def test_dead_endpoint_is_bounded_by_attempt_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(canned, delays={n: 60 for n in range(1, 10)}) as server:
        start = time.monotonic()
        log = _eval(
            server, tmp_path, monkeypatch, _task(["Say yes."]), max_retries=0, timeout=5, attempt_timeout=1
        )
        elapsed = time.monotonic() - start
    assert elapsed < 20  # not the 60 s delay, nor the SDK's 600 s read timeout
    assert log.status == "error"
    assert "AttemptTimeoutError" in _sample_error(log)
    assert log.error is not None
    assert "AttemptTimeoutError" in log.error.message
    assert len(server.chat_requests) == 1
    assert server.chat_requests[0].status is None  # the client hung up before the reply


@pytest.mark.slow
def test_timeout_alone_does_not_cut_a_slow_reply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(canned, delays={1: 2.5}) as server:
        log = _eval(server, tmp_path, monkeypatch, _task(["Say yes."]), max_retries=0, timeout=1)
    assert log.status == "success"  # `timeout` is only checked between attempts
    [request] = server.chat_requests
    assert request.status == 200
    assert request.finished is not None
    assert request.finished - request.started >= 2.5


@pytest.mark.slow
def test_server_errors_exhaust_bounded_retries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(canned, fail_500=range(1, 100)) as server:
        log = _eval(
            server, tmp_path, monkeypatch, _task(["Say yes."]), max_retries=0, timeout=30, attempt_timeout=10
        )
    assert log.status == "error"
    assert "InternalServerError" in _sample_error(log)
    # one Inspect attempt = the first request plus the OpenAI SDK's own 2 retries
    assert [r.status for r in server.chat_requests] == [500, 500, 500]


def test_usage_and_requests_are_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(canned) as server:
        log = _eval(
            server,
            tmp_path,
            monkeypatch,
            _task(),
            temperature=0,
            seed=7,
            max_tokens=32,
            max_retries=1,
            timeout=30,
        )
    assert log.status == "success"
    assert log.samples is not None
    assert len(log.samples) == 3
    assert {s.input: s.output.completion for s in log.samples} == CANNED
    assert all(s.scores and s.scores["match"].value == "C" for s in log.samples)

    requests = server.chat_requests
    assert len(requests) == 3
    for r in requests:
        assert r.json is not None
        assert r.json["temperature"] == 0
        assert r.json["seed"] == 7
        assert r.json["max_tokens"] == 32
        assert r.json["model"] == "judge"
        assert r.headers["authorization"] == f"Bearer {server.api_key}"

    # usage: per sample and in the log's totals, equal to what the server reported
    expected_in = sum(sum(count_tokens(message_text(m)) for m in r.messages) for r in requests)
    expected_out = sum(count_tokens(r.reply or "") for r in requests)
    for s in log.samples:
        assert s.output.usage is not None
        assert s.output.usage.total_tokens > 0
    usage = log.stats.model_usage[server.model_name("judge")]
    assert (usage.input_tokens, usage.output_tokens) == (expected_in, expected_out)
    assert usage.total_tokens == expected_in + expected_out


# ------------------------------------------------------------------------------------ server alone
def _http(
    url: str, body: dict[str, Any] | None = None, key: str | None = None, timeout: float = 10
) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET")
    req.add_header("Content-Type", "application/json")
    if key is not None:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as ex:
        return ex.code, json.loads(ex.read())


def _chat(server: LoopbackServer, text: str, key: str | None = "default") -> tuple[int, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    return _http(server.base_url + "/chat/completions", body, server.api_key if key == "default" else key)


def test_server_speaks_the_openai_shapes() -> None:
    with LoopbackServer(canned, model_ids=["a", "b"], fail_500=[2]) as server:
        status, models = _http(server.base_url + "/models")
        assert status == 200
        assert [m["id"] for m in models["data"]] == ["a", "b"]
        assert _chat(server, "Say yes.", key="wrong")[0] == 401  # chat request 1: bad key
        status, body = _chat(server, "Say yes.")  # chat request 2: scripted 500
        assert status == 500
        assert body["error"]["type"] == "server_error"
        status, body = _chat(server, "What is two plus two?")
        assert status == 200
        assert body["choices"][0]["message"] == {"role": "assistant", "content": "4"}
        assert body["usage"] == {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}
    assert [r.status for r in server.requests] == [200, 401, 500, 200]
    assert [r.chat_number for r in server.requests] == [None, 1, 2, 3]


def test_server_scripted_429_carries_retry_after() -> None:
    with LoopbackServer(canned, fail_first=2) as server:
        url = server.base_url + "/chat/completions"
        req = urllib.request.Request(
            url,
            data=json.dumps({"messages": []}).encode(),
            method="POST",
            headers={"Authorization": f"Bearer {server.api_key}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(req, timeout=10)
        assert info.value.code == 429
        assert info.value.headers["Retry-After"] == "0"
        assert _chat(server, "x")[0] == 429
        assert _chat(server, "x")[0] == 200


def test_respond_errors_become_500_and_are_kept() -> None:
    def broken(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        raise KeyError("no canned answer")

    with LoopbackServer(broken) as server:
        status, body = _chat(server, "hello")
    assert status == 500
    assert "KeyError" in body["error"]["message"]
    assert server.errors
    assert "no canned answer" in server.errors[0]


def test_a_request_past_the_cap_is_answered_410_at_once() -> None:
    with LoopbackServer(canned, max_requests=2) as server:
        _chat(server, "Say yes.")
        _chat(server, "Say yes.")
        start = time.monotonic()
        status, _ = _chat(server, "Say yes.")
        waited = time.monotonic() - start
        broken = server.take_violations()
    assert status == 410
    assert waited < 1
    assert broken == ["request 3 (POST /v1/chat/completions) came after the cap of max_requests=2"]
    assert len(server.requests) == 2


def test_a_broken_cap_fails_the_with_block() -> None:
    named = r"LoopbackServer on 127\.0\.0\.1:\d+ \(started at test_loopback_openai\.py:\d+\)"
    with pytest.raises(StallError, match=named), LoopbackServer(canned, max_requests=1) as server:
        _chat(server, "Say yes.")
        _chat(server, "Say yes.")


def test_reaching_the_cap_is_not_a_violation() -> None:
    with LoopbackServer(canned, max_requests=1) as server:
        _chat(server, "Say yes.")
    assert server.bounds.violations == []


def test_max_seconds_wakes_a_delayed_request_and_fails_it() -> None:
    server = LoopbackServer(canned, delays={1: 60}, max_seconds=0.5).start()
    try:
        start = time.monotonic()
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _chat(server, "Say yes.")  # delayed 60 s, but woken and hung up on when max_seconds runs out
        assert time.monotonic() - start < 10
        assert server.chat_requests[0].status is None
        assert _chat(server, "Say yes.")[0] == 410  # out of time: answered at once
        broken = server.take_violations()
    finally:
        server.stop()
    assert "was still waiting" in broken[0]
    assert "came after max_seconds=0.5 ran out" in broken[1]


def _slow_answer(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    """A handler that takes 0.3 s of its own, none of it scripted."""
    time.sleep(0.3)
    return "OK"


def _violations_of_one_slow_call() -> list[str]:
    with LoopbackServer(_slow_answer, max_wait=0.1) as server:
        _chat(server, "Say yes.")
        return server.take_violations()


def test_a_call_slower_than_max_wait_fails_unless_scripted() -> None:
    broken = _violations_of_one_slow_call()
    with LoopbackServer(canned, max_wait=0.1, delays={1: 0.3}) as scripted:
        _chat(scripted, "Say yes.")
    assert "took 0.3 s, past max_wait=0.1 s" in broken[0]
    assert scripted.bounds.violations == []


def test_a_slow_call_is_taken_even_while_its_request_is_still_closing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client has its answer before the server's thread times the request: taking the violations waits
    for it (the fast lane once took them first and found none)."""
    import bounded_http

    timed = bounded_http.Bounds.done

    def late(self: bounded_http.Bounds, n: int, scripted_wait: float) -> None:
        time.sleep(0.3)  # the serving thread is slow to close the request
        timed(self, n, scripted_wait)

    monkeypatch.setattr(bounded_http.Bounds, "done", late)
    assert "past max_wait=0.1 s" in _violations_of_one_slow_call()[0]


def test_a_requests_status_is_recorded_by_the_time_its_client_has_the_answer(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The server records a request's status as it sends the answer, not after (the fast lane once read a
    status still None right after its call returned)."""
    recorded = LoopbackServer._after

    def late(self: LoopbackServer, record: Any, status: int | None) -> None:
        time.sleep(0.3)  # the serving thread is slow to record
        recorded(self, record, status)

    monkeypatch.setattr(LoopbackServer, "_after", late)
    with LoopbackServer(canned) as server:
        _chat(server, "Say yes.")
        statuses = [r.status for r in server.requests]
    assert statuses == [200]
