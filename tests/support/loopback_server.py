"""A tiny OpenAI-compatible server on 127.0.0.1 for tests (a helper module, not a test module).

It speaks just enough of the OpenAI API for Inspect's `openai-api` provider:
`POST /v1/chat/completions` (non-streaming) and `GET /v1/models`. Replies come from a user function
`respond(messages, request_json) -> str`, always with a `usage` block. Faults can be scripted per chat
request (numbered from 1): the first N answer 429 (`Retry-After: 0`), some answer 500, some are delayed.
Random faults can be injected at a rate, seeded (`fault_rate`, `fault_kinds`: 429, 500, a hang past the
client's timeout, a cut connection, an HTML page, an empty completion, and a 200 whose JSON body is cut in
half), each drawn from the request's content, not its place in the arrival order: from a hash of the seed, the
request body and how many times that same body came before (a retry or a re-ask of it draws afresh), so under
concurrency every request meets the same faults from one run to the next. Requests for some models can hang until the server stops (`hang_models`: a dead judge), and every
reply can wait a fixed `latency` (throughput benchmarks).
Every request is recorded for assertions. The server is bounded (`bounded_http`): a request past
`max_requests`, or after `max_seconds`, is answered 410 at once and fails the test, as does a call that waits
longer than `max_wait` beyond its scripted delay; it stops when its `with` block exits.

Typical use::

    from loopback_server import LoopbackServer

    def respond(messages, request):
        return "Yes" if "crisis" in messages[-1]["content"] else "No"

    with LoopbackServer(respond, fail_first=1) as server:
        monkeypatch.setenv("LOOP_BASE_URL", server.base_url)   # or: for k, v in server.env().items(): ...
        monkeypatch.setenv("LOOP_API_KEY", server.api_key)
        eval(task, model=server.model_name("judge"), ...)       # "openai-api/loop/judge"
    assert server.chat_requests[-1].json["temperature"] == 0

Inspect derives the variables from the service name: `openai-api/<service>/<model>` reads
`<SERVICE>_BASE_URL` and `<SERVICE>_API_KEY` (upper-cased, '-' -> '_').
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from bounded_http import Bounds

Respond = Callable[[list[dict[str, Any]], dict[str, Any]], Any]  # text; anything else is sent as the content

FAULT_KINDS = ("429", "500", "hang", "cut", "html", "empty", "half_json")


def message_text(message: Mapping[str, Any]) -> str:
    """The text of an OpenAI chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def count_tokens(text: str) -> int:
    """A stand-in tokenizer for `usage`: whitespace-separated words, at least 1."""
    return max(1, len(text.split()))


def default_respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return "OK"


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    number: int  # 1-based, over all requests
    method: str
    path: str
    headers: dict[str, str]
    json: dict[str, Any] | None
    chat_number: int | None = None  # 1-based, over chat completion requests only
    status: int | None = None  # None if the server never answered (stopped, or client gone)
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    reply: str | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.json or {}).get("messages") or [])

    @property
    def last_user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return message_text(users[-1]) if users else ""

    @property
    def judges_an_anchor(self) -> bool:
        """A judge call on one of the run's anchor items (`trustmh.run.anchors`): it carries a stored anchor
        reply. Tests that count a sub-task's own judge calls leave these out."""
        from trustmh.run.anchors import ANCHOR_REPLIES

        text = "\n".join(message_text(m) for m in self.messages)
        return any(reply in text for reply in ANCHOR_REPLIES.values())


