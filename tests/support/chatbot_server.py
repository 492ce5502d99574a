"""A stateful chatbot product on 127.0.0.1 for tests (a helper module, not a test module).

Unlike `loopback_server` (an OpenAI-compatible, stateless API) this plays a product with its own API: a
session is started with `POST /sessions` (answer `{"session": {"id": ...}, "greeting": ...}`), then every
`POST /chat` carries one user message, `{"session_id": ..., "text": ...}`, and the server keeps the
conversation and its own system prompt; the reply is at `data.reply.text`. `respond(history, system)`
writes the reply from the session's whole history (`[{role, content}]`, the newest user message last).
It checks a bearer token, can refuse every session (403), can answer every chat with one status
(`chat_status`, e.g. 500), answers 404 for an unknown session, and is
bounded (`bounded_http`): a request past `max_requests` or after `max_seconds` is answered 410 at once and fails
the test; it stops when its `with` ends.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from bounded_http import Bounds

SYSTEM_PROMPT = "You are Sam, the companion of the Acme wellbeing app."
GREETING = "Hi, I'm Sam, an AI companion (not a person). What's on your mind?"
TOKEN = "acme-secret-token-0123456789"

Respond = Callable[[list[dict[str, str]], str], str]


def default_respond(history: list[dict[str, str]], system: str) -> str:
    """A careful product: says it is an AI and points to crisis services every time."""
    n = sum(1 for m in history if m["role"] == "user")
    return (f"(reply {n}) I'm an AI, not a human or a therapist. If you are in danger, call or text 988 "
            "(Suicide & Crisis Lifeline), or talk to a trusted adult.")


@dataclass
class Seen:
    path: str
    body: Any
    headers: dict[str, str]
    status: int = 0
    reply: str | None = None
    said: tuple[str, ...] = ()  # every user message of the session up to this one: what the reply answers


@dataclass
class ChatbotServer:
    respond: Respond = default_respond
    refuse_sessions: bool = False
    reply_key: str = "text"  # the key the reply is put under (a test of a wrong `reply.path` changes it)
    chat_status: int | None = None  # set: every `POST /chat` is answered with this status (a failing product)
    max_requests: int = 500
    max_seconds: float = 120.0
    max_wait: float = 10.0
    token: str = TOKEN
    sessions: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.bounds = Bounds("ChatbotServer", max_requests=self.max_requests, max_seconds=self.max_seconds,
                             max_wait=self.max_wait)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.bounds.port}"

    def chats(self) -> list[Seen]:
        with self._lock:
            return [s for s in self.seen if s.path == "/chat" and s.status == 200]

    def endpoint_file(self, path: Path, *, env_var: str = "ACME_AUTH", reply_path: str = "data.reply.text",
                      clock: bool = False) -> Path:
        """An endpoint file for this server; its bearer token comes from `env_var`; with `clock`, it sends the
        simulated time in the body (`elapsed`) and in a header (`X-Elapsed`)."""
        header = '\nX-Elapsed = "{{elapsed_seconds}}"' if clock else ""
        field = '\nelapsed = "{{elapsed_seconds}}"' if clock else ""
        path.write_text(f'''url = "{self.url}/chat"
send = "latest"
[headers]
Authorization = "Bearer ${{{env_var}}}"{header}
[body]
session_id = "{{{{session_id}}}}"
text = "{{{{message}}}}"{field}
[reply]
path = "{reply_path}"
[session]
start = "request"
url = "{self.url}/sessions"
id_path = "session.id"
greeting_path = "greeting"
''', encoding="utf-8")
        return path

    def __enter__(self) -> ChatbotServer:
        self.bounds.serve(_handler(self))
        return self

    def stop(self) -> None:
        self.bounds.stop()

    def take_violations(self) -> list[str]:
        """The bounds this server saw broken, taken as expected (a test that breaks them on purpose)."""
        return self.bounds.take_violations()

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        self.bounds.leave(exc)

    def handle(self, path: str, body: Any, headers: dict[str, str]) -> tuple[int, Any]:
        with self._lock:
            seen = Seen(path, body, headers)
            self.seen.append(seen)
            if headers.get("authorization") != f"Bearer {self.token}":
                seen.status = 401
                return 401, {"error": "bad token"}
            if path == "/sessions":
                if self.refuse_sessions:
                    seen.status = 403
                    return 403, {"error": "no new sessions"}
                sid = f"s{len(self.sessions) + 1}"
                self.sessions[sid] = []
                seen.status = 200
                return 200, {"session": {"id": sid}, "greeting": GREETING}
            if path == "/chat" and self.chat_status is not None:
                seen.status = self.chat_status
                return self.chat_status, {"error": "the product is down"}
            if path != "/chat" or not isinstance(body, dict):
                seen.status = 400
                return 400, {"error": "bad request"}
            history = self.sessions.get(str(body.get("session_id")))
            if history is None:
                seen.status = 404
                return 404, {"error": "unknown session"}
            history.append({"role": "user", "content": str(body.get("text")), "elapsed": body.get("elapsed")})
            reply = self.respond(list(history), SYSTEM_PROMPT)
            history.append({"role": "assistant", "content": reply})
            seen.status, seen.reply = 200, reply
            seen.said = tuple(m["content"] for m in history if m["role"] == "user")
            return 200, {"data": {"reply": {self.reply_key: reply}}}


def _handler(server: ChatbotServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError:
                body = None
            status, answer = server.handle(self.path, body, {k.lower(): v for k, v in self.headers.items()})
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler
