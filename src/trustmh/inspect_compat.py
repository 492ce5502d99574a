"""Where trustmh touches Inspect's private API (`inspect_ai._util`, its providers' internals), pinned with
Inspect's version; besides this module only `trustmh.inspect_batchers` (the batchers it installs) and
`trustmh.storage.fs_options` (Inspect's filesystem options, which the ground floor needs below the models).

Each function says what it needs and falls back to something safe where Inspect moves the thing it
wraps. An Inspect upgrade is checked here first (and by the golden-log test).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from trustmh.inspect_batchers import anthropic_batcher_class, openai_batcher_class
from trustmh.models import batch as trustmh_batch
from trustmh.safe_text import REPLACEMENT, as_text, safe_json, safe_text


def trace_dir() -> Path | None:
    """Where Inspect writes its trace logs, or None where that cannot be known."""
    try:
        from inspect_ai._util.trace import inspect_trace_dir
    except ImportError:  # pragma: no cover
        return None
    return Path(inspect_trace_dir())


def model_provider_known(provider: str) -> bool:
    """Whether Inspect's registry holds a model API of this name (e.g. "openai", "gguf")."""
    from inspect_ai._util.registry import registry_find, registry_unqualified_name

    return bool(registry_find(lambda info: info.type == "modelapi" and registry_unqualified_name(info) == provider))


def forget_models() -> None:
    """Drop the models Inspect memoised by name (`get_model`): a model built earlier in the process keeps the key and
    base URL it was built with, so a later call without a key would reuse it instead of failing."""
    from inspect_ai.model import _model

    _model._models.clear()


def prerequisite_error(message: str) -> Exception:
    """An exception Inspect prints as its message alone (one clear line, no traceback)."""
    from inspect_ai._util.error import PrerequisiteError

    return PrerequisiteError(message)


def inspect_error_line(exc: BaseException) -> str | None:
    """An error Inspect raised for the user to act on (`PrerequisiteError`: a missing API key, a missing
    package) as one plain line: Inspect writes its message in Rich markup (`[bold][blue]OPENAI_API_KEY...`) on
    several lines for its own console; trustmh prints one line. None for any other exception."""
    if "inspect_ai" not in sys.modules:  # not loaded: the error cannot be Inspect's (and loading it costs seconds)
        return None
    from inspect_ai._util.error import PrerequisiteError

    if not isinstance(exc, PrerequisiteError):
        return None
    return plain_text(exc.message)


def plain_text(message: Any) -> str:
    """Rich markup or a Rich `Text` as plain text on one line, without Inspect's "ERROR:" prefix."""
    from rich.errors import MarkupError
    from rich.text import Text

    if isinstance(message, Text):
        text = message.plain
    else:
        try:
            text = Text.from_markup(str(message)).plain
        except MarkupError:  # not markup after all: the text as it stands
            text = str(message)
    lines = [line.strip() for line in text.strip().removeprefix("ERROR:").splitlines() if line.strip()]
    return " ".join(f"{line}{'' if line[-1] in '.:;!?' else ':' if i == 0 and len(lines) > 1 else ''}"
                    for i, line in enumerate(lines))


# Inspect's warnings that say nothing to a trustmh user, by the logger that writes them: trustmh asks for no
# task-level retries (re-running the command is the retry), which Inspect's eval_set warns about when
# retry_immediate is left at its default.
QUIET_WARNINGS = {"inspect_ai._eval.evalset": ("retry_immediate",)}


class _QuietWarnings(logging.Filter):
    def __init__(self, words: tuple[str, ...]) -> None:
        super().__init__()
        self.words = words

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(word in record.getMessage() for word in self.words)


@contextmanager
def quiet_inspect_warnings() -> Iterator[None]:
    """While the block runs, Inspect's warnings about settings trustmh chose on purpose stay off the console (a
    filter on the logger that writes each: a logger's filters see every record it makes)."""
    installed = [(logging.getLogger(name), _QuietWarnings(words)) for name, words in QUIET_WARNINGS.items()]
    for logger, quiet in installed:
        logger.addFilter(quiet)
    try:
        yield
    finally:
        for logger, quiet in installed:
            logger.removeFilter(quiet)


