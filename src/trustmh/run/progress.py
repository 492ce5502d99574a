"""trustmh's own progress line during a run: sub-tasks done out of the plan's, samples finished (errored ones
apart), model calls made and, under a budget, the spend. The default display of `trustmh run`: Inspect's own
display is off (`display="none"`), so a run prints a few lines, not Inspect's panels; `--verbose` (or
`--display`) shows Inspect's display instead.

On a terminal the line is rewritten in place as samples finish; elsewhere (a file, a CI log) a line is written
every LOG_EVERY seconds while samples or calls move, and one per finished sub-task. A sub-task with errored
samples ends with the endpoint and the first error; an endpoint whose oldest call has waited STALL_AFTER seconds
is named while the run waits (a watcher thread, so that a run whose every call hangs still says so). Fed by an
Inspect hook and by `run.usage.held` around every call, registered by the first progress line of the process
(after Inspect has loaded its hooks, so that Inspect prints no banner for it), and silent while no line is shown.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from inspect_ai.hooks import Hooks, RunStart, SampleEnd, TaskEnd, hooks

from trustmh.inspect_compat import load_hooks_quietly
from trustmh.run.budget import active_budget

# a terminal's line is rewritten at most this often (seconds): samples of the bundled model finish in bursts
REDRAW_EVERY = 0.25
# a log (not a terminal) gets a line at most this often while the run moves (seconds)
LOG_EVERY = 10.0
# an endpoint whose oldest call has waited this long (seconds) is named as not answering
STALL_AFTER = 60.0


class ProgressLine:
    """The progress of one `evaluate` call: `total` sub-tasks (some may be finished already on a resumed run)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.done = 0
        self.samples = 0
        self.errored = 0
        self.calls = 0
        self.tty = stream.isatty()
        self.drawn = 0.0
        self.lock = threading.Lock()
        self.waiting: dict[int, tuple[str, float]] = {}  # call -> (endpoint, when it was sent)
        self.last_failed = ""  # the endpoint of the last call that failed (a sample's error names it)
        self.first_error: dict[str, str] = {}  # eval id -> "endpoint: first error"
        self.errors_of: dict[str, int] = {}  # eval id -> errored samples
        self.stalled: set[str] = set()  # endpoints already said to be not answering
        # every stall said, for results.json (`stalled_endpoints`): a console line alone is gone with the console
        self.stalls: list[dict[str, Any]] = []

    def text(self) -> str:
        errored = f" ({self.errored} errored)" if self.errored else ""
        spend = _spend()
        return (f"trustmh: {self.done}/{self.total} sub-tasks done, {self.samples} samples{errored}, "
                f"{self.calls} calls" + (f", ${spend:.2f} spent" if spend is not None else ""))

    def started(self, pending: int) -> None:
        """Inspect starts the sub-tasks not finished yet (a resumed run skips the finished ones)."""
        self.done = max(self.total - pending, 0)
        if self.tty:
            self._redraw()
        else:
            self._say(f"{self.text()} (starting {pending})")

    def call_sent(self, key: int, endpoint: str) -> None:
        with self.lock:
            self.waiting[key] = (endpoint, time.monotonic())

    def call_ended(self, key: int, failed: bool) -> None:
        with self.lock:
            endpoint, _ = self.waiting.pop(key, ("", 0.0))
            self.calls += not failed
            if failed:
                self.last_failed = endpoint
            else:
                self.stalled.discard(endpoint)
        self._moved()

    def sample_finished(self, eval_id: str = "", error: str | None = None) -> None:
        self.samples += 1
        if error is not None:
            self.errored += 1
            self.errors_of[eval_id] = self.errors_of.get(eval_id, 0) + 1
            endpoint = self.last_failed
            first_line = (error.strip().splitlines() or ["no detail"])[0][:200]
            self.first_error.setdefault(eval_id, f"{endpoint}: {first_line}" if endpoint else first_line)
        self._moved()

    def task_finished(self, subtask: str, eval_id: str = "") -> None:
        self.done = min(self.done + 1, self.total)
        errors = self.errors_of.get(eval_id)
        ended = f"{subtask} finished" + (f", {errors} sample(s) errored; first: {self.first_error[eval_id]}"
                                         if errors else "")
        if self.tty and not errors:
            self._redraw()
        elif self.tty:
            print(f"\r\033[K{self.text()} ({ended})", file=self.stream, flush=True)
        else:
            self._say(f"{self.text()} ({ended})")

    def check_stalls(self) -> None:
        """Name each endpoint whose oldest waiting call has waited STALL_AFTER seconds (once until it answers)."""
        now = time.monotonic()
        with self.lock:
            oldest: dict[str, float] = {}
            for endpoint, sent in self.waiting.values():
                oldest[endpoint] = min(sent, oldest.get(endpoint, sent))
            late = {e: now - t for e, t in oldest.items() if now - t >= STALL_AFTER and e not in self.stalled}
            self.stalled |= set(late)
        for endpoint, waited in sorted(late.items()):
            said = (f"{endpoint} has not answered for {waited:.0f} s (a call still waiting; each call ends at its "
                    "--timeout and is retried up to --max-retries)")
            self.stalls.append({"endpoint": endpoint, "waited_seconds": round(waited), "line": said})
            self._say(f"trustmh: {said}", newline_first=self.tty)

    def close(self) -> None:
        if self.tty:
            self._redraw()
            print(file=self.stream, flush=True)

    def _moved(self) -> None:
        elapsed = time.monotonic() - self.drawn
        if self.tty and elapsed >= REDRAW_EVERY:
            self._redraw()
        elif not self.tty and elapsed >= LOG_EVERY:
            self._say(self.text())

    def _say(self, line: str, newline_first: bool = False) -> None:
        self.drawn = time.monotonic()
        print(("\n" if newline_first else "") + line, file=self.stream, flush=True)

    def _redraw(self) -> None:
        self.drawn = time.monotonic()
        print(f"\r\033[K{self.text()}", end="", file=self.stream, flush=True)


