"""Where the shards of `trustmh run --workers N` run: local processes (`--engine local`) or Ray tasks
(`--engine ray`). An engine only places the N `trustmh run … --shard i/N` commands and reports how each
ended; the shards resume like any run, and merging them is `trustmh.run.execute.merge`. No scheduling of our own:
Ray decides where and when each task runs.

Keys: a shard reads API keys from the environment of the process that runs it, exactly as a local run
does. Nothing here passes the environment to Ray (no `runtime_env` env vars, which Ray would keep in its
job table and dashboard); a Ray task prints nothing, and the shard's output it returns is redacted first.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from trustmh.core import TrustmhError
from trustmh.run.secrets import redact, secret_values
from trustmh.storage import Url, run_path, write_text_atomic

ENGINES = ("local", "ray")
RAY_MISSING = "--engine ray needs Ray, which is not installed: pip install 'trustmh[ray]'"
# What a shard's failure report shows of its output (the whole redacted output is in OUT/workers/i.log).
TAIL_LINES = 15
# Options of the launching command that do not go to the shards (their value follows them).
_LAUNCH_ONLY = ("--workers", "--out", "--engine", "--ray-address", "--ray-cpus")


@dataclass
class ShardOutcome:
    """How one shard ended: its exit code (None when it never finished: its task or node died) and the end
    of its output, or the engine's error."""

    index: int
    code: int | None
    output: str = ""

    @property
    def failed(self) -> bool:
        return self.code not in (0, 1)  # 1: finished, with errored samples reported in its results


def shard_argv(argv: Sequence[str], out: Path | Url, index: int, count: int) -> list[str]:
    """The `trustmh run` arguments of shard `index`: the launching command without its launch options,
    with `--shard index/count --out OUT/workers/index`."""
    cleaned: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in _LAUNCH_ONLY:
            skip = True
            continue
        if a.startswith(tuple(f"{o}=" for o in _LAUNCH_ONLY)):
            continue
        cleaned.append(a)
    if cleaned[:1] != ["run"]:
        cleaned.insert(0, "run")
    return [*cleaned, "--shard", f"{index}/{count}", "--out", str(shard_dir(out, index))]


def shard_dir(out: Path | Url | str, index: int) -> Path | Url:
    """Shard `index`'s run directory: OUT/workers/index (a URL stays a URL, passed on unchanged)."""
    return run_path(out) / "workers" / str(index)


