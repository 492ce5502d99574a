"""The journaled subclasses of Inspect's OpenAI and Anthropic batchers that `trustmh.inspect_compat.
journaled_batches` installs for a run's duration. Like inspect_compat, this touches Inspect's private API (the
batchers of `inspect_ai.model._providers`, Inspect 0.3.285), pinned with Inspect's version; it is the batch half
of that one place, kept apart so each file stays readable.

What each adds to Inspect's batcher: the run's journal (`trustmh.models.batch`); a damaged OpenAI result file
read line by line; and a batch that ends as a whole at the provider (OpenAI: `failed`, `expired`, `cancelled`;
Anthropic: results `canceled` or `expired`, or every request errored) answered with what it answered, each
other request failing once with `BatchEnded`: one line names the batch, the journal and what to do, and a
sample's retry never submits those requests again (docs/cost.md#batch).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from trustmh.models import batch as trustmh_batch


def _journal_mixin(journal: Any) -> Any:
    """What both journaled batchers share: journal every batch they submit; before the first batched call,
    read the journal's batches (`_journal_state`, `_journal_answers` are the provider's) and answer each
    request whose body a journaled batch holds from that batch, waiting for it while it runs."""
    import anyio

    class JournalMixin:
        _recovered: Any
        _waiting: dict[str, set[str]]

        def _journal_init(self) -> None:
            self._ended: dict[str, Exception] = {}  # request hash -> the error of the batch that left it unanswered
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
                    await self._look_up_torn()
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

        async def _journal_requests(self, batch_id: str) -> dict[str, str]:  # custom_id -> hash, from the provider
            raise NotImplementedError

        async def _look_up_torn(self) -> None:
            """A batch whose journal line was cut (`Journal._torn`) is looked up at the provider by its id: its
            requests (custom_id -> body hash) are read back from the provider before anything is submitted, so
            none of them is paid twice."""
            for batch_id, entry in journal.batches.items():
                if not entry.get("torn") or entry.get("model") not in (None, self._journal_label()):
                    continue
                try:
                    entry["requests"] = {**entry.get("requests", {}), **await self._journal_requests(batch_id)}
                except Exception as exc:  # noqa: BLE001  not this provider's, or unreachable: what the line kept
                    if entry.get("model") is None:
                        continue
                    print(f"trustmh: batch {batch_id} (cut journal line): the provider did not list its requests "
                          f"({type(exc).__name__}); the {len(entry.get('requests', {}))} the line kept are "
                          "collected, the rest submitted again", file=sys.stderr, flush=True)
                entry["model"], entry["torn"] = self._journal_label(), False
                print(f"trustmh: batch {batch_id} (cut journal line) found at the provider: its "
                      f"{len(entry['requests'])} request(s) are collected from it, not submitted again",
                      file=sys.stderr, flush=True)

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

        def _refuse_ended(self, request: dict[str, Any]) -> None:
            """A request a batch of this run left unanswered when it ended fails again at once (a sample's
            retry): it is not submitted again until the user runs the command again."""
            error = self._ended.get(self._journal_key(request))
            if error is not None:  # a fresh instance: one raised again and again grows its traceback each time
                raise trustmh_batch.BatchEnded(str(error)) from None

        def _batch_ended(self, batch: Any, status: str, answers: dict[str, Any], files: list[str] | None
                         ) -> dict[str, Any]:
            """The results of a batch that ended as a whole: its answers, and for every other request one
            `BatchEnded` naming the batch, the journal and what to do (said once, on stderr). `files` None: the
            batch still runs at the provider (`--batch-timeout`), left in the journal uncollected."""
            error = trustmh_batch.BatchEnded(trustmh_batch.ended_message(
                batch.id, status, len(answers), len(batch.requests), None if journal is None else journal.root,
                running=files is None))
            print(f"trustmh: {error}", file=sys.stderr, flush=True)
            for request_id, request in batch.requests.items():
                if request_id not in answers:
                    self._ended[self._journal_key(request.request)] = error
            if journal is not None and files is not None:
                journal.collected(batch.id, files)
            # each request its own error: one instance raised by every request (and rendered by Inspect's rich
            # traceback per sample) carried every raise's frames, and rendering it held the event loop for minutes
            return {request_id: answers[request_id] if request_id in answers else trustmh_batch.BatchEnded(str(error))
                    for request_id in batch.requests}

        async def _end_if_overdue(self, batch: Any, checked: Any) -> None:
            """A batch still unfinished `--batch-timeout` seconds after it was submitted ends the wait: its
            requests fail with `BatchEnded` (the run ends incomplete, exit 5); it stays in the journal, so the same
            command collects it from the provider rather than paying for it again."""
            mode = trustmh_batch.ACTIVE
            timeout = None if mode is None else mode.timeout
            if timeout is None or checked is not None and checked.completion_info is not None or \
                    batch.id not in self._inflight_batches or time.time() - batch.created_at < timeout:
                return
            await self._resolve_inflight_batch(batch, self._batch_ended(
                batch, f"still unfinished after --batch-timeout {timeout:g} s", {}, None))

        def _journal_submitted(self, batch_id: str, batch: list[Any]) -> None:
            journal.submitted(batch_id, self._journal_label(),
                              {r.custom_id: self._journal_key(r.request) for r in batch})

    return JournalMixin


def openai_batcher_class(base: Any, journal: Any) -> Any:
    """A subclass of Inspect's `OpenAIBatcher` with the run's batch journal (see `journaled_batches`)."""
    # the HTTP library Inspect's batcher builds its error responses with (httpx2 in Inspect 0.3.285)
    httpx2 = sys.modules[base.__module__].httpx2
    mixin = _journal_mixin(journal)  # its journal parts are used only with a journal

    class JournaledOpenAIBatcher(mixin, base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._journal_init()
            self._statuses: dict[str, str] = {}  # batch id -> its status at the last poll

        async def _live(self, request: dict[str, Any]) -> Any:
            create = (self._openai_client.responses.create if self.endpoint == "/v1/responses"
                      else self._openai_client.chat.completions.create)
            return await create(**request)

        async def generate_for_request(self, request: dict[str, Any]) -> Any:
            if not trustmh_batch.WANT_BATCH.get():  # a live call on a model that also batches (a turn)
                return await self._live(request)
            self._refuse_ended(request)
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

        async def _journal_requests(self, batch_id: str) -> dict[str, str]:
            info = await self._openai_client.batches.retrieve(batch_id)
            data = await (await self._openai_client.files.content(info.input_file_id)).aread()
            return {str(row["custom_id"]): trustmh_batch.request_hash(row["body"])
                    for row in map(json.loads, data.decode("utf-8").splitlines()) if row.get("custom_id")}

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

        def _adapt_batch_info(self, info: Any) -> Any:
            self._statuses[info.id] = info.status  # read by the ended-batch paths below
            return super()._adapt_batch_info(info)

        def _results_from_rejection(self, batch: Any, errors: Any) -> dict[str, Any]:
            # status `failed` (the provider rejected the whole batch): no request was answered
            reasons = "; ".join(str(e.message) for e in (getattr(errors, "data", None) or [])[:1] if e.message)
            return self._batch_ended(batch, f"failed{f' ({reasons})' if reasons else ''}", {}, [])

        async def _check_batch(self, batch: Any) -> Any:
            checked = await super()._check_batch(batch)
            status = self._statuses.get(batch.id)
            if status in ("expired", "cancelled") and checked.completion_info is None and batch.id in \
                    self._inflight_batches:  # ended with no result file: Inspect would poll it for ever
                await self._resolve_inflight_batch(batch, self._batch_ended(batch, status, {}, []))
            await self._end_if_overdue(batch, checked)
            return checked

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
            status = self._statuses.get(batch.id)
            if status in trustmh_batch.ENDED_STATUSES:  # expired or cancelled as a whole: keep what it answered
                return self._batch_ended(batch, status, {r: a for r, a in results.items()
                                                         if not isinstance(a, Exception)}, files)
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
    """A subclass of Inspect's `AnthropicBatcher` with the run's batch journal (see `journaled_batches`), and
    a batch that ended as a whole (a result `canceled` or `expired`, or every request errored) answered with
    what it answered: Inspect returns those requests as connection and timeout errors, retried, so each retry
    submitted them again. Inspect's Anthropic provider batches only the calls whose config asks for it, and
    fails only a batch's failed lines otherwise."""
    individual_result = sys.modules[base.__module__]._get_individual_result  # Inspect's reading of one result

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
            self._refuse_ended(request)
            answer = None if journal is None else await self._recovered_answer(self._journal_key(request))
            return answer if answer is not None else await super().generate_for_request(request)

        async def _check_batch(self, batch: Any) -> Any:
            checked = await super()._check_batch(batch)
            await self._end_if_overdue(batch, checked)
            return checked

        async def _handle_batch_result(self, batch: Any, completion_info: Any) -> dict[str, Any]:
            rows = [r async for r in await self._client.messages.batches.results(batch.id)]
            kinds = {r.custom_id: r.result.type for r in rows}
            ended = next((k for k in ("canceled", "expired") if k in kinds.values()), None)
            if ended is None and kinds and "succeeded" not in kinds.values():
                ended = "failed (every request errored)"
            if ended is None:  # answered, or partly errored: each errored request is retried on its own
                return {r.custom_id: individual_result(r) for r in rows}
            return self._batch_ended(batch, ended, {r.custom_id: r.result.message for r in rows
                                                    if r.result.type == "succeeded"}, [])

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
            if journal is not None:
                self._journal_submitted(batch_id, batch)
            return batch_id

    return JournaledAnthropicBatcher

