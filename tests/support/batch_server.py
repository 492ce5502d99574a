"""A loopback OpenAI-compatible Batch API on 127.0.0.1 for tests and benchmarks (a helper module, not a test).

It speaks the part of the OpenAI API that Inspect's `openai` provider uses in batch mode
(`GenerateConfig(batch=...)`, `trustmh run --batch`): `POST /v1/files` (multipart upload of the JSONL request
file), `POST /v1/batches`, `GET /v1/batches/{id}` (status polling), `GET /v1/files/{id}/content` (output and
error files), and live `POST /v1/chat/completions` for calls that are not batched. Point the provider at it
with `OPENAI_BASE_URL` / `OPENAI_API_KEY` (`env()`), model `openai/<name>` (`model_name()`). Inspect's
`openai-api/<service>` provider has no batch support, so a batch test must use `openai/`.

What a batch does is scripted:

* `delay`: seconds from creation until a batch is complete (polling before then says `in_progress`);
* `fail_once(body) -> bool`: a request whose body matches fails the first time it is submitted (a line in the
  batch's error file, `{"error": {"code": 500, ...}}`) and succeeds when asked again: a partly failed batch;
* `expire_batches`: the first N batches expire instead of completing (every request in the error file with
  code `batch_expired`, as OpenAI writes it);
* `end_batches`, `end_status`, `answered_before_end`: the first N batches end as a whole with `end_status`
  (OpenAI's batch status `failed`: rejected, no file; `expired` or `cancelled`: the first `answered_before_end`
  requests answered in the output file, the rest in the error file as `batch_expired` / `batch_cancelled`;
  Anthropic: those answered `succeeded`, the rest `errored` for failed, else `expired` / `canceled`);
* `damage_output(data) -> bytes`: each OpenAI output file as written (lines cut, bodies without `choices`,
  unknown custom_ids), its answers still billed;
* `cached_tokens(body) -> int`, `cache_write_tokens(body) -> int`: prompt tokens reported as read from and
  written to the provider's prompt cache.

Every request a batch answers is counted, per custom_id (`answered_ids`) and per request body
(`answered_bodies`, the body's canonical JSON), so a test can show that no finished request was sent twice
even across a client restart (whose custom_ids are new). A request is "answered" when its batch completes
with a reply for it (what a provider bills), polled or not (`finish_due`); a failed or expired line is not. The server is bounded
(`bounded_http`): an HTTP request past `max_requests` or after `max_seconds` is answered 410 at once and fails
the test; it stops when its `with` block exits. It can also be
run as a process (`python batch_server.py --port-file F ...`) that writes its counts to a JSON file after
every completed batch, so a test can SIGKILL a client and run it again against the same server.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from bounded_http import Bounds
from loopback_server import count_tokens, message_text

Respond = Callable[[list[dict[str, Any]], dict[str, Any]], str]
EXPIRED_MESSAGE = "This request could not be executed before the completion window expired."


def body_key(body: dict[str, Any]) -> str:
    """A request body's identity across processes: its canonical JSON."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


@dataclass
class BatchJob:
    id: str
    input_file_id: str
    endpoint: str
    created_at: float
    lines: list[dict[str, Any]]
    expire: bool
    end: str | None = None  # ends as a whole with this status (`BatchServer.end_batches`)
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0


