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
from pathlib import Path
from typing import Any

from trustmh import storage
from trustmh.core import TrustmhError
from trustmh.storage import Url

MANIFEST = "run.json"
RESULT_FILES = ("results.json", "results.csv", "items.jsonl", "report.html", "judge_long.csv", "human_long.csv",
                "plan.json", "spend.json")


def check_writable(out: Path | Url) -> None:
    """A clear error, before any model call, when `out` cannot be a run directory."""
    if isinstance(out, Url):
        storage.check_writable(out)
        return
    if out.exists() and not out.is_dir():
        raise TrustmhError(f"--out {out}: is a file, not a directory; choose a directory for the run")
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".trustmh-write-test.", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise TrustmhError(f"--out {out}: cannot write there ({exc.strerror or exc}); choose a writable "
                           "directory") from None


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    keys = sorted(set(old) | set(new))
    return [f"{k}: {json.dumps(old.get(k))} vs {json.dumps(new.get(k))}" for k in keys if old.get(k) != new.get(k)]


def prepare(out: Path | Url, manifest: dict[str, Any], *, overwrite: bool) -> bool:
    """Make `out` ready for a run with this manifest; True when an earlier run of the same configuration
    is continued. Raises TrustmhError (nothing changed) for a directory holding a different run."""
    check_writable(out)
    path = out / MANIFEST
    has_run = path.exists() or (out / "logs").exists() or any((out / f).exists() for f in RESULT_FILES)
    if has_run and overwrite:
        clear(out)
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


def clear(out: Path | Url) -> None:
    """Remove a previous run's manifest, logs and results (the response cache stays: it is keyed by content)."""
    for name in (MANIFEST, *RESULT_FILES):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()
    storage.rmtree(out / "logs")


def forget_errored_logs(log_dir: Path | Url) -> list[Path | Url]:
    """Remove the logs of finished sub-tasks that have errored samples, so that continuing the run runs those
    sub-tasks again: their finished samples come back from the response cache at no cost, and the errored
    ones are asked again (Inspect's eval set would otherwise keep a finished log as it is)."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries

    removed: list[Path | Url] = []
    for path in sorted(log_dir.glob("*.eval")):
        try:
            if read_eval_log(str(path), header_only=True).status != "success":
                continue  # an unfinished or failed log: the eval set recovers it itself
            if any(s.error for s in read_eval_log_sample_summaries(str(path))):
                path.unlink()
                removed.append(path)
        except Exception:  # noqa: BLE001  an unreadable log is left for the eval set to judge
            continue
    return removed
