"""Keep API keys out of everything a run writes.

Keys reach trustmh through the environment (`OPENAI_API_KEY`, `<SERVICE>_API_KEY`, …) and model args. trustmh
never writes them itself, but a provider may quote the key in an error message (some gateways do), and
Inspect then stores that message in the `.eval` log, in its trace log and on the console. After a run,
every file under the run directory (`.eval` logs read and written back through `inspect_ai.log`, response-cache
entries read and written back as the pickles Inspect keeps), the response-cache entries this run wrote outside
it, the trace log written during the run, and every console error are scrubbed of the values of such
variables. The `http` provider redacts the values its endpoint file references from every reply before Inspect
sees it, so those never reach a cache or a log at all.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TextIO

from trustmh.inspect_compat import trace_dir
from trustmh.models.endpoint import endpoint_secrets
from trustmh.redaction import MIN_SECRET_LEN, REDACTED, redact
from trustmh.storage import Url, atomic_path, iter_files, write_bytes_atomic, write_text_atomic

# Environment variables whose values are secrets.
_SECRET_NAME = re.compile(r"(API_KEY|_KEY|_TOKEN|_SECRET|_PASSWORD)$", re.I)
_TEXT_SUFFIXES = {".json", ".jsonl", ".csv", ".html", ".md", ".txt", ".log"}


def secret_values(environ: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> list[str]:
    """The secret strings to scrub: values of *_API_KEY / *_KEY / *_TOKEN / *_SECRET / *_PASSWORD variables,
    of the variables the `--endpoint` file's headers reference, and any `extra` (model args), longest first so a key containing another is scrubbed whole."""
    env = os.environ if environ is None else environ
    values = {v for k, v in env.items() if _SECRET_NAME.search(k) and v}
    values.update(v for v in extra if v)
    # whatever the variables are called, the values an endpoint file's headers take from the environment
    values.update(endpoint_secrets(dict(env)))
    return sorted((v for v in values if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def scrub_file(path: Path | Url, secrets: list[str]) -> bool:
    """Redact a text file (local or at a URL) in place (atomically); True when something was redacted."""

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    clean = redact(text, secrets)
    if clean == text:
        return False
    write_text_atomic(path, clean)
    return True


def _encodings(secret: str) -> set[bytes]:
    """The byte strings a secret can appear as inside a JSON document written as UTF-8."""
    return {secret.encode(), json.dumps(secret)[1:-1].encode(),
            json.dumps(secret, ensure_ascii=False)[1:-1].encode()}


def eval_log_mentions(path: Path | Url, secrets: list[str]) -> bool:
    """Whether any member of an `.eval` log (a zip of JSON documents) holds one of the secrets. Unreadable
    as a zip counts as True, so that the caller takes the full path and fails loudly there."""
    import inspect_ai.log  # noqa: F401  (teaches zipfile Inspect's zstd members on Python < 3.14)

    needles = {encoded for secret in secrets for encoded in _encodings(secret)}
    try:
        opened = path.open("rb") if isinstance(path, Path) else path.fs.open(path.path, "rb")
        with opened as fh, zipfile.ZipFile(fh) as zf:
            for member in zf.namelist():
                data = zf.read(member)
                if any(n in data for n in needles):
                    return True
    except (OSError, zipfile.BadZipFile, NotImplementedError):  # NotImplementedError: unknown compression
        return True
    return False


def scrub_eval_log(path: Path | Url, secrets: list[str]) -> bool:
    """Redact an Inspect `.eval` log, read and written back through `inspect_ai.log`."""
    from inspect_ai.log import EvalLog, read_eval_log, write_eval_log

    # A byte search over the unzipped members first: the pydantic round trip below costs about 4 ms of
    # CPU per sample and is almost never needed (a key only appears when a provider quotes it).
    if not eval_log_mentions(path, secrets):
        return False
    log = read_eval_log(str(path))
    dumped = log.model_dump_json()
    clean = redact(dumped, secrets)
    if clean == dumped:
        return False
    write_eval_log(EvalLog.model_validate_json(clean), str(path))
    return True


def scrub_cache_entry(path: Path | Url, secrets: list[str]) -> bool:
    """Redact one entry of Inspect's response cache (a pickle of `(expiry, ModelOutput)`), rewritten
    atomically; True when something was redacted. A byte search first: the pickle is parsed only when a
    secret's bytes are in it (almost never). An entry that cannot be read as one is left alone."""
    import pickle

    needles = {encoded for secret in secrets for encoded in _encodings(secret)}
    try:
        data = path.read_bytes()
    except OSError:
        return False
    if not any(n in data for n in needles):
        return False
    try:
        expiry, output = pickle.loads(data)  # noqa: S301  (trustmh's own cache, written by Inspect)
        dumped = output.model_dump_json()
    except Exception:  # noqa: BLE001  not a cache entry of this Inspect: left to the run's other checks
        return False
    clean = redact(dumped, secrets)
    if clean == dumped:
        return False
    rewritten = pickle.dumps((expiry, type(output).model_validate_json(clean)))
    if isinstance(path, Path):
        with atomic_path(path) as tmp:
            tmp.write_bytes(rewritten)
    else:
        write_bytes_atomic(path, rewritten)
    return True


def scrub_cache_dir(cache: Path, secrets: list[str], since: float | None = None) -> list[Path]:
    """Scrub the entries of a response cache kept outside the run directory (`$TRUSTMH_CACHE_DIR/responses`,
    a user's INSPECT_CACHE_DIR) written since `since`: what this run added."""
    touched: list[Path] = []
    if not secrets or not cache.is_dir():
        return touched
    for path in cache.rglob("*"):
        try:
            if not path.is_file() or (since is not None and path.stat().st_mtime < since):
                continue
        except OSError:
            continue
        if scrub_cache_entry(path, secrets):
            touched.append(path)
    return touched


def _older(path: Path, since: float) -> bool:
    try:
        return path.stat().st_mtime < since
    except OSError:
        return True


def scrub_run_dir(out: Path | Url, secrets: list[str], since: float | None = None) -> list[Path | Url]:
    """Scrub every file trustmh wrote under the run directory (a path or a URL: `.eval` logs are read and
    written back through Inspect, which reads and writes URLs; the response cache in `OUT/cache` entry by
    entry), the response cache kept elsewhere (TRUSTMH_CACHE_DIR, INSPECT_CACHE_DIR) as far as this run wrote
    it, and Inspect's trace logs written since `since` (a time.time()); returns the files that held a secret."""

    if not secrets:
        return []
    touched: list[Path | Url] = []
    for path in iter_files(out):
        if "cache" in path.relative_to(out).parts:  # type: ignore[arg-type]
            if since is not None and isinstance(path, Path) and _older(path, since):
                continue  # written by an earlier invocation, scrubbed then
            scrub = scrub_file if path.suffix in _TEXT_SUFFIXES else scrub_cache_entry
            if scrub(path, secrets):
                touched.append(path)
            continue
        if path.suffix == ".eval":
            if scrub_eval_log(path, secrets):
                touched.append(path)
        elif path.suffix in _TEXT_SUFFIXES and scrub_file(path, secrets):
            touched.append(path)
    for env, sub in (("TRUSTMH_CACHE_DIR", "responses"), ("INSPECT_CACHE_DIR", "")):
        root = os.environ.get(env)
        cache = Path(root).expanduser() / sub if root else None
        if cache is not None and (isinstance(out, Url) or not cache.resolve().is_relative_to(Path(out).resolve())):
            touched.extend(scrub_cache_dir(cache, secrets, since))
    if since is not None:
        traces = trace_dir()
        try:
            for path in traces.glob("*.log") if traces is not None else ():
                if path.stat().st_mtime >= since and scrub_file(path, secrets):
                    touched.append(path)
        except OSError:
            pass
    return touched


def _spread(secret: str) -> re.Pattern[str]:
    """The secret as the console may show it: whole, or broken over lines where a display wraps it (white
    space between any two of its characters)."""
    return re.compile(r"\s*".join(re.escape(c) for c in secret))


class _RedactingStream:
    """A text stream that writes through to `stream` with the secrets replaced. Whole lines are written (the
    rest waits for its newline or a flush), so a key written in two pieces is still found."""

    def __init__(self, stream: TextIO, patterns: list[re.Pattern[str]]) -> None:
        self._stream, self._patterns, self._pending = stream, patterns, ""

    def _clean(self, text: str) -> str:
        for pattern in self._patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def write(self, text: str) -> int:
        self._pending += text
        cut = self._pending.rfind("\n") + 1
        if cut:
            self._stream.write(self._clean(self._pending[:cut]))
            self._pending = self._pending[cut:]
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._clean(self._pending))
            self._pending = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, encoding, fileno… of the real stream
        return getattr(self._stream, name)


@contextlib.contextmanager
def console_redacted(secrets: list[str] | None = None) -> Iterator[None]:
    """While the block runs, no secret reaches the console: log records are redacted as they are made (Inspect's
    log handler, whatever its display, and its trace file), and stdout and stderr are redacted as they are
    written (Inspect's progress and error displays, which may wrap a key over lines). A `--workers` shard is
    a trustmh process of its own and does the same."""
    secrets = secret_values() if secrets is None else secrets
    if not secrets:
        yield
        return
    patterns = [_spread(s) for s in secrets]
    make_record = logging.getLogRecordFactory()

    def redacted_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001  a malformed record is left to logging's own error path
            return record
        clean = redact(message, secrets)
        if clean != message:
            record.msg, record.args = clean, None
        return record

    out, err = sys.stdout, sys.stderr
    logging.setLogRecordFactory(redacted_record)
    sys.stdout, sys.stderr = _RedactingStream(out, patterns), _RedactingStream(err, patterns)  # type: ignore[assignment]
    try:
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdout, sys.stderr = out, err
        logging.setLogRecordFactory(make_record)
