"""The one place trustmh touches Inspect's private API (`inspect_ai._util`), pinned with Inspect's version.

Each function says what it needs and falls back to something safe where Inspect moves the thing it
wraps. An Inspect upgrade is checked here first (and by the golden-log test).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trustmh.models import batch as trustmh_batch


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
    import sys

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
    """While the block runs, Inspect's OpenAI provider batches through `JournaledOpenAIBatcher` (built by
    `openai_batcher_class`): every submitted batch is journaled in `journal_dir` and a resumed run collects
    finished batches before submitting anything (`trustmh.models.batch`); a call trustmh did not mark for
    batching goes live; a failed or expired line fails only its own request, with an error Inspect retries.
    Inspect 0.3.285 builds `OpenAIBatcher` by name in `inspect_ai.model._providers.openai`."""
    try:
        from inspect_ai.model._providers import openai as openai_provider
    except ImportError:  # pragma: no cover  the provider's SDK is not installed: nothing to batch
        yield
        return
    original = openai_provider.OpenAIBatcher
    openai_provider.OpenAIBatcher = openai_batcher_class(original, journal_dir)
    try:
        yield
    finally:
        openai_provider.OpenAIBatcher = original


def openai_batcher_class(base: Any, journal_dir: Path | None) -> Any:
    """A subclass of Inspect's `OpenAIBatcher` with the run's batch journal (see `journaled_batches`)."""
    import sys

    import anyio

    # the HTTP library Inspect's batcher builds its error responses with (httpx2 in Inspect 0.3.285)
    httpx2 = sys.modules[base.__module__].httpx2
    journal = trustmh_batch.Journal.open(journal_dir) if journal_dir is not None else None

    class JournaledOpenAIBatcher(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._recovered = trustmh_batch.Recovered()
            self._waiting: dict[str, set[str]] = {}  # journaled batch still running -> its request hashes
            self._recovery_lock = anyio.Lock()
            self._recovery_started = False

        async def generate_for_request(self, request: dict[str, Any]) -> Any:
            if not trustmh_batch.WANT_BATCH.get():  # a live call (e.g. a conversation turn) on a model that also batches
                create = (self._openai_client.responses.create if self.endpoint == "/v1/responses"
                          else self._openai_client.chat.completions.create)
                return await create(**request)
            h = trustmh_batch.request_hash(request)
            if journal is not None:
                answer = await self._recovered_answer(h)
                if answer is not None:
                    return self._response_cls.model_validate(answer)
            return await super().generate_for_request(request)

        async def _recovered_answer(self, h: str) -> dict[str, Any] | None:
            async with self._recovery_lock:
                if not self._recovery_started:
                    self._recovery_started = True
                    await self._recover()
            answer = self._recovered.take(h)
            while answer is None and any(h in hashes for hashes in self._waiting.values()):
                await anyio.sleep(self._tick)
                async with self._recovery_lock:
                    await self._poll_waiting()
                answer = self._recovered.take(h)
            return answer

        async def _recover(self) -> None:
            """Read every journaled batch: results already kept, finished ones downloaded, running ones
            remembered so that their requests wait for them instead of being submitted again."""
            assert journal is not None
            for batch_id, entry in journal.batches.items():
                if entry.get("model") != self._model_label():
                    continue
                self._waiting[batch_id] = set((entry.get("requests") or {}).values())
            await self._poll_waiting()

        async def _poll_waiting(self) -> None:
            assert journal is not None
            for batch_id in list(self._waiting):
                entry = journal.batches[batch_id]
                files = entry.get("files")
                if files is None:
                    try:
                        info = await self._openai_client.batches.retrieve(batch_id)
                    except Exception:  # noqa: BLE001  unknown or unreachable: its requests are asked anew
                        del self._waiting[batch_id]
                        continue
                    if info.status in ("validating", "in_progress", "finalizing", "cancelling"):
                        continue
                    files = [f for f in (info.output_file_id, info.error_file_id) if f]
                for file_id in files:  # kept when the batch was collected, else downloaded now
                    data = journal.kept_result(file_id)
                    if data is None:
                        data = await self._download_result_file(file_id)
                    self._recovered.add(entry, data)
                del self._waiting[batch_id]

        def _model_label(self) -> str:
            return str(getattr(self._openai_client, "base_url", ""))

        async def _create_batch(self, batch: list[Any]) -> str:
            batch_id: str = await super()._create_batch(batch)
            if journal is not None:
                journal.submitted(batch_id, self._model_label(),
                                  {r.custom_id: trustmh_batch.request_hash(r.request) for r in batch})
            return batch_id

        async def _handle_batch_result(self, batch: Any, completion_info: Any) -> Any:
            results = await super()._handle_batch_result(batch, completion_info)
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
