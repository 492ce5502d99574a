"""Provider batch mode (`trustmh run --batch [N]`, docs/cost.md#batch): which calls are batched, and the
run directory's batch journal that lets a killed run collect its finished batches instead of paying again.
Plain Python; the Inspect adapter is `trustmh.inspect_compat.journaled_batches`.

What Inspect keeps and what trustmh adds. Inspect's batcher (`GenerateConfig(batch=...)`) gathers requests
into provider batches, polls them and hands each reply back to the waiting call; the reply is then written to
Inspect's response cache like a live one. Its batch ids live only in the process: a run killed while batches
are in flight forgets them, and the same command again would submit those requests anew and pay the
provider twice for every request the first batches finish. trustmh therefore journals every batch it
submits (`batches.jsonl` in the run directory: the batch id and, per request, a hash of its body) and keeps
every result file it downloads (`batches/<file id>.jsonl`). A resumed run reads the journal before its first
batched call: a request whose body matches a journaled request is answered from that batch's results
(downloaded now if the batch has finished; waited for if it is still running) and is never submitted again;
only requests without a finished answer (new, failed or expired) go into new batches.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.models.providers import provider_of

# A batched call waits for its whole batch: up to the providers' 24-hour completion window, plus polling.
BATCH_WAIT_SECONDS = 26 * 3600
# The most requests `--batch N` puts in one batch: OpenAI's per-batch limit (Anthropic's is 100,000).
MAX_BATCH_SIZE = 50_000
JOURNAL = "batches.jsonl"
RESULTS_DIR = "batches"
# Batch latency the plan assumes per round of batched calls (providers promise 24 h; most finish sooner).
BATCH_LATENCY_SECONDS = {"typical": 20 * 60, "worst": 24 * 3600}


@dataclass(frozen=True)
class BatchMode:
    """How one run batches: `size` requests per batch (None: Inspect's default of 100), conversations too
    (`--batch-conversations`), and the run directory's journal (None: no journal, e.g. a URL run directory)."""

    size: int | None = None
    conversations: bool = False
    journal_dir: Path | None = None
    # Inspect's polling interval and send delay (seconds); None: Inspect's defaults (15 s). Tests shorten them.
    tick: float | None = None
    send_delay: float | None = None
    # `--batch-timeout`: seconds a batch may stay unfinished before its requests fail with `BatchEnded` (the batch
    # stays in the journal, so the same command collects it); None: the providers' window (BATCH_WAIT_SECONDS)
    timeout: float | None = None

    def batches(self, model: str, conversation: bool = False) -> bool:
        """Whether calls to `model` are sent through its provider's batch API in this run."""
        return (not conversation or self.conversations) and provider_of(model).batch


def live_providers(models: list[str]) -> list[str]:
    """The models of a run whose provider has no batch API in Inspect (they run live, and the run says so)."""
    return sorted({m for m in models if not provider_of(m).batch})


ACTIVE: BatchMode | None = None  # set by `trustmh run` for the duration of a run with --batch
# False for the duration of a run with --no-prompt-cache (Inspect's `cache_prompt`, on by default).
PROMPT_CACHE = True
# Set around a call trustmh means to batch: Inspect's OpenAI provider sends every later call of a model
# through its batcher once one call was batched, so the journaled batcher sends unmarked calls live.
WANT_BATCH: ContextVar[bool] = ContextVar("trustmh_want_batch", default=False)


@contextmanager
def batching(on: bool) -> Iterator[None]:
    token = WANT_BATCH.set(on)
    try:
        yield
    finally:
        WANT_BATCH.reset(token)


def request_hash(body: Mapping[str, Any]) -> str:
    """A request's identity across processes: the hash of its body without per-process headers."""
    clean = {k: v for k, v in body.items() if k != "extra_headers" and type(v).__name__ != "NotGiven"}
    return hashlib.sha256(json.dumps(clean, sort_keys=True, default=str).encode()).hexdigest()


_JOURNAL_WAY_OUT = ("the batch journal is damaged; restore it, or move it aside to start the run's batches afresh "
                    "(the requests of batches it names that are still running at the provider are then paid again)")


def _journal_lines(path: Path) -> list[str]:
    """The journal's lines; a file that is not UTF-8 text is refused naming the journal and the way out."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{path}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 text: "
                           f"{_JOURNAL_WAY_OUT}") from None


# What a torn journal line still says (`Journal._torn`): the entry is written as `{"batch": ..., "model": ...,
# "requests": {custom_id: sha256, ...}}`, so its batch id comes first and each complete request pair is a match.
_TORN_BATCH = re.compile(r'^\{"batch": "((?:[^"\\]|\\.)+)"')
_TORN_MODEL = re.compile(r'"model": "((?:[^"\\]|\\.)*)"')
_TORN_REQUEST = re.compile(r'"((?:[^"\\]|\\.)+)": "([0-9a-f]{64})"')


@dataclass
class Journal:
    """The batches a run submitted (`batches.jsonl`) and the result files it downloaded (`batches/`)."""

    root: Path
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)  # batch id -> its journal entry

    @classmethod
    def open(cls, root: Path) -> Journal:
        journal = cls(Path(root))
        path = journal.root / JOURNAL
        if path.exists():
            lines = _journal_lines(path)
            for number, line in enumerate(lines, 1):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    if number == len(lines):  # a line cut by a kill mid-write: read up to the tear
                        journal._torn(path, number, line)
                        continue
                    raise TrustmhError(f"{path}: line {number} is not a journal entry (JSON): {_JOURNAL_WAY_OUT}") from None
                if isinstance(entry, dict) and isinstance(entry.get("batch"), str):
                    # a later line of the same batch adds to it (its result files, once collected)
                    journal.batches[entry["batch"]] = {**journal.batches.get(entry["batch"], {}), **entry}
        return journal

    def _torn(self, path: Path, number: int, line: str) -> None:
        """The journal's last line, cut by a kill mid-write: the batch it names and the requests it lists up to
        the tear are kept, marked `torn`, so the batcher looks the batch up at the provider (its input file
        holds every request) before submitting anything again; said on one line either way."""
        batch = _TORN_BATCH.match(line)
        if batch is None:
            print(f"trustmh: {path} line {number} was cut before its batch id (a kill mid-write): that batch cannot "
                  "be looked up, and its requests are submitted again (if it still runs at the provider, cancel it "
                  "there)", file=sys.stderr, flush=True)
            return
        model = _TORN_MODEL.search(line)
        if batch.group(1) not in self.batches:  # a cut submission (a cut `files` line: the batch is known already)
            self.batches[batch.group(1)] = {"batch": batch.group(1), "model": model.group(1) if model else None,
                                            "torn": True, "requests": dict(_TORN_REQUEST.findall(line))}
        entry = self.batches[batch.group(1)]
        print(f"trustmh: {path} line {number} was cut (a kill mid-write): batch {entry['batch']} is looked up at "
              "the provider by its id before anything is submitted again", file=sys.stderr, flush=True)

    def submitted(self, batch_id: str, model: str, requests: Mapping[str, str]) -> None:
        """Record a submitted batch (custom_id -> request hash), flushed to disk before the call returns."""
        entry = {"batch": batch_id, "model": model, "requests": dict(requests)}
        self.batches[batch_id] = entry
        self._append(entry)

    def collected(self, batch_id: str, files: list[str]) -> None:
        """Record the result files of a finished batch (kept in `batches/`), so a resumed run reads them
        without asking the provider."""
        self.batches.setdefault(batch_id, {"batch": batch_id})["files"] = list(files)
        self._append({"batch": batch_id, "files": list(files)})

    def _append(self, entry: dict[str, Any]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.root / JOURNAL, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def result_file(self, file_id: str) -> Path:
        return self.root / RESULTS_DIR / f"{file_id}.jsonl"

    def keep_result(self, file_id: str, data: bytes) -> None:
        path = self.result_file(file_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)

    def kept_result(self, file_id: str) -> bytes | None:
        path = self.result_file(file_id)
        return path.read_bytes() if path.exists() else None


# A batch that ends at the provider without answering all its requests (OpenAI's batch status; Anthropic's
# results say canceled or expired, or every request errored).
ENDED_STATUSES = ("failed", "expired", "cancelled")


class BatchEnded(RuntimeError):
    """The error of each request a batch left unanswered when it ended as a whole (failed, expired, cancelled):
    raised once per request, and again at once if the run asks that request again (a sample's retry), so
    nothing is submitted again blindly; the same command, run again, asks them in a new batch."""


def ended_message(batch_id: str, status: str, answered: int, total: int, journal: Path | None,
                  running: bool = False) -> str:
    """The one line a batch that ended as a whole is reported with: the batch, the journal, what to do.
    `running`: the run stopped waiting (`--batch-timeout`); the provider may still finish the batch."""
    where = f"journal {journal / JOURNAL}" if journal is not None else "no journal: a URL run directory"
    again = ("collect the batch from the provider when it finishes" if running and journal is not None
             else "ask them in a new batch")
    return (f"batch {batch_id} {status} at the provider: {answered} of {total} request(s) answered and kept, the "
            f"other {total - answered} not asked again in this run ({where}); run the same command again to "
            f"{again}, or without --batch to ask them live")


def readable_body(body: Any) -> bool:
    """Whether an OpenAI batch line's response body holds an answer (chat `choices` or a Responses `output`):
    a body without one is damaged, and its request is asked again rather than answered with nothing."""
    return isinstance(body, dict) and any(isinstance(body.get(k), list) and body[k] for k in ("choices", "output"))


def answered_lines(data: bytes) -> Iterator[tuple[str, dict[str, Any]]]:
    """(custom_id, response body) for every answered line of an OpenAI batch result file (lines cut in half,
    or whose body holds no answer, are left out: `readable_body`)."""
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        response = row.get("response") if isinstance(row, dict) else None
        if row.get("error") is None and isinstance(response, dict) and response.get("status_code", 200) == 200 \
                and readable_body(response.get("body")):
            yield str(row.get("custom_id")), response["body"]


@dataclass
class Recovered:
    """Finished answers of journaled batches, by request hash; each answers one request (a run may ask the
    same body twice, e.g. two epochs, and each was a request of its own)."""

    answers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def add(self, journal_entry: Mapping[str, Any], data: bytes) -> int:
        hashes = journal_entry.get("requests") or {}
        added = 0
        for custom_id, body in answered_lines(data):
            h = hashes.get(custom_id)
            if h is not None:
                self.answers.setdefault(h, []).append(body)
                added += 1
        return added

    def take(self, h: str) -> dict[str, Any] | None:
        bodies = self.answers.get(h)
        return bodies.pop(0) if bodies else None


def call_settings(model: str, conversation: bool = False, mode: BatchMode | None = None) -> dict[str, Any]:
    """GenerateConfig fields for one call under the run's batch mode (`ACTIVE` unless `mode` is given): for a
    batched call, Inspect's BatchConfig and a wait as long as a batch may take (the run's per-attempt timeout
    would abandon the wait and submit the request again, paying twice); `cache_prompt=False` under
    --no-prompt-cache; {} for a live call with prompt caching left on (Inspect's default)."""
    mode = ACTIVE if mode is None else mode
    fields: dict[str, Any] = {} if PROMPT_CACHE else {"cache_prompt": False}
    if mode is None or not mode.batches(model, conversation):
        return fields
    from inspect_ai.model import BatchConfig

    return {**fields, "batch": BatchConfig(size=mode.size or None, send_delay=mode.send_delay, tick=mode.tick),
            "attempt_timeout": BATCH_WAIT_SECONDS, "timeout": BATCH_WAIT_SECONDS}


def mode_from_args(args: Any, journal_dir: Path | None) -> BatchMode | None:
    """The batch mode of a command's --batch [N] / --batch-conversations (None without --batch)."""
    if getattr(args, "batch", None) is None:
        return None
    return BatchMode(size=args.batch or None, conversations=bool(getattr(args, "batch_conversations", False)),
                     journal_dir=journal_dir, timeout=getattr(args, "batch_timeout", None),
                     tick=env_seconds("TRUSTMH_BATCH_TICK"),
                     send_delay=env_seconds("TRUSTMH_BATCH_SEND_DELAY"))


def env_seconds(name: str) -> float | None:
    """Inspect's batch polling interval / send delay from the environment (tests and benchmarks shorten them)."""
    value = os.environ.get(name)
    return float(value) if value else None