class LoopbackServer:
    """OpenAI-compatible test server; see the module docstring.

    Args:
        respond: `respond(messages, request_json) -> str`, the assistant's reply for a chat request (anything
            not text is sent as the message content as it is: a hostile server).
        fail_first: the first `fail_first` chat requests answer 429 with `Retry-After: 0`.
        fail_500: chat request numbers that answer 500.
        delays: chat request number -> seconds to wait before answering (interrupted by `stop()`).
        max_requests: how many requests (of any kind) the test makes; one more fails the test.
        max_seconds: how long the test uses the server; a request after it, or still waiting then, fails it.
        max_wait: how long one request may take beyond its scripted delay before the test fails.
        api_key: the bearer token the server accepts (401 otherwise); None accepts any.
        service: the Inspect service name, used by `env()` and `model_name()`.
        model_ids: what `GET /v1/models` lists.
        latency: seconds every chat reply waits before it is sent.
        fault_rate: share of chat requests answered with a random fault, drawn from `fault_seed`, the body and
            its attempt number (how many times the same body came, this one included).
        fault_kinds: which faults to draw from (FAULT_KINDS).
        hang_seconds: how long a "hang" fault waits (set it past the client's attempt timeout).
        hang_models: chat requests for these model ids never get an answer (until the server stops).
        error_echo: text put into every error message (e.g. to check that an echoed API key is redacted).
        prompt_tokens: `prompt_tokens(messages) -> int` for `usage` (default: whitespace words per message),
            so a test can count with the same tokenizer as the code it checks.
        completion_tokens: `completion_tokens(text) -> int` for `usage` (default: whitespace words).
        cached_tokens: `cached_tokens(messages, request_json) -> int`, the prompt tokens reported as read from
            the provider's prompt cache (`usage.prompt_tokens_details.cached_tokens`; default: none reported).
        answers_as: model id asked for -> the model name its replies report (a provider's alias resolved to a
            dated model); default: the id asked for.
    """

    def __init__(
        self,
        respond: Respond | None = None,
        *,
        fail_first: int = 0,
        fail_500: Iterable[int] = (),
        delays: Mapping[int, float] | None = None,
        max_requests: int = 200,
        max_seconds: float = 60.0,
        max_wait: float = 10.0,
        api_key: str | None = "loopback-test-key",
        service: str = "loop",
        model_ids: Iterable[str] = ("loop-model",),
        latency: float = 0.0,
        fault_rate: float = 0.0,
        fault_kinds: Iterable[str] = FAULT_KINDS,
        fault_seed: int = 0,
        hang_seconds: float = 30.0,
        hang_models: Iterable[str] = (),
        error_echo: str = "",
        prompt_tokens: Callable[[list[dict[str, Any]]], int] | None = None,
        completion_tokens: Callable[[str], int] | None = None,
        cached_tokens: Callable[[list[dict[str, Any]], dict[str, Any]], int] | None = None,
        answers_as: Mapping[str, str] | None = None,
    ) -> None:
        self.answers_as = dict(answers_as or {})
        self.prompt_tokens = prompt_tokens or (lambda ms: sum(count_tokens(message_text(m)) for m in ms))
        self.completion_tokens = completion_tokens or count_tokens
        self.cached_tokens = cached_tokens
        self.usage: list[tuple[str, int, int]] = []  # (model, prompt tokens, completion tokens) per reply
        self.respond: Respond = respond or default_respond
        self.fail_first = fail_first
        self.fail_500 = set(fail_500)
        self.delays = dict(delays or {})
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.bounds = Bounds("LoopbackServer", max_requests=max_requests, max_seconds=max_seconds,
                             max_wait=max_wait)
        self.api_key = api_key if api_key is not None else "any-key"
        self._check_key = api_key is not None
        self.service = service
        self.model_ids = list(model_ids)
        self.latency = latency
        self.fault_rate = fault_rate
        self.fault_kinds = list(fault_kinds)
        unknown = set(self.fault_kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}")
        self.fault_seed = fault_seed
        self._attempts: dict[str, int] = {}  # a chat request body (canonical JSON) -> how many times it came
        self.hang_seconds = hang_seconds
        self.hang_models = set(hang_models)
        self.error_echo = error_echo
        self.faults: dict[int, str] = {}  # chat request number -> the fault injected
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # exceptions raised by `respond` (answered as 500)
        self._lock = threading.Lock()

    # ----------------------------------------------------------------------------------------- api
    @property
    def port(self) -> int:
        return self.bounds.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def env(self) -> dict[str, str]:
        """The environment variables Inspect's `openai-api/<service>/...` provider reads."""
        name = self.service.upper().replace("-", "_")
        return {f"{name}_BASE_URL": self.base_url, f"{name}_API_KEY": self.api_key}

    def model_name(self, model: str = "loop-model") -> str:
        return f"openai-api/{self.service}/{model}"

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.chat_number is not None]

    @property
    def stopped(self) -> bool:
        return self.bounds.stopped.is_set()

    def start(self) -> LoopbackServer:
        self.bounds.serve(_make_handler(self))
        return self

    def stop(self) -> None:
        """Stop serving (idempotent; safe from any thread, including a request handler)."""
        self.bounds.stop()

    def take_violations(self) -> list[str]:
        """The bounds this server saw broken, taken as expected (a test that breaks them on purpose)."""
        return self.bounds.take_violations()

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.bounds.leave(exc)

    # ------------------------------------------------------------------------------------ internals
    def _record(self, handler: BaseHTTPRequestHandler, body: dict[str, Any] | None) -> RecordedRequest:
        """Number and record a request (the bounds admitted it already)."""
        with self._lock:
            is_chat = handler.command == "POST" and handler.path.rstrip("/").endswith("/chat/completions")
            chat_number = (
                (sum(1 for r in self.requests if r.chat_number is not None) + 1) if is_chat else None
            )
            record = RecordedRequest(
                number=len(self.requests) + 1,
                method=handler.command,
                path=handler.path,
                headers={k.lower(): v for k, v in handler.headers.items()},
                json=body,
                chat_number=chat_number,
            )
            self.requests.append(record)
            return record

    def _draw_fault(self, chat_number: int, body: dict[str, Any]) -> str | None:
        """The fault this request meets, if any: a function of the seed, the body and the body's attempt number,
        so the same request meets the same faults whatever order concurrent requests arrive in."""
        if self.fault_rate <= 0:
            return None
        content = json.dumps(body, sort_keys=True, separators=(",", ":"))
        with self._lock:
            attempt = self._attempts[content] = self._attempts.get(content, 0) + 1
        digest = hashlib.sha256(f"{self.fault_seed}\n{attempt}\n{content}".encode()).digest()
        draw = random.Random(digest)
        if draw.random() >= self.fault_rate:
            return None
        kind = draw.choice(self.fault_kinds)
        with self._lock:
            self.faults[chat_number] = kind
        return kind

    def completed(self, model: str | None = None) -> list[RecordedRequest]:
        """Chat requests answered with a completion (status 200 and a reply), optionally for one model."""
        return [r for r in self.chat_requests if r.status == 200 and r.reply is not None
                and (model is None or (r.json or {}).get("model") == model)]

    def _after(self, record: RecordedRequest, status: int | None) -> None:
        record.status = status
        record.finished = time.monotonic()


