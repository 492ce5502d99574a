"""A chatbot product's own HTTP API, described in one TOML file (`--endpoint FILE`): plain Python, no Inspect.

The Inspect provider `http` (`trustmh.models.http`) reads the file with `load_endpoint`, and uses the helpers
here to build each request and read each reply. See docs/products.md for the file format. In short::

    url = "https://chat.example.com/api/messages"   # where a message goes
    method = "POST"
    send = "latest"              # "latest": only the newest user message (the product keeps the state)
                                 # "conversation": the whole conversation every time (a stateless API)
    [headers]
    Authorization = "Bearer ${ACME_API_KEY}"        # ${VAR}: from the environment, never written anywhere
    [body]                        # the request body; "{{...}}" placeholders are filled in per request
    session = "{{session_id}}"
    text = "{{message}}"
    [reply]
    path = "reply.text"           # where the reply text is in the response JSON
    [session]
    start = "request"             # "request": POST to `url` below and read the id at `id_path`;
    url = "https://chat.example.com/api/sessions"   # "client": trustmh makes a uuid; "none": no session
    id_path = "session.id"
    greeting_path = "greeting"    # optional: the product's first words, in the session response

Placeholders: `{{message}}` (the newest user message), `{{messages}}` (the conversation as a list of
`{role, content}`; a value that is exactly this placeholder becomes the list), `{{session_id}}`,
`{{system}}` (the system prompt trustmh would send, or null), `{{max_tokens}}` and `{{temperature}}`
(numbers, or null), and `{{elapsed_seconds}}` (optional: the simulated time since the conversation began,
for a product that accepts a simulated clock; a number, or null when the sub-task sets no clock). A file that
uses `{{elapsed_seconds}}` declares that the product reads it (`Endpoint.clock`): the AI-disclosure probe then
plays its clock conversations, which move that time past three hours. Placeholders are filled in the body, the
session body and the header values. A JSON path is dot-separated keys and list indices:
`choices.0.message.content` (a leading `$.` is allowed).
"""

from __future__ import annotations

import os
import re
import tomllib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import read_text_bounded
from trustmh.safe_text import as_text

SEND_MODES = ("latest", "conversation")
SESSION_STARTS = ("none", "client", "request")
METHODS = ("POST", "PUT", "GET")
PLACEHOLDERS = ("message", "messages", "session_id", "system", "max_tokens", "temperature", "elapsed_seconds")
CLOCK = "elapsed_seconds"  # the optional simulated-clock placeholder (docs/products.md#clock)
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_]+)\s*\}\}")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOP_KEYS = {"url", "method", "send", "headers", "body", "reply", "session", "greeting"}


# Where `trustmh run --endpoint FILE` puts the file's path for the provider (and for every --workers shard).
ENDPOINT_ENV = "TRUSTMH_ENDPOINT"


class EndpointError(TrustmhError):
    """A bad endpoint file, or a response that does not match it: one line naming the field."""


@dataclass(frozen=True)
class SessionSpec:
    start: str = "none"  # "none" | "client" | "request"
    url: str | None = None
    method: str = "POST"
    body: Any = None
    id_path: str | None = None
    greeting_path: str | None = None


