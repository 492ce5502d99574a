"""Inspect model provider `http`: a chatbot product's own API, described by an endpoint file (docs/products.md).

`--model http/<name> --endpoint FILE` (or Inspect's `-M endpoint=FILE`, or `TRUSTMH_ENDPOINT`); `<name>` is the
label results carry. The file format, templating and JSON paths are plain Python in `trustmh.models.endpoint`;
this module only sends requests and keeps sessions.

Sessions (a product that keeps the conversation on its server, `send = "latest"`): Inspect hands a provider
the whole conversation on every call. A session is found by the conversation so far: after each reply the
session is filed under the transcript it now holds (user and assistant turns), and the next call whose
earlier turns equal that transcript continues it, sending only the newest user message. A call with no
matching session (a first turn, or one whose earlier turns came from the response cache after a resume and
whose session is gone) starts a new session and replays the earlier user messages into it first (their
replies are kept in the output metadata, `replayed`). Sessions are also filed in
`$INSPECT_CACHE_DIR/http-sessions/` so a resumed run continues the server's own sessions instead of replaying.
Two conversations never share a session: a continued session is taken off the file until it answers.

Retries and timeouts are Inspect's (`should_retry`: connection errors, timeouts, 408/409/429/5xx); a server
that refuses a session, or a reply that is not at the stated JSON path, is an `EndpointError` naming the
field (never retried). Header values that come from the environment are never put in a log: `ModelCall`
records the body only, and the run's secret scrubbing is told their values (`endpoint_secrets`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelCall,
    ModelOutput,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from trustmh.models.endpoint import (
    CLOCK,
    ENDPOINT_ENV,
    Endpoint,
    EndpointError,
    fill,
    json_at,
    load_endpoint,
    new_client_session_id,
    reply_text,
    session_id_from,
)
from trustmh.redaction import MIN_SECRET_LEN, redact
from trustmh.safe_text import safe_json

RETRY_STATUSES = {408, 409, 425, 429}
GONE_STATUSES = {404, 410}  # a continued session the server no longer knows: start again and replay
DEFAULT_TIMEOUT = 120.0


def endpoint_path(model_args: dict[str, Any]) -> str:
    path = model_args.get("endpoint") or os.environ.get(ENDPOINT_ENV)
    if not path:
        raise EndpointError("--model http/...: needs --endpoint FILE (the product's API, see docs/products.md)")
    return str(path)


def _elapsed(message: ChatMessage) -> float | None:
    """The simulated seconds since the conversation began that a sub-task set on a user message (None: no
    clock); sent as `{{elapsed_seconds}}` to a product whose endpoint file asks for it."""
    value = (getattr(message, "metadata", None) or {}).get(CLOCK)
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _plain(messages: Sequence[ChatMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.text} for m in messages]


def _key(turns: Sequence[dict[str, str]]) -> str:
    """A transcript's identity: its user and assistant turns (system prompts belong to the product)."""
    convo = [[t["role"], t["content"]] for t in turns if t["role"] in ("user", "assistant")]
    return hashlib.sha256(json.dumps(convo, ensure_ascii=False).encode()).hexdigest()