@contextmanager
def cache_urls_moved(moved: dict[str, str]) -> Iterator[None]:
    """While the block runs, Inspect's response cache keys a call to NEW_URL as if it went to OLD_URL, for
    each `moved[NEW_URL] = OLD_URL` (`run --endpoint-moved`: the user says the same model answers at the new
    address). Inspect puts the provider's base URL into every cache key (`inspect_ai.model._cache`), so
    without this a moved endpoint finds none of its cached replies. URLs compare without a trailing `/`."""
    if not moved:
        yield
        return
    from inspect_ai.model import _cache

    original = _cache._cache_key
    table = {new.rstrip("/"): old.rstrip("/") for new, old in moved.items()}

    def keyed(entry: Any) -> str:
        old = table.get(str(entry.base_url or "").rstrip("/"))
        if old is None:
            return original(entry)
        new, entry.base_url = entry.base_url, old
        try:
            return original(entry)
        finally:
            entry.base_url = new

    _cache._cache_key = keyed
    try:
        yield
    finally:
        _cache._cache_key = original


@contextmanager
def provider_discounts(mode: Any, prompt_cache: bool = True) -> Iterator[None]:
    """For an eval's duration: the batch mode (a `trustmh.models.batch.BatchMode`, or None) every call reads
    (`trustmh.models.batch.call_settings`), the journaled OpenAI batcher, and --no-prompt-cache."""
    trustmh_batch.ACTIVE, trustmh_batch.PROMPT_CACHE = mode, prompt_cache
    try:
        if mode is None:
            yield
        else:
            with journaled_batches(mode.journal_dir), batch_messages_to_stderr():
                yield
    finally:
        trustmh_batch.ACTIVE, trustmh_batch.PROMPT_CACHE = None, True


@contextmanager
def batch_messages_to_stderr() -> Iterator[None]:
    """Inspect's batcher prints its messages, and its status on every poll, to stdout; while the block runs
    they go to stderr as trustmh's other progress lines do, the status only when it changes."""

    try:
        from inspect_ai.model._providers.util import batch_log
    except ImportError:  # pragma: no cover  moved: Inspect's own printing stays
        yield
        return
    last: list[tuple[int, int, int, int]] = []

    def status(s: Any) -> None:
        key = (s.batch_count, s.pending_requests, s.completed_requests, s.failed_requests)
        if s.batch_count and (not last or last[-1] != key):
            last[:] = [key]
            print(f"trustmh: batches in flight {s.batch_count}, requests pending {s.pending_requests}, completed "
                  f"{s.completed_requests}, failed {s.failed_requests}", file=sys.stderr, flush=True)

    batch_log.set_batch_log_callback(lambda message: print(f"trustmh: batch: {message}", file=sys.stderr,
                                                           flush=True))
    batch_log.set_batch_status_callback(status)
    try:
        yield
    finally:
        batch_log.set_batch_log_callback(None)
        batch_log.set_batch_status_callback(None)


@contextmanager
def journaled_batches(journal_dir: Path | None) -> Iterator[None]:
    """While the block runs, Inspect's OpenAI and Anthropic providers batch through journaled subclasses of
    their batchers (`trustmh.inspect_batchers`): every submitted batch is journaled in `journal_dir`, and a
    resumed run collects finished batches before submitting anything (`trustmh.models.batch`); on OpenAI a
    call trustmh did not mark for batching goes live, and a failed line fails only its own request, with an
    error Inspect retries; a batch that ends as a whole (failed, expired, cancelled) keeps what it answered and
    fails the rest once, naming the batch and the journal. Inspect 0.3.285 builds `OpenAIBatcher` and `AnthropicBatcher` by name in
    `inspect_ai.model._providers.openai` and `.anthropic`."""
    journal = trustmh_batch.Journal.open(journal_dir) if journal_dir is not None else None
    patched: list[tuple[Any, str, Any]] = []
    for module_name, class_name in (("openai", "OpenAIBatcher"), ("anthropic", "AnthropicBatcher")):
        try:
            module = __import__(f"inspect_ai.model._providers.{module_name}", fromlist=[class_name])
        except ImportError:  # the provider's SDK is not installed: nothing of it to batch
            continue
        original = getattr(module, class_name)
        patched.append((module, class_name, original))
        maker = openai_batcher_class if module_name == "openai" else anthropic_batcher_class  # inspect_batchers
        setattr(module, class_name, maker(original, journal))
    try:
        yield
    finally:
        for module, class_name, original in patched:
            setattr(module, class_name, original)


@contextmanager
def safe_replies() -> Iterator[None]:
    """While the block runs, every model Inspect builds (the model under test, judges, patients, whatever their
    provider) hands back its reply made safe to write (`trustmh.safe_text`) before Inspect records it: Inspect
    logs a provider's output (its `ModelEvent`, with the raw response) inside `Model._generate`, right after
    the provider's own `generate` returns, so that call is the first place trustmh can reach; a lone surrogate
    there would otherwise end the whole sub-task in a serialisation error. Wraps `ModelAPI.generate` on each
    `Model` built in the block (Inspect 0.3.285 builds every one through `Model.__init__`). An OpenAI-compatible
    reply whose content is not text is made text before Inspect parses it (`_text_content`). The same relay asks
    the caller's check before each attempt is sent (`checked_before_each_attempt`)."""
    from inspect_ai.model import Model

    original = Model.__init__

    def init(self: Any, api: Any, *args: Any, **kwargs: Any) -> None:
        original(self, api, *args, **kwargs)
        _clean_generate(api)

    Model.__init__ = init  # type: ignore[method-assign]
    try:
        with _text_content():
            yield
    finally:
        Model.__init__ = original  # type: ignore[method-assign]


