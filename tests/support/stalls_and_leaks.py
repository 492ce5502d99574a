"""A pytest plugin (loaded by tests/conftest.py): stalls fail their test, and no test-started process
outlives the session (docs/contributing.md#stalls-and-leaks).

* **Stalls.** A loopback server (`bounded_http`) records a broken bound: a request past its cap or its time,
  a call that waited too long. Its `with` block raises it; this plugin fails, at teardown, the test during
  which a server recorded one that nothing raised yet (a server owned by a fixture or started without `with`),
  or its teardown if the violation came then.
* **Leaks.** At the end of the session, after every fixture's teardown, any process the session started that
  is still alive is named (pid, command line, the test during which it started), killed, and fails the
  session. "Started by the session" is a descendant of this process, or any process carrying this session's
  mark in its environment (every child inherits it, so a daemon that detached from its parent, as Ray's do,
  is found too). The process is also made a child subreaper (Linux), so an orphan whose parent was killed is
  re-parented here rather than to init. Under pytest-xdist each worker checks its own; the controller
  checks nothing (its children are the workers).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from bounded_http import violation_count, violations_since

SESSION_MARK = "TRUSTMH_TEST_SESSION_MARK"
PR_SET_CHILD_SUBREAPER = 36
# multiprocessing's helpers live as long as the process that started them and end with it: not a leak
HELPERS = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")
KILL_GRACE_S = 3.0


# ------------------------------------------------------------------------------------------------ stalls
_FIRST = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.stash[_FIRST] = violation_count()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """Fail the test (or its teardown) during which a loopback server broke a bound that nothing raised."""
    report: pytest.TestReport = yield
    pending = [v for v in violations_since(item.stash.get(_FIRST, 0)) if not v.raised]
    if not pending:
        return report
    for v in pending:
        v.raised = True
    message = ("a loopback server's bounds were broken during this test:\n  "
               + "\n  ".join(v.line() for v in pending))
    if report.failed:
        report.sections.append(("loopback bounds", message))
    else:
        report.outcome, report.longrepr = "failed", message
    return report


# ------------------------------------------------------------------------------------------------- leaks
@pytest.fixture(scope="session", autouse=True)
def _bundled_model_servers() -> Iterator[None]:
    """The owner of the bundled model's servers (`trustmh.models.gguf_server`): the first in-process `gguf/`
    model starts one and the process keeps it (Inspect memoizes the model, which holds the server's URL), so
    the session shares it, loading the model once, and ends it here, before the process check, rather than
    at the interpreter's exit."""
    yield
    gguf = sys.modules.get("trustmh.models.gguf")  # imported only if a test used a gguf/ model
    if gguf is not None:
        gguf.stop_servers()


class LeakCheck:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.mark = f"{os.getpid()}-{uuid.uuid4().hex}"
        os.environ[SESSION_MARK] = self.mark
        self.started: list[tuple[float, str]] = []  # (seconds since boot, nodeid) as each test starts
        _become_subreaper()

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self.started.append((time.clock_gettime(time.CLOCK_BOOTTIME), nodeid))

    @pytest.hookimpl(trylast=True)  # after runner's pytest_sessionfinish, which tears down every fixture left
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.config.pluginmanager.has_plugin("dsession"):  # xdist's controller: its children are workers
            return
        leaked = self.leaked()
        if not leaked:
            return
        lines = [self.describe(p) for p in leaked]
        kill(leaked)
        message = ("processes started by tests outlived their fixtures (killed now; the fixture that starts "
                   "one must end it):\n  " + "\n  ".join(lines))
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self.started:  # as a teardown failure of the last test (xdist forwards only its items' reports)
            report = pytest.TestReport(nodeid=self.started[-1][1], keywords={}, outcome="failed",
                                       location=(__file__, None, "the session-end process check"),
                                       longrepr=message, when="teardown")
            self.config.hook.pytest_runtest_logreport(report=report)

    def leaked(self) -> list[psutil.Process]:
        me = psutil.Process()
        found = {p.pid: p for p in me.children(recursive=True)}
        for p in psutil.process_iter():
            if p.pid in found or p.pid == me.pid:
                continue
            with contextlib.suppress(psutil.Error):
                if p.environ().get(SESSION_MARK) == self.mark:
                    found[p.pid] = p
        alive = []
        for p in found.values():
            with contextlib.suppress(psutil.Error):
                if p.status() == psutil.STATUS_ZOMBIE:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(p.pid, os.WNOHANG)  # an orphan re-parented here and ended: reap it
                    continue
                if any(h in " ".join(p.cmdline()) for h in HELPERS):
                    continue
                alive.append(p)
        return alive

    def describe(self, p: psutil.Process) -> str:
        try:
            command, born = " ".join(p.cmdline())[:200], _born(p.pid)
        except (psutil.Error, OSError):
            return f"pid {p.pid} (gone)"
        # starttime is floored to a clock tick: a process started in a test's first tick belongs to that test
        tick = 1 / os.sysconf("SC_CLK_TCK")
        during = next((nodeid for t, nodeid in reversed(self.started) if t <= born + tick), "before the first test")
        return f"pid {p.pid}, started during {during}: {command}"


def _born(pid: int) -> float:
    """When a process started, in seconds since boot, to the clock tick (psutil's create_time counts from a
    boot time rounded to the second, too coarse to tell which test started it)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime, counted after pid and comm


def kill(processes: list[psutil.Process]) -> None:
    for p in processes:
        with contextlib.suppress(psutil.Error):
            p.terminate()
    _, alive = psutil.wait_procs(processes, timeout=KILL_GRACE_S)
    for p in alive:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(alive, timeout=KILL_GRACE_S)


def _become_subreaper() -> None:
    """Orphans of killed children come to us (Linux only; elsewhere they go to init and the mark finds them)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(LeakCheck(config), "trustmh-leak-check")