class SessionBook:
    """Sessions filed by the transcript they hold (see the module docstring); shared by every instance of one
    endpoint in a process, and mirrored to an append-only file so that a resumed run finds them."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.free: dict[str, list[str]] = {}
        self.latest: dict[str, str] = {}  # session -> the key it was last filed under
        if path is not None and path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    row = json.loads(line)
                    self.latest[str(row["session"])] = str(row["key"])
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut by a kill
            for session, key in self.latest.items():
                self.free.setdefault(key, []).append(session)

    def take(self, key: str) -> str | None:
        sessions = self.free.get(key)
        return sessions.pop(0) if sessions else None

    def file(self, key: str, session: str) -> None:
        self.free.setdefault(key, []).append(session)
        self.latest[session] = key
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps({"key": key, "session": session}) + "\n")


_books: dict[tuple[str, str], SessionBook] = {}


def _book(name: str, endpoint: Endpoint) -> SessionBook:
    cache = os.environ.get("INSPECT_CACHE_DIR")
    where = None
    if cache and endpoint.stateful:
        tag = hashlib.sha256(f"{name}\n{endpoint.url}".encode()).hexdigest()[:16]
        where = Path(cache) / "http-sessions" / f"{tag}.jsonl"
    key = (name, str(where))
    if key not in _books:
        _books[key] = SessionBook(where)
    return _books[key]


class HTTPModelAPI(ModelAPI):
    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        self.endpoint = load_endpoint(endpoint_path(model_args))
        # the URL is the base_url, so Inspect's response cache never mixes two products of one name
        super().__init__(model_name=model_name, base_url=self.endpoint.url, api_key=None,
                         config=config or GenerateConfig())
        self.book = _book(model_name, self.endpoint)
        self.lock = asyncio.Lock()

    def max_connections(self) -> int:
        return 4

    def connection_key(self) -> str:
        return self.endpoint.url

    def should_retry(self, ex: Exception) -> bool:
        if isinstance(ex, httpx.HTTPStatusError):
            return _retryable(ex.response.status_code)
        return isinstance(ex, EndpointUnavailable | httpx.TransportError)

    async def _send(self, client: httpx.AsyncClient, method: str, url: str, body: Any, field: str,
                    values: dict[str, Any]) -> Any:
        headers = self.endpoint.headers(values=values)
        kwargs: dict[str, Any] = {"headers": headers}
        if method != "GET" and body is not None:
            kwargs["json"] = body
        where = f"{self.endpoint.source}: {field} {url}"
        try:
            response = await client.request(method, self.endpoint.resolve(url, field), **kwargs)
        except httpx.TransportError as exc:  # refused, reset, timed out: retried by Inspect, then named
            detail = " ".join(str(exc).split()) or "no detail"
            raise EndpointUnavailable(f"{where}: {type(exc).__name__} ({detail})") from None
        code = response.status_code
        if code >= 400:
            if code in GONE_STATUSES and field == "url":
                raise _SessionGone()
            message = f"{where}: the server answered HTTP {code}" + (
                " (it refused the session)" if field.startswith("session") else "")
            # a retryable status (429, 5xx…) is asked again by Inspect; the last one is what the run reports
            raise (EndpointUnavailable if _retryable(code) else EndpointError)(message)
        try:
            return response.json()
        except ValueError:
            raise EndpointError(f"{self.endpoint.source}: {field}: the response is not JSON") from None

    async def _start(self, client: httpx.AsyncClient, values: dict[str, Any]) -> tuple[str, str | None]:
        """A new session: (id, the product's greeting if any)."""
        spec = self.endpoint.session
        if spec.start == "client":
            return new_client_session_id(), self.endpoint.greeting
        if spec.start == "none":
            return "", self.endpoint.greeting
        # `${VAR}` resolved in the file's template before its `{{placeholders}}` are filled: never in a message
        body = fill(self.endpoint.resolve(spec.body or {}, "session.body"), values)
        data = self._clean(await self._send(client, spec.method, str(spec.url), body, "session.url", values))
        greeting = None
        if spec.greeting_path:
            value = json_at(data, spec.greeting_path, "session.greeting_path", self.endpoint.source)
            greeting = value if isinstance(value, str) else None
        return session_id_from(data, self.endpoint), greeting or self.endpoint.greeting

    async def _say(self, client: httpx.AsyncClient, values: dict[str, Any]) -> tuple[str, Any, Any]:
        # the body as logged keeps its `${VAR}` references; `_send` resolves them for the wire only
        body = fill(self.endpoint.body, values)
        sent = fill(self.endpoint.resolve(self.endpoint.body, "body"), values)  # `${VAR}` never in a message
        data = self._clean(await self._send(client, self.endpoint.method, self.endpoint.url, sent, "url", values))
        return reply_text(data, self.endpoint), body, data

    def _clean(self, data: Any) -> Any:
        """A response made safe to write (`trustmh.safe_text`: a lone surrogate or a control character in it
        becomes U+FFFD, and its sample counts as invalid), with every value the endpoint file takes from the
        environment redacted: a product that quotes its own credential (a header variable) in a reply never
        puts it in Inspect's hands, so neither the response cache nor a log ever holds it
        (docs/products.md#secrets)."""
        data = safe_json(data)
        secrets = sorted((v for v in self.endpoint.secrets() if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)

        def clean(value: Any) -> Any:
            if isinstance(value, str):
                return redact(value, secrets)
            if isinstance(value, dict):
                return {clean(k): clean(v) for k, v in value.items()}
            if isinstance(value, list):
                return [clean(v) for v in value]
            return value

        return clean(data) if secrets else data

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> tuple[ModelOutput, ModelCall]:
        started = time.monotonic()
        turns = _plain(input)
        system = "\n\n".join(t["content"] for t in turns if t["role"] == "system") or None
        convo = [t for t in turns if t["role"] in ("user", "assistant")]
        if not convo or convo[-1]["role"] != "user":
            raise EndpointError(f"{self.endpoint.source}: the conversation must end with a user message")
        values: dict[str, Any] = {"message": convo[-1]["content"], "system": system,
                                  "max_tokens": config.max_tokens, "temperature": config.temperature,
                                  CLOCK: _elapsed(input[-1])}
        metadata: dict[str, Any] = {"endpoint": self.endpoint.url, "send": self.endpoint.send}
        timeout = float(config.attempt_timeout or config.timeout or DEFAULT_TIMEOUT)
        async with httpx.AsyncClient(timeout=timeout) as client:
            if not self.endpoint.stateful:
                session, greeting = await self._start(client, values)
                history = ([{"role": "assistant", "content": greeting}] if greeting else []) + convo
                values.update(session_id=session, messages=history)
                text, body, data = await self._say(client, values)
                if greeting:
                    metadata["greeting"] = greeting
            else:
                clocks = [_elapsed(m) for m in input if m.role == "user"]
                text, body, data = await self._continue(client, convo, values, metadata, clocks)
        metadata["session_id"] = values.get("session_id")
        output = ModelOutput(model=self.model_name, choices=[ChatCompletionChoice(
            message=ChatMessageAssistant(content=text, model=self.model_name, source="generate"),
            stop_reason="stop")], time=time.monotonic() - started, metadata=metadata)
        return output, ModelCall.create(request={"url": self.endpoint.url, "body": body}, response=data,
                                        time=time.monotonic() - started)

    async def _continue(self, client: httpx.AsyncClient, convo: list[dict[str, str]], values: dict[str, Any],
                        metadata: dict[str, Any], clocks: list[float | None]) -> tuple[str, Any, Any]:
        """Send the newest user message into the session that holds the earlier turns (or a new one); `clocks`
        are the user messages' simulated times, for the earlier ones replayed into a new session."""
        earlier = convo[:-1]
        async with self.lock:
            session = self.book.take(_key(earlier))
        if session is not None:
            try:
                values["session_id"] = session
                text, body, data = await self._say(client, values)
            except _SessionGone:
                session = None
        if session is None:
            session, greeting = await self._start(client, values)
            if greeting:
                metadata["greeting"] = greeting
            values["session_id"] = session
            replayed = []
            for k, turn in enumerate(t for t in earlier if t["role"] == "user"):
                said, _, _ = await self._say(client, {**values, "message": turn["content"], CLOCK: clocks[k]})
                replayed.append(said)
            if replayed:
                metadata["replayed"] = replayed
            text, body, data = await self._say(client, values)
        async with self.lock:
            self.book.file(_key([*convo, {"role": "assistant", "content": text}]), session)
        return text, body, data


def last_failure(exc: BaseException, api: Any = None) -> BaseException:
    """The error a call that used up its retries is reported with: Inspect's retry loop ends in tenacity's
    `RetryError(<Future …>)`, which names neither the endpoint nor what went wrong, so its last attempt's own
    error is reported instead; for the `http` provider an error that does not name the endpoint file (a time-out
    of the attempt) is named with it. Any other exception is returned as it is."""
    attempt = getattr(exc, "last_attempt", None)  # tenacity's RetryError (Inspect's dependency, not ours)
    if type(exc).__name__ != "RetryError" or attempt is None:
        return exc
    last = attempt.exception() if attempt.failed else None
    if last is None:
        return exc
    if isinstance(api, HTTPModelAPI) and not isinstance(last, EndpointError):
        detail = " ".join(str(last).split()) or "no detail"
        return EndpointUnavailable(f"{api.endpoint.source}: url {api.endpoint.url}: {type(last).__name__} ({detail}) "
                                   f"after {attempt.attempt_number} attempt(s)")
    return last


def _retryable(code: int) -> bool:
    return code in RETRY_STATUSES or code >= 500


class EndpointUnavailable(EndpointError):
    """A call the product did not answer (a refused connection, a time-out, HTTP 429 or 5xx): Inspect asks it
    again; the message names the endpoint file, the field and the status or network error."""


class _SessionGone(Exception):
    """The server no longer knows a continued session (404/410)."""


@modelapi(name="http")
def http() -> type[ModelAPI]:
    return HTTPModelAPI
