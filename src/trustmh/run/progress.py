"""trustmh's own progress line during a run: sub-tasks done out of the plan's, and samples finished. The
default display of `trustmh run`: Inspect's own display is off (`display="none"`), so a run prints a few lines,
not Inspect's panels; `--verbose` (or `--display`) shows Inspect's display instead.

On a terminal the line is rewritten in place as samples finish; elsewhere (a file, a CI log) one line is written
per finished sub-task. Fed by an Inspect hook, registered by the first progress line of the process (after
Inspect has loaded its hooks, so that Inspect prints no banner for it), and silent while no line is shown.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from inspect_ai.hooks import Hooks, RunStart, SampleEnd, TaskEnd, hooks

from trustmh.inspect_compat import load_hooks_quietly

# a terminal's line is rewritten at most this often (seconds): samples of the bundled model finish in bursts
REDRAW_EVERY = 0.25


class ProgressLine:
    """The progress of one `evaluate` call: `total` sub-tasks (some may be finished already on a resumed run)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.done = 0
        self.samples = 0
        self.tty = stream.isatty()
        self.drawn = 0.0

    def text(self) -> str:
        return f"trustmh: {self.done}/{self.total} sub-tasks done, {self.samples} samples"

    def started(self, pending: int) -> None:
        """Inspect starts the sub-tasks not finished yet (a resumed run skips the finished ones)."""
        self.done = max(self.total - pending, 0)
        if self.tty:
            self._redraw()
        else:
            print(f"{self.text()} (starting {pending})", file=self.stream, flush=True)

    def sample_finished(self) -> None:
        self.samples += 1
        if self.tty and time.monotonic() - self.drawn >= REDRAW_EVERY:
            self._redraw()

    def task_finished(self, subtask: str) -> None:
        self.done = min(self.done + 1, self.total)
        if self.tty:
            self._redraw()
        else:
            print(f"{self.text()} ({subtask} finished)", file=self.stream, flush=True)

    def close(self) -> None:
        if self.tty:
            self._redraw()
            print(file=self.stream, flush=True)

    def _redraw(self) -> None:
        self.drawn = time.monotonic()
        print(f"\r\033[K{self.text()}", end="", file=self.stream, flush=True)


_active: ProgressLine | None = None
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
    try:
        yield line
    finally:
        _active = None
        line.close()


class _ProgressHooks(Hooks):
    def enabled(self) -> bool:
        return _active is not None

    async def on_run_start(self, data: RunStart) -> None:
        if _active is not None:
            _active.started(len(data.task_names))

    async def on_sample_end(self, data: SampleEnd) -> None:
        if _active is not None:
            _active.sample_finished()

    async def on_task_end(self, data: TaskEnd) -> None:
        if _active is not None:
            _active.task_finished(_subtask_name(data.log))


def _subtask_name(log: Any) -> str:
    """The sub-task id (the name of the task's dataset, `run/tasks.py`), else the task's name."""
    dataset = getattr(log.eval, "dataset", None)
    return str(getattr(dataset, "name", None) or log.eval.task)
