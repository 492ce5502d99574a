"""The one place trustmh touches Inspect's private API (`inspect_ai._util`), pinned with Inspect's version.

Each function says what it needs and falls back to something safe where Inspect moves the thing it
wraps. An Inspect upgrade is checked here first (and by the golden-log test).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trustmh.models import batch as trustmh_batch
from trustmh.safe_text import safe_json, safe_text


def fs_options(url: str) -> dict[str, Any]:
    """The fsspec options Inspect uses for `url` (so trustmh's run files and Inspect's logs agree)."""
    try:
        from inspect_ai._util.file import default_fs_options
    except ImportError:  # pragma: no cover  a moved helper must not make storage unusable
        return {"use_listings_cache": False}
    return dict(default_fs_options(url))


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
    their batchers (`journaled_batcher_classes`): every submitted batch is journaled in `journal_dir`, and a
    resumed run collects finished batches before submitting anything (`trustmh.models.batch`); on OpenAI a
    call trustmh did not mark for batching goes live, and a failed or expired line fails only its own request,
    with an error Inspect retries. Inspect 0.3.285 builds `OpenAIBatcher` and `AnthropicBatcher` by name in
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
        maker = openai_batcher_class if module_name == "openai" else anthropic_batcher_class
        setattr(module, class_name, maker(original, journal))
    try:
        yield
    finally:
        for module, class_name, original in patched:
            setattr(module, class_name, original)


def _journal_mixin(journal: Any) -> Any:
    """What both journaled batchers share: journal every batch they submit; before the first batched call,
    read the journal's batches (`_journal_state`, `_journal_answers` are the provider's) and answer each
    request whose body a journaled batch holds from that batch, waiting for it while it runs."""
    import anyio

    class JournalMixin:
        _recovered: Any
        _waiting: dict[str, set[str]]

        def _journal_init(self) -> None:
            self._recovered = trustmh_batch.Recovered()
            self._waiting = {}  # journaled batch still running -> its request hashes
            self._recovery_lock = anyio.Lock()
            self._recovery_started = False

        def _journal_key(self, request: dict[str, Any]) -> str:
            return trustmh_batch.request_hash(request)

        def _journal_label(self) -> str:
            raise NotImplementedError

        async def _journal_state(self, batch_id: str) -> str:  # "running", "ended" or "gone"
            raise NotImplementedError

        async def _journal_answers(self, batch_id: str, entry: dict[str, Any]) -> list[tuple[str, Any]]:
            raise NotImplementedError

        async def _recovered_answer(self, h: str) -> Any:
            async with self._recovery_lock:
                if not self._recovery_started:
                    self._recovery_started = True
                    self._waiting = {b: set((e.get("requests") or {}).values()) for b, e in journal.batches.items()
                                     if e.get("model") == self._journal_label()}
                    await self._poll_waiting()
            answer = self._recovered.take(h)
            while answer is None and any(h in hashes for hashes in self._waiting.values()):
                await anyio.sleep(self._tick)  # type: ignore[attr-defined]
                async with self._recovery_lock:
                    await self._poll_waiting()
                answer = self._recovered.take(h)
            return answer

        async def _poll_waiting(self) -> None:
            for batch_id in list(self._waiting):
                entry = journal.batches[batch_id]
                if entry.get("files") is None:
                    try:
                        state = await self._journal_state(batch_id)
                    except Exception as exc:  # noqa: BLE001  unknown or unreachable: its requests are asked anew
                        state = "gone"
                        # named before anything is submitted again: a provider still running it bills both
                        print(f"trustmh: batch {batch_id} of the journal {journal.root / trustmh_batch.JOURNAL}: "
                              f"the provider does not know it ({type(exc).__name__}); its "
                              f"{len(self._waiting[batch_id])} request(s) are submitted again (if it still runs "
                              "at the provider, cancel it there)", file=sys.stderr, flush=True)
                    if state == "running":
                        continue
                    if state == "gone":
                        del self._waiting[batch_id]
                        continue
                hashes = entry.get("requests") or {}
                for custom_id, answer in await self._journal_answers(batch_id, entry):
                    if custom_id in hashes:
                        self._recovered.answers.setdefault(hashes[custom_id], []).append(answer)
                del self._waiting[batch_id]

        def _journal_submitted(self, batch_id: str, batch: list[Any]) -> None:
            journal.submitted(batch_id, self._journal_label(),
                              {r.custom_id: self._journal_key(r.request) for r in batch})

    return JournalMixin


def openai_batcher_class(base: Any, journal: Any) -> Any:
    """A subclass of Inspect's `OpenAIBatcher` with the run's batch journal (see `journaled_batches`)."""
    import json

    # the HTTP library Inspect's batcher builds its error responses with (httpx2 in Inspect 0.3.285)
    httpx2 = sys.modules[base.__module__].httpx2
    mixin = _journal_mixin(journal)  # used only with a journal

    class JournaledOpenAIBatcher(mixin, base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if journal is not None:
                self._journal_init()

        async def _live(self, request: dict[str, Any]) -> Any:
            create = (self._openai_client.responses.create if self.endpoint == "/v1/responses"
                      else self._openai_client.chat.completions.create)
            return await create(**request)

        async def generate_for_request(self, request: dict[str, Any]) -> Any:
            if not trustmh_batch.WANT_BATCH.get():  # a live call on a model that also batches (a turn)
                return await self._live(request)
            if journal is not None:
                answer = await self._recovered_answer(self._journal_key(request))
                if answer is not None:
                    return self._response_cls.model_validate(answer)
            return await super().generate_for_request(request)

        def _journal_label(self) -> str:
            return f"openai {getattr(self._openai_client, 'base_url', '')}"

        async def _journal_state(self, batch_id: str) -> str:
            info = await self._openai_client.batches.retrieve(batch_id)
            if info.status in ("validating", "in_progress", "finalizing", "cancelling"):
                return "running"
            journal.batches[batch_id]["files"] = [f for f in (info.output_file_id, info.error_file_id) if f]
            return "ended"

        async def _journal_answers(self, batch_id: str, entry: dict[str, Any]) -> list[tuple[str, Any]]:
            answers = []
            for file_id in entry.get("files") or []:  # kept when the batch was collected, else downloaded now
                data = journal.kept_result(file_id)
                if data is None:
                    data = await self._download_result_file(file_id)
                answers.extend(trustmh_batch.answered_lines(data))
            return answers

        async def _create_batch(self, batch: list[Any]) -> str:
            batch_id: str = await super()._create_batch(batch)
            if journal is not None:
                self._journal_submitted(batch_id, batch)
            return batch_id

        async def _handle_batch_result(self, batch: Any, completion_info: Any) -> Any:
            # Inspect's own reading fails the whole batch on one line it cannot read, and each retry of each
            # request then submits it again (paid every time): here a line cut in half, a body with no answer
            # or an unknown custom_id is left out and named, and only the requests left without an answer are
            # asked live, once each
            files = list(self._uris_from_completion_info(completion_info))
            results: dict[str, Any] = {}
            unreadable = unknown = 0
            for file_id in files:
                for line in (await self._download_result_file(file_id)).decode("utf-8", "replace").splitlines():
                    if not line.strip():
                        continue
                    try:
                        row = json.loads(line)
                        request_id, answer = self._parse_jsonl_line(row)
                        if not isinstance(answer, Exception) and not trustmh_batch.readable_body(
                                row["response"]["body"]):
                            raise ValueError("no answer in the body")
                    except Exception:  # noqa: BLE001  a damaged line: its request is asked live below
                        unreadable += 1
                        continue
                    if request_id in batch.requests:
                        results[request_id] = answer
                    else:
                        unknown += 1
            missing = [r for r in batch.requests if r not in results]
            if unreadable or unknown or missing:
                print(f"trustmh: batch {batch.id}: result file(s) {', '.join(files) or 'none'}: {unreadable} "
                      f"unreadable line(s), {unknown} unknown custom_id(s); the {len(missing)} request(s) left "
                      "without an answer are asked live, once each (if this recurs, the provider's batch results "
                      "are damaged: run without --batch)", file=sys.stderr, flush=True)
            for request_id in missing:
                try:
                    results[request_id] = await self._live(batch.requests[request_id].request)
                except Exception as exc:  # noqa: BLE001  that request's own error, retried by Inspect
                    results[request_id] = exc
            if journal is not None:
                journal.collected(batch.id, list(self._uris_from_completion_info(completion_info)))
            return results

        async def _download_result_file(self, file_id: str) -> bytes:
            data: bytes = await super()._download_result_file(file_id)
            if journal is not None:
                journal.keep_result(file_id, data)
            return data

        def _parse_jsonl_line(self, line_data: dict[str, Any]) -> tuple[str, Any]:
            error = line_data.get("error")
            if error is None:
                return super()._parse_jsonl_line(line_data)
            # one failed or expired line fails its own request with an error the provider retries (Inspect
            # builds it without a request, which raises and fails the whole batch); an expired line
            # ("batch_expired") is asked again in a new batch, within --max-retries
            code = error.get("code")
            status = code if isinstance(code, int) and code >= 400 else 503
            response = httpx2.Response(status_code=status, text=str(error.get("message") or code),
                                       request=httpx2.Request("POST", self.endpoint))
            return str(line_data.get("custom_id") or ""), \
                self._openai_client._make_status_error_from_response(response)

    return JournaledOpenAIBatcher


def anthropic_batcher_class(base: Any, journal: Any) -> Any:
    """A subclass of Inspect's `AnthropicBatcher` with the run's batch journal (see `journaled_batches`).
    Inspect's Anthropic provider batches only the calls whose config asks for it, and fails only a batch's
    failed lines, so the journal is all this adds."""
    if journal is None:
        return base

    class JournaledAnthropicBatcher(_journal_mixin(journal), base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._journal_init()

        def _journal_key(self, request: dict[str, Any]) -> str:
            # the body as submitted: Inspect merges `extra_body` into it when it creates the batch
            params = dict(request)
            params.update(params.pop("extra_body", None) or {})
            return trustmh_batch.request_hash(params)

        async def generate_for_request(self, request: dict[str, Any]) -> Any:
            answer = await self._recovered_answer(self._journal_key(request))
            return answer if answer is not None else await super().generate_for_request(request)

        def _journal_label(self) -> str:
            return f"anthropic {getattr(self._client, 'base_url', '')}"

        async def _journal_state(self, batch_id: str) -> str:
            info = await self._client.messages.batches.retrieve(batch_id)
            return "ended" if info.processing_status == "ended" else "running"

        async def _journal_answers(self, batch_id: str, entry: dict[str, Any]) -> list[tuple[str, Any]]:
            return [(r.custom_id, r.result.message) async for r in await self._client.messages.batches.results(
                batch_id) if r.result.type == "succeeded"]

        async def _create_batch(self, batch: list[Any]) -> str:
            batch_id: str = await super()._create_batch(batch)
            self._journal_submitted(batch_id, batch)
            return batch_id

    return JournaledAnthropicBatcher


@contextmanager
def safe_replies() -> Iterator[None]:
    """While the block runs, every model Inspect builds (the model under test, judges, patients, whatever their
    provider) hands back its reply made safe to write (`trustmh.safe_text`) before Inspect records it: Inspect
    logs a provider's output (its `ModelEvent`, with the raw response) inside `Model._generate`, right after
    the provider's own `generate` returns, so that call is the first place trustmh can reach; a lone surrogate
    there would otherwise end the whole sub-task in a serialisation error. Wraps `ModelAPI.generate` on each
    `Model` built in the block (Inspect 0.3.285 builds every one through `Model.__init__`)."""
    from inspect_ai.model import Model

    original = Model.__init__

    def init(self: Any, api: Any, *args: Any, **kwargs: Any) -> None:
        original(self, api, *args, **kwargs)
        _clean_generate(api)

    Model.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        Model.__init__ = original  # type: ignore[method-assign]


def _clean_generate(api: Any) -> None:
    if getattr(api, "_trustmh_safe", False):
        return
    generate = api.generate

    async def cleaned(*args: Any, **kwargs: Any) -> Any:
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