@dataclass
class BatchServer:
    respond: Respond | None = None
    delay: float = 0.0
    fail_once: Callable[[dict[str, Any]], bool] | None = None
    expire_batches: int = 0
    end_batches: int = 0
    end_status: str = "cancelled"
    answered_before_end: int = 0
    # applied to each OpenAI output file as it is written: a damaged result file (lines cut in half, bodies
    # without `choices`, a file cut short, unknown custom_ids); the answers in it are still counted as billed
    damage_output: Callable[[bytes], bytes] | None = None
    cached_tokens: Callable[[dict[str, Any]], int] | None = None
    cache_write_tokens: Callable[[dict[str, Any]], int] | None = None
    # `usage` counts (default: whitespace words per message and reply), so a benchmark can count with the
    # plan's own tokenizer
    prompt_tokens: Callable[[list[dict[str, Any]]], int] | None = None
    completion_tokens: Callable[[str], int] | None = None
    max_requests: int = 2000
    max_seconds: float = 120.0
    max_wait: float = 10.0
    api_key: str = "batch-test-key"
    counts_file: Path | None = None
    # what the server saw and answered
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, BatchJob] = field(default_factory=dict)
    answered_ids: Counter[str] = field(default_factory=Counter)
    answered_bodies: Counter[str] = field(default_factory=Counter)
    submitted_bodies: Counter[str] = field(default_factory=Counter)
    live_bodies: Counter[str] = field(default_factory=Counter)
    failed_bodies: Counter[str] = field(default_factory=Counter)
    http_requests: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.bounds = Bounds("BatchServer", max_requests=self.max_requests, max_seconds=self.max_seconds,
                             max_wait=self.max_wait)
        self._expired = 0
        self._ended = 0

    # ------------------------------------------------------------------------------------------- api
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.bounds.port}/v1"

    def env(self) -> dict[str, str]:
        """The variables Inspect's `openai/...` and `anthropic/...` providers read."""
        return {"OPENAI_BASE_URL": self.base_url, "OPENAI_API_KEY": self.api_key,
                "ANTHROPIC_BASE_URL": self.base_url.removesuffix("/v1"), "ANTHROPIC_API_KEY": self.api_key}

    @staticmethod
    def model_name(model: str = "gpt-4o-mini") -> str:
        return f"openai/{model}"

    def start(self) -> BatchServer:
        self.bounds.serve(_handler(self))
        return self

    def stop(self) -> None:
        self.bounds.stop()

    def take_violations(self) -> list[str]:
        """The bounds this server saw broken, taken as expected (a test that breaks them on purpose)."""
        return self.bounds.take_violations()

    def __enter__(self) -> BatchServer:
        return self.start()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.bounds.leave(exc)

    def wait_stopped(self) -> None:
        self.bounds.stopped.wait()

    def finish_due(self) -> None:
        """Finish every batch whose time has come, polled or not (a provider works on, and bills, a batch
        whether or not its client is still there to ask)."""
        with self._lock:
            for job in self.batches.values():
                self._advance(job)

    def twice(self) -> dict[str, int]:
        """Request bodies a batch answered more than once (none, when no finished request was paid twice)."""
        self.finish_due()
        return {k: n for k, n in self.answered_bodies.items() if n > 1}

    def counts(self) -> dict[str, Any]:
        return {"answered_bodies": dict(self.answered_bodies), "answered_ids": dict(self.answered_ids),
                "submitted_bodies": dict(self.submitted_bodies), "failed_bodies": dict(self.failed_bodies),
                "live_bodies": dict(self.live_bodies), "batches": {b.id: b.status for b in self.batches.values()},
                "http_requests": self.http_requests}

    # ------------------------------------------------------------------------------------ internals
    def _reply(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        messages = body.get("messages") or []
        text = (self.respond or (lambda m, b: "OK"))(messages, body)
        texts = [{**m, "content": message_text(m)} for m in messages]
        prompt = (self.prompt_tokens(texts) if self.prompt_tokens is not None
                  else sum(count_tokens(m["content"]) for m in texts))
        completion = (self.completion_tokens or count_tokens)(text)
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": completion,
                                 "total_tokens": prompt + completion}
        details: dict[str, int] = {}
        if self.cached_tokens is not None:
            details["cached_tokens"] = min(prompt, self.cached_tokens(body))
        if self.cache_write_tokens is not None:
            details["cache_write_tokens"] = min(prompt - details.get("cached_tokens", 0), self.cache_write_tokens(body))
        if details:
            usage["prompt_tokens_details"] = details
        return {"id": f"chatcmpl-batch-{n}", "object": "chat.completion", "created": int(time.time()),
                "model": body.get("model") or "loop-batch",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop", "logprobs": None}], "usage": usage}

    def _message(self, body: dict[str, Any], n: int) -> dict[str, Any]:
        """An Anthropic Messages reply for a request body (the chat reply's text and token counts)."""
        chat = self._reply({**body, "messages": [{"role": m.get("role"), "content": m.get("content")}
                                                 for m in body.get("messages") or []]}, n)
        usage = chat["usage"]
        return {"id": f"msg_batch_{n}", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": chat["choices"][0]["message"]["content"]}],
                "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": usage["prompt_tokens"] - usage.get("prompt_tokens_details", {}).get(
                    "cached_tokens", 0), "output_tokens": usage["completion_tokens"],
                    "cache_read_input_tokens": usage.get("prompt_tokens_details", {}).get("cached_tokens", 0),
                    "cache_creation_input_tokens": 0}}

    def _message_batch_json(self, job: BatchJob, host: str) -> dict[str, Any]:
        def stamp(t: float) -> str:
            return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

        ended = job.status != "in_progress"
        expired = len(job.lines) if job.expire and ended else 0
        return {"id": job.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": {"processing": 0 if ended else len(job.lines), "succeeded": job.completed,
                                   "errored": job.failed, "canceled": 0, "expired": expired},
                "created_at": stamp(job.created_at), "expires_at": stamp(job.created_at + 86400),
                "ended_at": stamp(time.time()) if ended else None, "archived_at": None,
                "cancel_initiated_at": None,
                "results_url": f"http://{host}/v1/messages/batches/{job.id}/results" if ended else None}

    def _next_end(self) -> str | None:
        """How the next batch ends as a whole (`end_batches`), None: as scripted otherwise (under the lock)."""
        if self._ended >= self.end_batches:
            return None
        self._ended += 1
        return self.end_status

    def _new_file(self, data: bytes) -> str:
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = data
        return file_id

    def _advance(self, job: BatchJob) -> None:
        """Finish a batch whose time has come (called under the lock, when it is polled)."""
        if job.status != "in_progress" or time.time() - job.created_at < self.delay:
            return
        out, err = [], []
        for i, line in enumerate(job.lines):
            body, cid = line.get("body") or {}, str(line.get("custom_id"))
            key = body_key(body)
            if job.end is not None and (job.end == "failed" or i >= self.answered_before_end):
                code = {"expired": "batch_expired", "cancelled": "batch_cancelled"}.get(job.end, "invalid_request")
                err.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "response": None,
                            "error": {"code": code, "message": f"scripted: the batch {job.end}"}})
                continue
            if job.expire:
                err.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "response": None,
                            "error": {"code": "batch_expired", "message": EXPIRED_MESSAGE}})
                continue
            if self.fail_once is not None and self.fail_once(body) and self.failed_bodies[key] == 0:
                self.failed_bodies[key] += 1
                job.failed += 1
                err.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "response": None,
                            "error": {"code": 500, "message": "server error (scripted, first submission)"}})
                continue
            try:
                reply = self._reply(body, sum(self.answered_ids.values()) + 1)
            except Exception as exc:  # noqa: BLE001  a test's responder that fails answers that request with an
                # error line, never leaves the batch unfinished (a client would poll it for ever)
                job.failed += 1
                err.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "response": None,
                            "error": {"code": 500, "message": f"the test's responder failed: {exc!r}"}})
                continue
            self.answered_ids[cid] += 1
            self.answered_bodies[key] += 1
            job.completed += 1
            out.append({"id": f"batch_req_{job.id}_{i}", "custom_id": cid, "error": None,
                        "response": {"status_code": 200, "request_id": f"req_{i}", "body": reply}})
        job.status = job.end or ("expired" if job.expire else "completed")
        if job.endpoint == "/v1/messages":  # Anthropic: one results file, every request in it
            rows = [{"custom_id": o["custom_id"], "result": {"type": "succeeded", "message": self._message(
                        next(x["body"] for x in job.lines if str(x.get("custom_id")) == o["custom_id"]), i)}}
                    for i, o in enumerate(out)]
            kind = {"expired": "expired", "cancelled": "canceled"}.get(job.end or "", "expired" if job.expire else None)
            rows += [{"custom_id": e["custom_id"], "result": {"type": kind} if kind else {
                "type": "errored", "error": {"type": "error", "error": {"type": "api_error",
                                                                         "message": e["error"]["message"]}}}}
                     for e in err]
            job.output_file_id = self._new_file(b"".join(json.dumps(r).encode() + b"\n" for r in rows))
            out, err = [], []
        if out:
            data = b"".join(json.dumps(o).encode() + b"\n" for o in out)
            job.output_file_id = self._new_file(data if self.damage_output is None else self.damage_output(data))
        if job.end == "failed":  # rejected as a whole: OpenAI writes no file, only the batch's `errors`
            out, err = [], []
        if err:
            job.error_file_id = self._new_file(b"".join(json.dumps(e).encode() + b"\n" for e in err))
        if self.counts_file is not None:
            tmp = self.counts_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.counts()), encoding="utf-8")
            tmp.replace(self.counts_file)

    def _batch_json(self, job: BatchJob) -> dict[str, Any]:
        return {"id": job.id, "object": "batch", "endpoint": job.endpoint, "input_file_id": job.input_file_id,
                "completion_window": "24h", "status": job.status, "created_at": int(job.created_at),
                "output_file_id": job.output_file_id, "error_file_id": job.error_file_id,
                "errors": {"object": "list", "data": [{"code": "invalid_request", "message": "scripted rejection",
                                                       "param": None, "line": None}]}
                if job.status == "failed" else None,
                "request_counts": {"total": len(job.lines), "completed": job.completed, "failed": job.failed}}


