"""The run directory: what it holds, whether a run may continue in it, and how it is written.

A run directory holds `run.json` (the manifest: trustmh and Inspect versions and every setting that changes
results), `logs/` (Inspect's eval-set logs, from which results are read), `cache/` (Inspect's response cache,
unless shared elsewhere or the run directory is a URL: see `run.response_cache_dir`) and the results
(`results.json`, `results.csv`, `items.jsonl`, `report.html`).
Re-running the same command on the same directory continues the run: Inspect's eval set skips finished
sub-tasks and reuses the finished samples of an interrupted one, and the response cache answers every call
already paid for. A different configuration or version is refused before any model call, because its logs
would be mixed with these; `--overwrite` starts afresh. The directory is a local path or an fsspec URL
(`s3://bucket/run`); every read and write goes through `trustmh.storage`.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trustmh import storage
from trustmh.core import TrustmhError
from trustmh.storage import Url

MANIFEST = "run.json"
RESULT_FILES = ("results.json", "results.csv", "items.jsonl", "report.html", "judge_long.csv", "human_long.csv",
                "plan.json", "spend.json")


def check_writable(out: Path | Url, named: str = "--out") -> None:
    """A clear error, before any model call, when `out` cannot be a run directory (`named`: how the command
    the user typed calls it: `--out`, or "run directory" for a command that takes it as an argument)."""
    if isinstance(out, Url):
        storage.check_writable(out)
        return
    if out.exists() and not out.is_dir():
        raise TrustmhError(f"{named} {out}: is a file, not a directory; choose a directory for the run")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".trustmh-write-test.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise TrustmhError(f"{named} {out}: cannot write there ({exc.strerror or exc}); choose a writable "
                           "directory") from None


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    diffs = []
    for k in keys:
        if old.get(k) == new.get(k):
            continue
        if k == "datasets" and isinstance(old.get(k), dict) and isinstance(new.get(k), dict):
            diffs.extend(changed_files(old[k], new[k]))
        else:
            diffs.append(f"{k}: {json.dumps(old.get(k))} vs {json.dumps(new.get(k))}")
    return diffs


def changed_files(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The data files whose content (sha256) differs between two manifests, by name."""
    out = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name) or {}, new.get(name) or {}
        for file in sorted(set(a) | set(b)):
            if a.get(file) != b.get(file):
                what = ("not read before" if file not in a else "no longer read" if file not in b
                        else f"content changed (sha256 {str(a[file])[:12]}… vs {str(b[file])[:12]}…)")
                out.append(f"data file {file} of {name}: {what}")
    return out


LOCK = ".trustmh.lock"