def _stop_with_parent() -> None:
    """In a local shard, before it starts: ask Linux to send it SIGTERM when the `--workers` process that
    started it dies, however it dies (SIGKILL included), so no shard lives on calling the API."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def run_local(commands: list[list[str]]) -> list[ShardOutcome]:
    """One process per shard on this machine, all at once; their output goes to this console. The shards
    stop when this process dies (`_stop_with_parent`) or is interrupted (terminated here)."""
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for argv in commands:
            procs.append(subprocess.Popen([sys.executable, "-m", "trustmh.cli", *argv],
                                          preexec_fn=_stop_with_parent))  # noqa: PLW1509
        return [ShardOutcome(i, p.wait()) for i, p in enumerate(procs)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=30)


# The shard's interpreter: on Linux it asks to be stopped (SIGTERM) when the Ray worker that started it dies
# (a cancelled task, a driver that went away), so that it never lives on to write its directory beside the
# next attempt's shard; then it becomes `trustmh run` (the request survives exec).
_WITH_PARENT = """
import os, signal, sys
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except (OSError, AttributeError):
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit("trustmh: the Ray worker that started this shard is gone")
os.execv(sys.executable, [sys.executable, "-m", "trustmh.cli", *sys.argv[2:]])
"""


def _run_shard(argv: list[str], cwd: str) -> tuple[int, str]:
    """The body of a shard's Ray task: the shard as a `trustmh run` subprocess of the Ray worker (a fresh
    interpreter: Inspect owns its event loop and globals), its output captured and redacted."""

    proc = subprocess.run([sys.executable, "-c", _WITH_PARENT, str(os.getpid()), *argv],
                          cwd=cwd if os.path.isdir(cwd) else None, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    return proc.returncode, redact(proc.stdout or "", secret_values())


def ray_available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def run_ray(commands: list[list[str]], address: str | None = None, cpus: float = 1.0) -> list[ShardOutcome]:
    """One Ray task per shard (`cpus` CPUs each) on the cluster at `address` (None: RAY_ADDRESS, else a new
    local cluster for this command), waited for; one failed task does not stop the others."""
    if not ray_available():
        raise TrustmhError(RAY_MISSING)
    import ray

    started_here = not ray.is_initialized()
    if started_here:
        kwargs: dict[str, object] = {"address": address, "log_to_driver": False}
        if address is None and not os.environ.get("RAY_ADDRESS"):
            kwargs["include_dashboard"] = False  # a cluster for this command only: no dashboard to serve
        try:
            ray.init(**kwargs)
        except Exception as exc:  # noqa: BLE001  Ray's own errors: connection refused, version mismatch…
            where = address or os.environ.get("RAY_ADDRESS") or "a new local cluster"
            raise TrustmhError(f"--engine ray: cannot start or reach Ray at {where} "
                               f"({type(exc).__name__}: {exc})") from None
    try:
        task = ray.remote(num_cpus=cpus, max_retries=0)(_run_shard)
        cwd = os.getcwd()
        refs = [task.remote(argv, cwd) for argv in commands]
        outcomes = []
        for i, ref in enumerate(refs):
            try:
                code, output = ray.get(ref)
                outcomes.append(ShardOutcome(i, code, output))
            except Exception as exc:  # noqa: BLE001  the task or its node died: report it, wait for the others
                outcomes.append(ShardOutcome(i, None, f"Ray task failed: {type(exc).__name__}: {exc}"))
        return outcomes
    finally:
        if started_here:
            ray.shutdown()


def launch(engine: str, argv: Sequence[str], out: Path | Url, count: int, *, ray_address: str | None = None,
           ray_cpus: float = 1.0) -> list[ShardOutcome]:
    """Run the `count` shards of the command `argv` with `engine`; raises TrustmhError naming every shard
    that failed (its exit code and the end of its output)."""

    if engine not in ENGINES:
        raise TrustmhError(f"--engine {engine}: expected one of {', '.join(ENGINES)}")
    out = run_path(out)
    if engine == "ray":
        # every node must see the run directory at the same path: resolve it here, where the user gave it
        # (a URL names the same place everywhere)
        out = out.resolve()
        if not ray_available():
            raise TrustmhError(RAY_MISSING)
    commands = [shard_argv(argv, out, i, count) for i in range(count)]
    outcomes = run_local(commands) if engine == "local" else run_ray(commands, ray_address, ray_cpus)
    secrets = secret_values()
    for o in outcomes:
        if o.output:
            o.output = redact(o.output, secrets)  # this machine's keys too, not only the worker's
            write_text_atomic(out / "workers" / f"{o.index}.log", o.output)
    failed = [o for o in outcomes if o.failed]
    for o in outcomes:
        if engine == "ray" and not o.failed:
            # the shard's own error lines, which its console would have shown
            for line in o.output.splitlines():
                if line.startswith("trustmh: error"):
                    print(f"[shard {o.index}/{count}] {line}", file=sys.stderr)
            print(f"trustmh: shard {o.index}/{count} finished (exit {o.code}; its output: "
                  f"{out / 'workers' / f'{o.index}.log'})", file=sys.stderr)
    if failed:
        parts = []
        for o in failed:
            why = f"exit code {o.code}" if o.code is not None else "did not finish"
            tail = [ln for ln in o.output.splitlines() if ln.strip()][-TAIL_LINES:]
            for line in tail:
                print(f"[shard {o.index}/{count}] {line}", file=sys.stderr)
            last = tail[-1] if tail else ("its output is above" if engine == "local" else "no output")
            parts.append(f"shard {o.index}/{count} ({why}): {last}")
        raise TrustmhError(f"{len(failed)} of {count} shard(s) failed: {'; '.join(parts)}; run the same command "
                           "again to continue (finished shards and samples are reused)")
    return outcomes