NOT_TEXT = f"{REPLACEMENT} the reply's content was not text"  # holds U+FFFD: its sample counts as invalid


@contextmanager
def _text_content() -> Iterator[None]:
    """While the block runs, an OpenAI-compatible reply whose `content` is not text (a server answering
    `content: [1, 2]`) reaches Inspect as text: a list of text parts joined (`safe_text.as_text`), anything else
    as `NOT_TEXT` and what came, so its sample is an unusable reply counted against the model, never a
    TypeError inside Inspect's parsing of every sample; one line per model says so. Inspect 0.3.285 parses
    every chat completion of its OpenAI-compatible providers through `_openai.chat_message_assistant_from_openai`
    (looked up by `chat_choices_from_openai` at call time)."""
    try:
        from inspect_ai.model import _openai
    except ImportError:  # pragma: no cover  the openai SDK is absent: no such provider runs
        yield
        return
    original = _openai.chat_message_assistant_from_openai
    told: set[str] = set()

    def parse(model: str, message: Any, *args: Any, **kwargs: Any) -> Any:
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            text_parts = isinstance(content, list) and content and all(
                isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content)
            message.content = as_text(content) if text_parts else f"{NOT_TEXT}: {as_text(repr(content))[:200]}"
            if not text_parts and model not in told:
                told.add(model)
                print(f"trustmh: model {model!r} sent a reply whose content is a {type(content).__name__} "
                      f"({as_text(repr(content))[:80]}), not text; each such reply counts as unusable (invalid) "
                      "against the model", file=sys.stderr, flush=True)
        return original(model, message, *args, **kwargs)

    _openai.chat_message_assistant_from_openai = parse
    try:
        yield
    finally:
        _openai.chat_message_assistant_from_openai = original


# The check `checked_before_each_attempt` set for the calls of this context; None: nothing to check.
_ATTEMPT_CHECK: ContextVar[Callable[[], None] | None] = ContextVar("trustmh_attempt_check", default=None)


@contextmanager
def checked_before_each_attempt(check: Callable[[], None]) -> Iterator[None]:
    """While the block runs, `check()` is called before each attempt a generate of this context sends to its
    provider, Inspect's own retries included (a reply from the response cache sends nothing and is not checked);
    it raises to stop the call there, before the request. Inspect 0.3.285 retries inside `Model.generate` with no
    hook of ours between attempts, so the relay `safe_replies` puts on each provider's generate asks it; an
    exception no provider classifies as retryable ends Inspect's retry loop at once."""
    token = _ATTEMPT_CHECK.set(check)
    try:
        yield
    finally:
        _ATTEMPT_CHECK.reset(token)


def _clean_generate(api: Any) -> None:
    if getattr(api, "_trustmh_safe", False):
        return
    generate = api.generate

    async def cleaned(*args: Any, **kwargs: Any) -> Any:
        check = _ATTEMPT_CHECK.get()
        if check is not None:
            check()
        result = await generate(*args, **kwargs)
        output, call = result if isinstance(result, tuple) else (result, None)
        if isinstance(output, Exception):
            return result
        for choice in output.choices:
            _clean_message(choice.message)
        if call is not None and getattr(call, "response", None) is not None:
            call.response = safe_json(call.response)
        return (output, call) if isinstance(result, tuple) else output

    api.generate = cleaned
    api._trustmh_safe = True


def _clean_message(message: Any) -> None:
    """A reply's text made safe in place: string content, or each text or reasoning part of a list."""
    if isinstance(message.content, str):
        message.content = safe_text(message.content)
        return
    for part in message.content or []:
        for field in ("text", "reasoning", "summary"):
            value = getattr(part, field, None)
            if isinstance(value, str):
                setattr(part, field, safe_text(value))


def load_hooks_quietly() -> None:
    """Have Inspect load its hooks now, before trustmh registers its own (`run/progress.py`): Inspect prints a
    banner ("inspect_ai v…, hooks enabled: …") the first time it loads hooks and finds any registered, and
    loads them only once per process; a user's own hooks are still announced."""
    try:
        from inspect_ai.hooks._startup import init_hooks
    except ImportError:  # pragma: no cover  a moved loader costs only the banner
        return
    init_hooks()
