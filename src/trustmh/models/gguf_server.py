"""The bundled model's server process: llama.cpp's own OpenAI-compatible server (from the `xllamacpp` wheel)
on loopback, started and stopped by `trustmh.models.gguf`.

    python -m trustmh.models.gguf_server MODEL.gguf --servers N --threads T --ctx C [--alias NAME]

Starts `N` llama.cpp servers in this process, each with one slot (one request at a time) and `T` threads, on
free loopback ports, and one front on another free loopback port that hands each request to an idle server
(waiting for one when all are busy). Prints `ready <port>` on stdout when it accepts requests, and exits when
its standard input closes (the parent ended, however it ended), so a run never leaves a server behind.

Why one slot per server rather than one server with N slots: llama.cpp's continuous batching computes a
request together with whatever else is running, and its prompt cache starts a prompt from a previous one's
state; both change the floating-point sums, so a greedy reply would depend on which requests ran at the
same time (ggml-org/llama.cpp#6950, #7052). Single-slot servers without the prompt cache compute each
request on its own, the same way every time: a run's results depend only on its seed.
"""

from __future__ import annotations

import argparse
import http.client
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
    # a request's reply must not depend on the one before it (see the module docstring)
    params.cache_prompt = False
    params.cache_ram_mib = 0
    # llama.cpp's "extra buffer types" (CPU repacking, AMX) crash on some CPUs (ggml-org/llama.cpp#20824)
    params.no_extra_bufts = True
    params.warmup = False
    params.verbosity = -1
    server = xlc.Server(params)
    port = urlsplit(server.listening_address).port
    if not port:
        raise RuntimeError(f"llama.cpp server reported no port: {server.listening_address!r}")
    return server, port


class _Front(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, ports: list[int]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
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
    front = _Front([port for _, port in backends])
    print(f"ready {front.server_address[1]}", flush=True)
    front.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