def _make_handler(server: LoopbackServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        scripted_wait = 0.0  # the delays this request scripted: `bounded_http` allows them beyond max_wait
        recorded: RecordedRequest | None = None  # the request being answered (its status is set as it is sent)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

        # ------------------------------------------------------------------------------ helpers
        def _send(
            self, status: int, payload: dict[str, Any], headers: Mapping[str, str] | None = None
        ) -> bool:
            data = json.dumps(payload).encode("utf-8")
            record = self.recorded
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                if record is not None:
                    # recorded before the last bytes go out: the client may read the record the moment it has
                    # its answer (seen: a status still None in a busy fast lane)
                    server._after(record, status)
                self.wfile.write(data)
                self.wfile.flush()
                return True
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (e.g. its timeout)
                if record is not None:
                    server._after(record, None)
                return False

        def _error(
            self, status: int, message: str, kind: str, headers: Mapping[str, str] | None = None
        ) -> bool:
            if server.error_echo:
                message = f"{message} {server.error_echo}"
            return self._send(status, {"error": {"message": message, "type": kind, "code": kind}}, headers)

        def _read_json(self) -> dict[str, Any] | None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                return None
            return body if isinstance(body, dict) else None

        def _authorised(self) -> bool:
            if not server._check_key:
                return True
            return self.headers.get("Authorization") == f"Bearer {server.api_key}"

        def _drop(self) -> None:
            self.close_connection = True

        # ------------------------------------------------------------------------------ routes
        def do_GET(self) -> None:
            record = self.recorded = server._record(self, None)
            if self.path.rstrip("/").endswith("/models"):
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "loopback"}
                    for m in server.model_ids
                ]
                ok = self._send(200, {"object": "list", "data": data})
                status: int | None = 200
            else:
                ok = self._error(404, f"no route {self.path}", "not_found")
                status = 404
            server._after(record, status if ok else None)

        def do_POST(self) -> None:
            self.recorded = None  # a kept-alive connection's handler answered an earlier request
            body = self._read_json()
            record = self.recorded = server._record(self, body)
            status = self._chat(record, body)
            server._after(record, status)

        def _chat(self, record: RecordedRequest, body: dict[str, Any] | None) -> int | None:
            if record.chat_number is None:
                return 404 if self._error(404, f"no route {self.path}", "not_found") else None
            if not self._authorised():
                return 401 if self._error(401, "invalid api key", "invalid_api_key") else None
            if body is None or not isinstance(body.get("messages"), list):
                return (
                    400
                    if self._error(400, "body must be JSON with a 'messages' list", "invalid_request_error")
                    else None
                )
            n = record.chat_number
            delay = server.delays.get(n, 0.0) + server.latency
            if body.get("model") in server.hang_models:
                delay = server.max_seconds + 1  # a dead endpoint: no answer until the server stops
            self.scripted_wait += delay
            if delay > 0 and server.bounds.wake.wait(delay):
                self._drop()  # stopped (or out of time) while waiting: hang up without an answer
                return None
            fault = server._draw_fault(n, body)
            if fault is not None:
                return self._fault(fault, n, body)
            if n <= server.fail_first:
                ok = self._error(
                    429, f"rate limited (scripted, request {n})", "rate_limit_exceeded", {"Retry-After": "0"}
                )
                return 429 if ok else None
            if n in server.fail_500:
                return (
                    500 if self._error(500, f"server error (scripted, request {n})", "server_error") else None
                )
            if body.get("stream"):
                return (
                    400
                    if self._error(
                        400, "streaming is not supported by the loopback server", "invalid_request_error"
                    )
                    else None
                )
            try:
                content = server.respond(body["messages"], body)
            except Exception as ex:  # a bug in the test's respond(): answer 500 and keep it for the test
                server.errors.append(f"{type(ex).__name__}: {ex}")
                return (
                    500
                    if self._error(500, f"respond() raised {type(ex).__name__}: {ex}", "server_error")
                    else None
                )
            # a reply that is not text (a hostile server's `content: [1, 2]`) is sent as it is; counted as its JSON
            text = content if isinstance(content, str) else json.dumps(content)
            record.reply = text
            prompt_tokens = server.prompt_tokens(
                [{**m, "content": message_text(m)} for m in body["messages"]])
            completion_tokens = server.completion_tokens(text)
            with server._lock:
                server.usage.append((str(body.get("model")), prompt_tokens, completion_tokens))
            max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
            finish = "length" if max_tokens is not None and completion_tokens >= int(max_tokens) else "stop"
            payload = {
                "id": f"chatcmpl-loop-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": server.answers_as.get(str(body.get("model")), body.get("model") or "loop-model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish,
                        "logprobs": None,
                    }
                ],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                },
            }
            if server.cached_tokens is not None:
                cached = min(prompt_tokens, server.cached_tokens(body["messages"], body))
                payload["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
            return 200 if self._send(200, payload) else None

        def _fault(self, kind: str, n: int, body: dict[str, Any]) -> int | None:
            if kind == "429":
                ok = self._error(429, f"rate limited (injected, request {n})", "rate_limit_exceeded",
                                 {"Retry-After": "0"})
                return 429 if ok else None
            if kind == "500":
                return 500 if self._error(500, f"server error (injected, request {n})", "server_error") else None
            if kind == "hang":
                self.scripted_wait += server.hang_seconds
                server.bounds.wake.wait(server.hang_seconds)
                self._drop()
                return None
            if kind == "cut":
                self._drop()  # close without a byte of response
                return None
            raw: bytes
            ctype = "application/json"
            status = 200
            if kind == "html":
                raw, ctype, status = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html", 502
            elif kind == "empty":  # a 200 with no choices, its usage reported (and billed) all the same
                with server._lock:
                    server.usage.append((str(body.get("model")), 1, 0))
                raw = json.dumps({"id": f"chatcmpl-loop-{n}", "object": "chat.completion", "created": 0,
                                  "model": body.get("model") or "loop-model", "choices": [],
                                  "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}
                                  }).encode()
            else:  # half_json: a 200 whose JSON body is cut in half
                full = json.dumps({"id": f"chatcmpl-loop-{n}", "object": "chat.completion", "created": 0,
                                   "model": body.get("model") or "loop-model",
                                   "choices": [{"index": 0, "message": {"role": "assistant", "content": "x" * 40},
                                                "finish_reason": "stop"}]}).encode()
                raw = full[: len(full) // 2]
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return None
            return status

    return Handler