@contextlib.contextmanager
def locked(out: Path | Url, named: str = "--out") -> Iterator[None]:
    """One writer per local run directory: an exclusive lock on `OUT/.trustmh.lock`, held while the block
    runs. The kernel releases it when the process ends, however it ends, so a crashed run never leaves it
    held. A URL run directory has no lock (object stores offer none): one writer there is the user's care.
    `named` is how the command calls the directory (`--out` for run and merge; "run directory" for a command
    that takes it as an argument, e.g. `review import`), so the message names what the user typed."""
    if isinstance(out, Url):
        yield
        return
    import fcntl

    created = not out.exists()
    check_writable(out, named)
    path = out / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            way_out = "wait for it to end" + (", or choose another --out" if named == "--out" else
                                              ", then run this command again")
            raise TrustmhError(f"{named} {out}: another trustmh process{f' (pid {holder})' if holder else ''} is "
                               f"writing this run directory; {way_out}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    except BaseException:
        # bad input found before anything was written: leave no directory the run itself created
        if created and not any(p.name != LOCK for p in out.iterdir()):
            path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                out.rmdir()
        raise
    finally:
        os.close(fd)


def prepare(out: Path | Url, manifest: dict[str, Any], *, overwrite: bool) -> bool:
    """Make `out` ready for a run with this manifest; True when an earlier run of the same configuration
    is continued. Raises TrustmhError (nothing changed) for a directory holding a different run."""
    check_writable(out)
    path = out / MANIFEST
    has_run = path.exists() or (out / "logs").exists() or any((out / f).exists() for f in RESULT_FILES)
    if has_run and overwrite:
        set_aside(out)
        has_run = False
    if has_run:
        if not path.exists():
            raise TrustmhError(f"--out {out}: holds results or logs but no {MANIFEST} (an older or foreign "
                               "run); use a new --out, or --overwrite to replace it")
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise TrustmhError(f"{path}: unreadable run manifest ({exc}); use --overwrite to start afresh") from None
        diffs = _differences(old, manifest)
        if diffs:
            raise TrustmhError(f"--out {out}: holds a run with a different configuration or version "
                               f"({'; '.join(diffs)}); use a new --out, or --overwrite to replace it")
    storage.write_text_atomic(path, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return has_run


ASIDE = ".previous-run"


def set_aside(out: Path | Url) -> None:
    """`--overwrite`: move the previous run's manifest, logs and results into `OUT/.previous-run`, where they
    stay until the new run has written its results (`drop_aside`) and from where a failed or interrupted
    new run puts them back (`restore_aside`). On a URL they are removed at once (no cheap move there)."""
    if isinstance(out, Url):
        clear(out)
        return
    aside = out / ASIDE
    if aside.exists():
        # an earlier --overwrite that never finished: that is the good run; what is in OUT is its failed
        # replacement
        clear(out)
        return
    aside.mkdir()
    for name in (MANIFEST, *RESULT_FILES, "logs"):
        if (out / name).exists():
            os.replace(out / name, aside / name)


def restore_aside(out: Path | Url) -> bool:
    """Put back the run that `--overwrite` set aside (the new one failed before writing its results);
    True when there was one."""
    if isinstance(out, Url) or not (out / ASIDE).is_dir():
        return False
    clear(out)
    aside = out / ASIDE
    for child in aside.iterdir():
        os.replace(child, out / child.name)
    aside.rmdir()
    return True


def drop_aside(out: Path | Url) -> None:
    """The new run has written its results: the run it replaced goes."""
    if not isinstance(out, Url):
        storage.rmtree(out / ASIDE)


def clear(out: Path | Url) -> None:
    """Remove a previous run's manifest, logs and results (the response cache stays: it is keyed by content)."""
    for name in (MANIFEST, *RESULT_FILES):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    storage.rmtree(out / "logs")


REOPENED = "trustmh: errored samples to run again"


def reopen_errored_logs(log_dir: Path | Url) -> list[Path | Url]:
    """Mark the finished logs that hold errored samples as not finished, so that continuing the run asks
    those samples again and only those: Inspect's eval set resumes a log that did not finish by reusing
    every sample that finished without an error (from the log itself, so no call is paid again with or
    without the response cache) and running the rest. Only the log's header is rewritten (appended to the
    `.eval` archive); its samples stay. A finished log without errors is kept as it is."""
    from inspect_ai.log import EvalError, read_eval_log, read_eval_log_sample_summaries, write_eval_log

    reopened: list[Path | Url] = []
    for path in sorted(log_dir.glob("*.eval")):
        try:
            header = read_eval_log(str(path), header_only=True)
            if header.status != "success":
                continue  # an unfinished or failed log: the eval set resumes it itself
            errored = sum(1 for s in read_eval_log_sample_summaries(str(path)) if s.error)
            if not errored:
                continue
            header.status = "error"
            header.error = EvalError(message=f"{REOPENED} ({errored})", traceback="", traceback_ansi="")
            write_eval_log(header, str(path), format="eval", header_only=True)
            reopened.append(path)
        except Exception:  # noqa: BLE001  an unreadable log is left for the eval set to judge
            continue
    return reopened
