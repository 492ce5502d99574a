"""The bundled model's server process: llama.cpp's own OpenAI-compatible server (from the `xllamacpp` wheel)
on loopback, started and stopped by `trustmh.models.gguf`.

    python -m trustmh.models.gguf_server MODEL.gguf --servers N --threads T --ctx C [--alias NAME]

Starts `N` llama.cpp servers in this process, each with one slot (one request at a time) and `T` threads, on
free loopback ports, and one front on another free loopback port that hands each request to an idle server
(waiting for one when all are busy). Prints `ready <port>` on stdout when it accepts requests, and exits when
its standard input closes (the parent ended, however it ended), so a run never leaves a server behind.

Why one slot per server rather than one server with N slots: llama.cpp's continuous batching computes a
request together with whatever else is running, which changes the floating-point sums, so a greedy reply
would depend on which requests ran at the same time (ggml-org/llama.cpp#6950, #7052). A single-slot server
computes each request on its own.

Why the prompt cache is on, and flash attention off: most calls share a long prefix with an earlier one (a
sub-task's instructions, a judge's rubric), and each server keeps the KV state of earlier prompts (in its
slot and in `CACHE_RAM_MIB` of memory) to start the next prompt from the longest shared prefix. Measured
with this build (docs/performance.md): without flash attention a prompt started from a cached prefix of
another *prompt* gives the same log-probabilities, to the bit, as the same prompt computed from scratch,
however the rest is cut into batches; with llama.cpp's CPU flash attention 11 of 12 replies changed. Two
cases still differ, and the front sends them with the prompt cache off (`PrefixLedger`): a prompt that
continues from tokens the server *generated* (a conversation's next turn: 5 of 5 changed), and a prompt
the server holds whole (a repeat; 3 of 28 changed with the Q4_1 file). So every reply depends only on its
request and the seed. Tried and dropped: one server with several slots (continuous batching changed 2 to 3
of 14 replies even without flash attention and with a KV stream per sequence) and n-gram speculative
decoding (7 of 15 greedy replies changed, and it was no faster).

JSON replies: a request with a JSON schema for a flat object (every judge's) reaches the server as a
llguidance grammar with fixed separators and no free whitespace (`compact_json_grammar`), where this build
has llguidance. llama.cpp's own schema grammar allows indentation, and the bundled judge indented: in the
offline demo its 58 replies took 3,102 tokens, 2,580 compact.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

# headers not passed through the front (hop-by-hop, or recomputed)
_SKIP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
PROMPT_BATCH = 512
# memory per server for the KV states of earlier prompts (about 23 kB a token for SmolLM2-135M)
CACHE_RAM_MIB = 256
# llama.cpp's flash_attn_type: -1 auto, 0 off, 1 on
FLASH_ATTENTION_OFF = 0
# llguidance's JSON options: the separators the judge prompts show, no other whitespace (`compact_json_grammar`)
COMPACT_JSON = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
LLGUIDANCE = "%llguidance"


def start_backend(path: str, threads: int, ctx: int, alias: str | None = None) -> tuple[Any, int]:
    """One single-slot llama.cpp server on a free loopback port: (server object, port). `alias` is the model
    name its replies report (else the file's path, which differs between installations)."""
    import xllamacpp as xlc

    params = xlc.CommonParams()
    params.model.path = path
    params.model_alias = {alias or Path(path).name}
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # the system picks a free port
    params.n_parallel = 1
    params.n_ctx = ctx
    params.n_batch = params.n_ubatch = PROMPT_BATCH
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    # prefix reuse that gives the same bits as computing from scratch (see the module docstring)
    params.flash_attn_type = FLASH_ATTENTION_OFF
    params.cache_prompt = True
    params.cache_ram_mib = CACHE_RAM_MIB
    # llama.cpp's "extra buffer types" repack Q4_0 weights for its fastest CPU kernels (see gguf_q4_0)
    params.no_extra_bufts = False
    params.warmup = False
    params.verbosity = -1
    server = xlc.Server(params)
    port = urlsplit(server.listening_address).port
    if not port:
        raise RuntimeError(f"llama.cpp server reported no port: {server.listening_address!r}")
    return server, port


class PrefixLedger:
    """Which requests may start from a server's prompt cache. Not a request that carries an earlier reply
    (an assistant message): the server's cache holds the tokens it generated, whose KV state was computed one
    token at a time, and a prompt continuing from them gets other bits than one computed from scratch. Not a
    request whose messages the ledger has seen whole, as a request or as the start of a longer one: the
    server holds that prompt whole and recomputes its last token alone. Not a raw prompt (its tokens are not
    tracked)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()
        self._lock = threading.Lock()

    def may_use_cache(self, request: dict[str, Any]) -> bool:
        """Record `request`'s message prefixes; whether it may start from the prompt cache."""
        # the chat template renders the tools and template options before the messages
        digest = hashlib.sha256(_canonical({k: request.get(k) for k in ("tools", "chat_template_kwargs")}))
        prefixes = []
        for message in request.get("messages") or []:
            digest.update(hashlib.sha256(_canonical(message)).digest())
            prefixes.append(digest.copy().digest())
        if not prefixes:  # a raw prompt
            return False
        with self._lock:
            whole_seen = prefixes[-1] in self._seen
            self._seen.update(prefixes)
        carries_a_reply = any(isinstance(m, dict) and m.get("role") == "assistant" for m in request["messages"])
        return not whole_seen and not carries_a_reply


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def has_llguidance() -> bool:
    """Whether this llama.cpp build compiles JSON schemas with llguidance (xllamacpp's wheels do)."""
    import xllamacpp as xlc

    return str(xlc.json_schema_to_grammar({"type": "object"})).startswith(LLGUIDANCE)


_FLAT_OBJECT_KEYS = {"type", "properties", "required", "additionalProperties", "title", "description"}
_SCALAR_KEYS = {"type", "enum", "maxLength", "minLength", "minimum", "maximum", "title", "description"}


def is_flat_object_schema(schema: Any) -> bool:
    """Whether `schema` is an object of scalar properties (strings, numbers, booleans, enums of them), the
    shape of every judge schema. Only these are compiled by `compact_json_grammar`: llguidance refuses some
    schemas that llama.cpp's own converter accepts in part, and the server then samples with no grammar at
    all (measured: a `$ref` it cannot resolve, a lookahead pattern), so anything else keeps llama.cpp's."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not set(schema) <= _FLAT_OBJECT_KEYS:
        return False
    if not isinstance(schema.get("additionalProperties", False), bool):
        return False
    properties = schema.get("properties", {})
    return isinstance(properties, dict) and all(
        isinstance(p, dict) and set(p) <= _SCALAR_KEYS and p.get("type") in {"string", "integer", "number", "boolean"}
        for p in properties.values())


def compact_json_grammar(schema: dict[str, Any]) -> str:
    """A llguidance grammar for `schema` whose replies separate items with ", " and keys with ": " and have
    no other whitespace between tokens. Same keys and values as llama.cpp's grammar for the schema; what goes
    is the model's choice of indentation, which cost the bundled judge about a sixth of its tokens."""
    return f"{LLGUIDANCE} {{}}\nstart: %json " + json.dumps({**schema, "x-guidance": COMPACT_JSON})


def prepare_body(body: bytes | None, ledger: PrefixLedger, compact_json: bool = False) -> bytes | None:
    """A completion request as the server must get it: prompt cache off where the ledger says so, or where
    the request itself says `"cache_prompt": false`; with `compact_json`, a `json_schema` response format
    whose schema `is_flat_object_schema` as the `compact_json_grammar` of that schema."""
    if not body:
        return body
    try:
        request = json.loads(body)
    except ValueError:
        return body  # the server answers it with its own error
    if not isinstance(request, dict) or not ("messages" in request or "prompt" in request):
        return body
    may_use_cache = ledger.may_use_cache(request)
    # a client may turn the cache off for a request (a reference computed from scratch), never on
    request["cache_prompt"] = may_use_cache and request.get("cache_prompt") is not False
    response_format = request.get("response_format")
    if compact_json and isinstance(response_format, dict) and response_format.get("type") == "json_schema" \
            and "grammar" not in request:
        schema = (response_format.get("json_schema") or {}).get("schema")
        if is_flat_object_schema(schema):
            del request["response_format"]
            request["grammar"] = compact_json_grammar(schema)
    return json.dumps(request).encode()


class _Front(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ports: list[int], compact_json: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.ledger = PrefixLedger()
        self.compact_json = compact_json
        self.idle: queue.Queue[int] = queue.Queue()
        for port in ports:
            self.idle.put(port)


class _Handler(BaseHTTPRequestHandler):
    server: _Front
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the run's own logs say what happened
        pass

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")

    def _forward(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        if method == "POST":
            try:
                body = prepare_body(body, self.server.ledger, self.server.compact_json)
            except Exception as ex:  # answered, not dropped: a dropped connection is retried without end
                self._reply(500, [("Content-Type", "application/json")],
                            json.dumps({"error": {"message": f"trustmh gguf front: {type(ex).__name__}: {ex}"}}).encode())
                return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _SKIP_HEADERS}
        port = self.server.idle.get()  # an idle server, or wait for one
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=None)
            try:
                conn.request(method, self.path, body=body, headers=headers)
                response = conn.getresponse()
                data = response.read()
                status, reply_headers = response.status, response.getheaders()
            finally:
                conn.close()
        except OSError as ex:
            data, status = f'{{"error": {{"message": "llama.cpp server: {ex}"}}}}'.encode(), 502
            reply_headers = [("Content-Type", "application/json")]
        finally:
            self.server.idle.put(port)
        self._reply(status, reply_headers, data)

    def _reply(self, status: int, reply_headers: list[tuple[str, str]], data: bytes) -> None:
        self.send_response(status)
        for key, value in reply_headers:
            if key.lower() not in _SKIP_HEADERS:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _exit_when_parent_goes() -> None:
    """Standard input is a pipe from the parent: end of file means the parent is gone."""
    try:
        while sys.stdin.buffer.read(1 << 16):
            pass
    finally:
        os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m trustmh.models.gguf_server")
    parser.add_argument("model")
    parser.add_argument("--servers", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--alias", help="the model name replies report (default: the file name)")
    args = parser.parse_args(argv)
    threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    try:
        backends = [start_backend(args.model, args.threads, args.ctx, args.alias) for _ in range(max(1, args.servers))]
    except Exception as ex:  # one line for the parent to show
        print(f"error {type(ex).__name__}: {ex}", flush=True)
        return 1
    front = _Front([port for _, port in backends], compact_json=has_llguidance())
    print(f"ready {front.server_address[1]}", flush=True)
    front.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