def _spend() -> float | None:
    """What the run's budget has counted so far (None without `--budget`: no prices to count with)."""
    budget = active_budget()
    return None if budget is None else float(budget.spent)


@contextmanager
def watching_call(endpoint: str) -> Iterator[None]:
    """Around one model call (`run.usage.held`): the progress line counts it and sees it wait."""
    line = _active
    if line is None:
        yield
        return
    key = next(_call_keys)
    line.call_sent(key, endpoint)
    failed = True
    try:
        yield
        failed = False
    finally:
        line.call_ended(key, failed)


_active: ProgressLine | None = None
_call_keys = itertools.count()
_registered = False


@contextmanager
def progress_line(total: int, stream: TextIO | None = None) -> Iterator[ProgressLine]:
    """Show the progress line of the Inspect evaluation run inside this block."""
    global _active, _registered
    if not _registered:
        load_hooks_quietly()
        hooks(name="trustmh_progress", description="trustmh's progress line (sub-tasks and samples done)")(
            _ProgressHooks)
        _registered = True
    line = ProgressLine(total, stream or sys.stderr)
    _active = line
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(line, stop), name="trustmh-progress", daemon=True)
    watcher.start()
    try:
        yield line
    finally:
        stop.set()
        watcher.join()
        _active = None
        line.close()


def _watch(line: ProgressLine, stop: threading.Event) -> None:
    while not stop.wait(min(STALL_AFTER / 4, LOG_EVERY)):
        line.check_stalls()


class _ProgressHooks(Hooks):
    def enabled(self) -> bool:
        return _active is not None

    async def on_run_start(self, data: RunStart) -> None:
        if _active is not None:
            _active.started(len(data.task_names))

    async def on_sample_end(self, data: SampleEnd) -> None:
        if _active is not None:
            error = getattr(data.sample, "error", None)
            _active.sample_finished(data.eval_id, None if error is None else str(error.message))

    async def on_task_end(self, data: TaskEnd) -> None:
        if _active is not None:
            _active.task_finished(_subtask_name(data.log), data.eval_id)


def _subtask_name(log: Any) -> str:
    """The sub-task id (the name of the task's dataset, `run/tasks.py`), else the task's name."""
    dataset = getattr(log.eval, "dataset", None)
    return str(getattr(dataset, "name", None) or log.eval.task)