@dataclass(frozen=True)
class Endpoint:
    """A parsed endpoint file. Header values keep their `${VAR}` references: `headers()` resolves them."""

    source: str
    url: str
    method: str = "POST"
    send: str = "conversation"
    header_templates: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    reply_path: str = ""
    session: SessionSpec = field(default_factory=SessionSpec)
    greeting: str | None = None  # fixed first words of the product, if it always says the same

    @property
    def stateful(self) -> bool:
        return self.send == "latest"

    def _fields(self) -> dict[str, Any]:
        """Every field that may hold `${VAR}`, by its name in the file."""
        return {"url": self.url, "headers": dict(self.header_templates), "body": self.body,
                "session.url": self.session.url, "session.body": self.session.body}

    @property
    def clock(self) -> bool:
        """The product accepts a simulated clock: the file sends `{{elapsed_seconds}}` somewhere."""
        return any(_uses(part, CLOCK) for part in (self.body, self.session.body, dict(self.header_templates)))

    def env_names(self) -> list[str]:
        """The environment variables the file references (in any field: url, headers, body, session)."""
        return sorted({name for _, name in _env_refs(self._fields(), "")})

    def check_env(self, environ: Mapping[str, str] | None = None) -> None:
        """Refuse, before any call, a `${VAR}` that is not set or is empty, naming the field and the
        variable (an unset variable would be sent literally, an empty one as an empty credential)."""
        env = os.environ if environ is None else environ
        for where, name in _env_refs(self._fields(), ""):
            if not env.get(name):
                state = "is empty" if name in env else "is not set"
                raise EndpointError(f"{self.source}: {where} needs the environment variable {name}, which {state}")

    def resolve(self, value: Any, where: str, environ: Mapping[str, str] | None = None) -> Any:
        """`value` (a string, table or list of the file) with its `${VAR}` replaced by the environment's values;
        a variable not set or empty is an error naming the field. Applied to the file's templates before their
        `{{placeholders}}` are filled, so a `${...}` in a user's message is never expanded."""
        env = os.environ if environ is None else environ
        if isinstance(value, str):
            def sub(m: re.Match[str]) -> str:
                if not env.get(m.group(1)):
                    state = "is empty" if m.group(1) in env else "is not set"
                    raise EndpointError(f"{self.source}: {where} needs the environment variable {m.group(1)}, "
                                        f"which {state}")
                return env[m.group(1)]
            return _ENV.sub(sub, value)
        if isinstance(value, Mapping):
            return {k: self.resolve(v, f"{where}.{k}", env) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, f"{where}.{i}", env) for i, v in enumerate(value)]
        return value

    def headers(self, environ: Mapping[str, str] | None = None, values: Mapping[str, Any] | None = None
                ) -> dict[str, str]:
        """The headers with `${VAR}` resolved and `{{placeholders}}` filled from `values` (as text); a variable
        not set or empty is an error naming the header."""
        def filled(name: str, template: str) -> str:
            got = fill(self.resolve(template, f"headers.{name}", environ), values or {})
            return "" if got is None else str(got)

        return {k: filled(k, v) for k, v in self.header_templates.items()}

    def secrets(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """Values that must never be written: every environment value the file references."""
        env = os.environ if environ is None else environ
        return [env[n] for n in self.env_names() if env.get(n)]


def _env_refs(value: Any, where: str) -> list[tuple[str, str]]:
    """(field, variable) of every `${VAR}` in a value of the file."""
    if isinstance(value, str):
        return [(where, m.group(1)) for m in _ENV.finditer(value)]
    if isinstance(value, Mapping):
        return [ref for k, v in value.items() for ref in _env_refs(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list):
        return [ref for i, v in enumerate(value) for ref in _env_refs(v, f"{where}.{i}")]
    return []


def _where(source: str, key: str) -> str:
    return f"{source}: {key}"


def _str(raw: Mapping[str, Any], key: str, source: str, prefix: str = "", *, required: bool = False,
         choices: Sequence[str] | None = None, default: str | None = None) -> str | None:
    name = f"{prefix}{key}"
    if key not in raw:
        if required:
            raise EndpointError(f"{_where(source, name)} is missing")
        return default
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise EndpointError(f"{_where(source, name)} must be a non-empty string")
    if choices is not None:
        upper = value.upper() if choices is METHODS else value
        if upper not in choices:
            raise EndpointError(f"{_where(source, name)} must be one of {', '.join(choices)}, got {value!r}")
        return upper
    return value


def _url(value: str | None, source: str, name: str) -> str | None:
    if value is not None and not re.match(r"^https?://[^\s/]+", value):
        raise EndpointError(f"{_where(source, name)} must be an http:// or https:// URL, got {value!r}")
    return value


def _check_placeholders(value: Any, source: str, name: str) -> None:
    if isinstance(value, str):
        for m in _PLACEHOLDER.finditer(value):
            if m.group(1) not in PLACEHOLDERS:
                raise EndpointError(f"{_where(source, name)}: unknown placeholder {{{{{m.group(1)}}}}} (use "
                                    f"{', '.join('{{' + p + '}}' for p in PLACEHOLDERS)})")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _check_placeholders(v, source, f"{name}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_placeholders(v, source, f"{name}.{i}")


def _uses(value: Any, placeholder: str) -> bool:
    if isinstance(value, str):
        return any(m.group(1) == placeholder for m in _PLACEHOLDER.finditer(value))
    if isinstance(value, Mapping):
        return any(_uses(v, placeholder) for v in value.values())
    if isinstance(value, list):
        return any(_uses(v, placeholder) for v in value)
    return False


def _path(value: str | None, source: str, name: str) -> str | None:
    if value is not None and not parse_json_path(value):
        raise EndpointError(f"{_where(source, name)} must be a JSON path such as reply.text or choices.0.text")
    return value


def parse_endpoint(raw: Mapping[str, Any], source: str) -> Endpoint:
    """Validate a decoded endpoint file; every problem is one EndpointError naming the field."""
    unknown = sorted(set(raw) - _TOP_KEYS)
    if unknown:
        raise EndpointError(f"{source}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_TOP_KEYS))})")
    url = _url(_str(raw, "url", source, required=True), source, "url")
    method = _str(raw, "method", source, choices=METHODS, default="POST")
    send = _str(raw, "send", source, choices=SEND_MODES, default="conversation")
    headers = raw.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise EndpointError(f"{_where(source, 'headers')} must be a table of strings")
    _check_placeholders(dict(headers), source, "headers")
    body = raw.get("body")
    if body is None:
        raise EndpointError(f"{_where(source, 'body')} is missing (the request body template)")
    if not isinstance(body, Mapping | list):
        raise EndpointError(f"{_where(source, 'body')} must be a table (the JSON object to send)")
    _check_placeholders(body, source, "body")
    if send == "conversation" and not _uses(body, "messages"):
        raise EndpointError(f"{_where(source, 'body')} must use {{{{messages}}}} when send = \"conversation\"")
    if send == "latest" and not _uses(body, "message"):
        raise EndpointError(f"{_where(source, 'body')} must use {{{{message}}}} when send = \"latest\"")
    reply = raw.get("reply")
    if not isinstance(reply, Mapping):
        raise EndpointError(f"{_where(source, 'reply')} is missing (a table with path = \"...\")")
    reply_path = _path(_str(reply, "path", source, "reply.", required=True), source, "reply.path")
    sess_raw = raw.get("session", {})
    if not isinstance(sess_raw, Mapping):
        raise EndpointError(f"{_where(source, 'session')} must be a table")
    unknown = sorted(set(sess_raw) - set(SessionSpec.__dataclass_fields__))
    if unknown:
        raise EndpointError(f"{source}: unknown field(s) session.{', session.'.join(unknown)}")
    start = _str(sess_raw, "start", source, "session.", choices=SESSION_STARTS,
                 default="client" if send == "latest" else "none")
    session = SessionSpec(
        start=str(start),
        url=_url(_str(sess_raw, "url", source, "session.", required=start == "request"), source, "session.url"),
        method=str(_str(sess_raw, "method", source, "session.", choices=METHODS, default="POST")),
        body=sess_raw.get("body"),
        id_path=_path(_str(sess_raw, "id_path", source, "session.", required=start == "request"), source,
                      "session.id_path"),
        greeting_path=_path(_str(sess_raw, "greeting_path", source, "session."), source, "session.greeting_path"),
    )
    if session.body is not None:
        _check_placeholders(session.body, source, "session.body")
    if send == "latest" and start == "none":
        raise EndpointError(f"{_where(source, 'session.start')}: send = \"latest\" needs a session "
                            "(\"client\" or \"request\") so that the product knows which conversation a message "
                            "belongs to")
    if start != "none" and not (_uses(body, "session_id") or _uses(headers, "session_id")):
        raise EndpointError(f"{_where(source, 'body')} must carry {{{{session_id}}}} when session.start = "
                            f"\"{start}\"")
    greeting = _str(raw, "greeting", source)
    if greeting is not None and session.greeting_path is not None:
        raise EndpointError(f"{source}: give greeting or session.greeting_path, not both")
    return Endpoint(source=source, url=str(url), method=str(method), send=str(send), header_templates=dict(headers),
                    body=body, reply_path=str(reply_path), session=session, greeting=greeting)


# An endpoint file is a few dozen lines; a larger one is not read.
MAX_ENDPOINT_FILE_BYTES = 1 << 20


def load_endpoint(path: str | Path, environ: Mapping[str, str] | None = None, *, check_env: bool = True) -> Endpoint:
    """Read and validate an endpoint file (TOML); with `check_env`, every `${VAR}` it references must be set
    and non-empty (`Endpoint.check_env`)."""
    source = str(path)
    try:
        text = read_text_bounded(Path(path).expanduser(), MAX_ENDPOINT_FILE_BYTES, f"--endpoint {source}")
    except TrustmhError as exc:
        raise EndpointError(str(exc)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise EndpointError(f"{source}: not valid TOML ({' '.join(str(exc).split())})") from None
    endpoint = parse_endpoint(raw, source)
    if check_env:
        endpoint.check_env(environ)
    return endpoint


def parse_json_path(path: str) -> list[str | int]:
    """`$.a.b.0` / `a.b[0]` -> ["a", "b", 0]; [] for an empty path."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:].lstrip(".")
    text = re.sub(r"\[(\d+)\]", r".\1", text)
    parts = [p for p in text.split(".")]
    if not text or any(not p for p in parts):
        return []
    return [int(p) if p.isdigit() else p for p in parts]


def json_at(data: Any, path: str, field_name: str, source: str = "endpoint") -> Any:
    """The value at a JSON path; an EndpointError naming the field and where the path stopped."""
    current = data
    walked: list[str] = []
    for part in parse_json_path(path):
        if isinstance(part, int) and isinstance(current, list) and part < len(current):
            current = current[part]
        elif isinstance(current, Mapping) and str(part) in current:
            current = current[str(part)]
        else:
            at = ".".join(walked) or "the top level"
            raise EndpointError(f"{source}: {field_name} = {path!r}: the response has no {part!r} at {at}")
        walked.append(str(part))
    return current


def reply_text(data: Any, endpoint: Endpoint) -> str:
    """The reply text of a response, which must be a string at `reply.path`."""
    value = json_at(data, endpoint.reply_path, "reply.path", endpoint.source)
    if isinstance(value, list) and all(isinstance(p, str | dict) for p in value):
        return as_text(value)  # a reply in parts (strings, or tables with "text"): joined
    if not isinstance(value, str):
        raise EndpointError(f"{endpoint.source}: reply.path = {endpoint.reply_path!r}: expected text, got "
                            f"{type(value).__name__}")
    return value


def fill(template: Any, values: Mapping[str, Any]) -> Any:
    """The template with its `{{placeholders}}` filled in: a string that is exactly one placeholder becomes
    its value (a list, a number, null); inside longer text a value is written as text."""
    if isinstance(template, str):
        whole = _PLACEHOLDER.fullmatch(template.strip())
        if whole:
            return values.get(whole.group(1))
        return _PLACEHOLDER.sub(lambda m: "" if values.get(m.group(1)) is None else str(values.get(m.group(1))),
                                template)
    if isinstance(template, Mapping):
        return {k: fill(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill(v, values) for v in template]
    return template


def new_client_session_id() -> str:
    return str(uuid.uuid4())


def session_id_from(data: Any, endpoint: Endpoint) -> str:
    """The id a session-start response carries at `session.id_path`."""
    value = json_at(data, str(endpoint.session.id_path), "session.id_path", endpoint.source)
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise EndpointError(f"{endpoint.source}: session.id_path = {endpoint.session.id_path!r}: expected an id, "
                            f"got {value!r}")
    return str(value)


def endpoint_has_clock(environ: Mapping[str, str] | None = None) -> bool:
    """Whether the run's endpoint file (`TRUSTMH_ENDPOINT`) sends a simulated clock; False without a file, or
    when it cannot be read (the run reports that file's error itself)."""
    path = (os.environ if environ is None else environ).get(ENDPOINT_ENV)
    if not path:
        return False
    try:
        return load_endpoint(path).clock
    except EndpointError:
        return False


def endpoint_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """The values of the environment variables the current endpoint file's headers reference (for the run's
    secret scrubbing); [] when there is no endpoint file or it cannot be read."""
    env = dict(os.environ if environ is None else environ)
    path = env.get(ENDPOINT_ENV)
    if not path:
        return []
    try:
        return load_endpoint(path, env, check_env=False).secrets(env)
    except EndpointError:
        return []