def _handler(server: BatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: Any, raw: bytes | None = None) -> None:
            data = raw if raw is not None else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/octet-stream" if raw is not None
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _error(self, status: int, message: str) -> None:
            self._send(status, {"error": {"message": message, "type": "invalid_request_error", "code": None}})

        def _admit(self) -> bool:
            with server._lock:
                server.http_requests += 1
            if (self.headers.get("Authorization") != f"Bearer {server.api_key}"
                    and self.headers.get("x-api-key") != server.api_key):
                self._error(401, "invalid api key")
                return False
            return True

        def _body(self) -> bytes:
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def do_GET(self) -> None:
            if not self._admit():
                return
            path = self.path.split("?")[0].rstrip("/")
            if m := re.fullmatch(r"/v1/batches/([\w-]+)", path):
                with server._lock:
                    job = server.batches.get(m.group(1))
                    if job is not None:
                        server._advance(job)
                        payload = server._batch_json(job)
                return self._send(200, payload) if job is not None else self._error(404, "no such batch")
            if m := re.fullmatch(r"/v1/messages/batches/([\w-]+)(/results)?", path):
                with server._lock:
                    job = server.batches.get(m.group(1))
                    if job is not None:
                        server._advance(job)
                        if m.group(2):
                            raw = server.files.get(job.output_file_id or "", b"")
                        payload = server._message_batch_json(job, self.headers.get("Host", ""))
                if job is None:
                    return self._error(404, "no such batch")
                return self._send(200, None, raw=raw) if m.group(2) else self._send(200, payload)
            if m := re.fullmatch(r"/v1/files/([\w-]+)/content", path):
                data = server.files.get(m.group(1))
                return self._send(200, None, raw=data) if data is not None else self._error(404, "no such file")
            self._error(404, f"no route {self.path}")

        def do_POST(self) -> None:
            raw = self._body()
            if not self._admit():
                return
            path = self.path.split("?")[0].rstrip("/")
            if path == "/v1/files":
                ctype = self.headers.get("Content-Type", "")
                msg = BytesParser(policy=HTTP).parsebytes(
                    f"Content-Type: {ctype}\r\n\r\n".encode() + raw)
                data = next((part.get_payload(decode=True) for part in msg.iter_parts()
                             if part.get_param("name", header="content-disposition") == "file"), None)
                if data is None:
                    return self._error(400, "no file part")
                with server._lock:
                    file_id = server._new_file(data)
                return self._send(200, {"id": file_id, "object": "file", "bytes": len(data), "created_at":
                                        int(time.time()), "filename": "batch.jsonl", "purpose": "batch",
                                        "status": "processed"})
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                return self._error(400, "body is not JSON")
            if path == "/v1/batches":
                with server._lock:
                    data = server.files.get(str(body.get("input_file_id")))
                    if data is None:
                        return self._error(400, "no such input file")
                    lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
                    for line in lines:
                        server.submitted_bodies[body_key(line.get("body") or {})] += 1
                    expire = server._expired < server.expire_batches
                    server._expired += int(expire)
                    job = BatchJob(id=f"batch_{len(server.batches) + 1}", input_file_id=str(body["input_file_id"]),
                                   endpoint=str(body.get("endpoint")), created_at=time.time(), lines=lines,
                                   expire=expire, end=server._next_end())
                    server.batches[job.id] = job
                    payload = server._batch_json(job)
                return self._send(200, payload)
            if path == "/v1/messages/batches":
                with server._lock:
                    lines = [{"custom_id": r.get("custom_id"), "body": r.get("params") or {}}
                             for r in body.get("requests") or []]
                    for line in lines:
                        server.submitted_bodies[body_key(line["body"])] += 1
                    expire = server._expired < server.expire_batches
                    server._expired += int(expire)
                    job = BatchJob(id=f"msgbatch_{len(server.batches) + 1}", input_file_id="", endpoint="/v1/messages",
                                   created_at=time.time(), lines=lines, expire=expire, end=server._next_end())
                    server.batches[job.id] = job
                    payload = server._message_batch_json(job, self.headers.get("Host", ""))
                return self._send(200, payload)
            if path == "/v1/messages":
                with server._lock:
                    server.live_bodies[body_key(body)] += 1
                    n = sum(server.live_bodies.values())
                return self._send(200, server._message(body, n))
            if path == "/v1/chat/completions":
                with server._lock:
                    server.live_bodies[body_key(body)] += 1
                    n = sum(server.live_bodies.values())
                return self._send(200, server._reply(body, n))
            self._error(404, f"no route {self.path}")

    return Handler


def main() -> None:
    """Run as a process: write the port to --port-file, the counts to --counts-file, stop after --seconds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--counts-file", type=Path, required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    args = parser.parse_args()
    server = BatchServer(respond=lambda m, b: json_verdict(m), delay=args.delay, max_seconds=args.seconds,
                         counts_file=args.counts_file).start()
    args.port_file.write_text(server.base_url, encoding="utf-8")
    server.bounds.wake.wait()  # stopped, or out of time: a process server ends with its bounds
    server.stop()
    broken = server.take_violations()
    if broken:  # no test owns this process's bounds: say it and exit non-zero, for its test to see
        raise SystemExit(f"{server.bounds.name}: " + "; ".join(broken))


def json_verdict(messages: list[dict[str, Any]]) -> str:
    """A reply any trustmh judge or multiple-choice parser accepts often enough for a smoke run."""
    return "A"


if __name__ == "__main__":
    main()
