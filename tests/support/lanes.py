"""The test lanes' rules, as pytest plugins that tests/conftest.py registers (docs/contributing.md#tests).

* `CpuRule`, the 3-second rule: a test outside the slow lane may spend at most TRUSTMH_TEST_CPU_LIMIT seconds
  of CPU (3 by default) in its setup plus its call. CPU, not wall time: a shared, busy machine stretches wall
  time but not CPU, so the rule gives the same verdict under load. The CPU of the test's finished child
  processes counts too (a CLI subprocess it waited for), and that of every thread (its loopback servers).
  A fixture shared wider than one test (module, package or session scope) is built once for all its tests,
  so its setup is charged to the fixture, not to the test that happens to build it first; it has a bound of
  its own, SHARED_FIXTURE_CPU_FACTOR times the test's. TRUSTMH_TEST_CPU_REPORT=path appends
  "cpu_s<TAB>shared_fixtures_s<TAB>nodeid" for every test, to measure the lanes.
* `UnitLane`: a test file that names one of SERVER_WORDS starts a server, a browser or a subprocess; its
  tests are marked `server` at collection, from the file's text (a function-level import counts too), so the
  classification is never kept by hand. `make test-unit` leaves them out; a test the unit lane keeps that
  runs a child process anyway fails, naming the word list to extend. It also leaves out the tests marked `heavy`
  at collection from HEAVY_LIST, the tests measured over 0.3 s of CPU (or in a file whose shared fixtures cost
  over 1 s; `make heavy-tests` measures the lane again and writes it). Not a rule of its own: a bound near
  0.3 s would fail by turns whichever test first imports a library in a worker (seen: 0.3 s tests at 1.3 s).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import resource
import time
from pathlib import Path

import pytest

TEST_CPU_LIMIT_S = float(os.environ.get("TRUSTMH_TEST_CPU_LIMIT", "3"))
HEAVY_LIST = Path(__file__).with_name("heavy_tests.txt")
SHARED_FIXTURE_CPU_FACTOR = 4
RULE = ("the fast lane's rule (docs/contributing.md#tests): a test not marked slow spends at most {limit:g} s "
        "of CPU in setup + call, a fixture shared by several tests at most {shared:g} s to build; mark the "
        "test slow, or build its expensive setup once in a shared fixture (TRUSTMH_TEST_CPU_LIMIT sets the "
        "limit, for measuring)")

SERVER_WORDS = ("loopback_server", "LoopbackServer", "batch_server", "chatbot_server", "clock_endpoint",
                "ray_cluster", "browser", "subprocess", "Popen", "gguf_server", "HTTPServer", "moto",
                "multiprocessing", "--workers",
                # `trustmh dossier` asks git for the commit it was built from (a child process)
                '["dossier"')

_SPENT = pytest.StashKey[dict]()
_CHILDREN_BEFORE = pytest.StashKey[int]()


def cpu_seconds() -> float:
    """This process's CPU (all its threads) plus that of its finished, waited-for children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def children_finished() -> int:
    """Page faults of this process's finished children: it grows whenever a child process ends."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


class CpuRule:
    """Fails a passing test outside the slow lane that spends more than the limit of CPU."""

    def __init__(self, limit_s: float = TEST_CPU_LIMIT_S) -> None:
        self.limit_s = limit_s
        self.shared_limit_s = limit_s * SHARED_FIXTURE_CPU_FACTOR
        self._depth = 0  # shared fixtures being built (only the outermost one is timed)
        self._shared_s = 0.0
        self._shared_over: list[str] = []

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        # trustmh imports scipy.stats lazily (CLI start-up); about 2 s of CPU, paid once per process, not by
        # whichever test first needs it
        import scipy.stats  # noqa: F401

        # Inspect imports these in its first eval of a process (the Anthropic provider for its sample
        # bookkeeping, its agent server): about 3 s of CPU, likewise paid once here
        for name in ("inspect_ai.model._providers.anthropic", "inspect_ai.agent._acp.server",
                     "inspect_ai.model._providers.openai", "inspect_ai.model._providers.mockllm",
                     "inspect_ai._eval.eval", "inspect_ai._eval.task.run"):
            with contextlib.suppress(ImportError):
                importlib.import_module(name)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
        if fixturedef.scope == "function" or self._depth:
            yield
            return
        self._depth += 1
        start = cpu_seconds()
        try:
            yield
        finally:
            self._depth -= 1
            spent = cpu_seconds() - start
            self._shared_s += spent
            if spent > self.shared_limit_s:
                self._shared_over.append(f"{fixturedef.argname} ({fixturedef.scope}) {spent:.1f} s")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item):
        self._shared_s, self._shared_over = 0.0, []
        start = cpu_seconds()
        yield
        item.stash[_SPENT] = {"own": cpu_seconds() - start - self._shared_s, "shared": self._shared_s,
                              "shared_over": self._shared_over}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        start = cpu_seconds()
        yield
        item.stash.setdefault(_SPENT, {"own": 0.0, "shared": 0.0, "shared_over": []})["own"] += (
            cpu_seconds() - start)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = (yield).get_result()
        if call.when != "call":
            return
        spent = item.stash.get(_SPENT, {"own": 0.0, "shared": 0.0, "shared_over": []})
        if os.environ.get("TRUSTMH_TEST_CPU_REPORT"):
            with open(os.environ["TRUSTMH_TEST_CPU_REPORT"], "a", encoding="utf-8") as out:
                out.write(f"{spent['own']:.2f}\t{spent['shared']:.2f}\t{item.nodeid}\n")
        if not report.passed or item.get_closest_marker("slow"):
            return
        broken = []
        if spent["own"] > self.limit_s:
            broken.append(f"its setup + call took {spent['own']:.1f} s of CPU")
        if spent["shared_over"]:
            broken.append(f"it built shared fixtures of more than {self.shared_limit_s:g} s: "
                          + ", ".join(spent["shared_over"]))
        if broken:
            report.outcome = "failed"
            report.longrepr = (f"{item.nodeid}: {'; '.join(broken)}. "
                               + RULE.format(limit=self.limit_s, shared=self.shared_limit_s))


def starts_servers(text: str) -> bool:
    return any(word in text for word in SERVER_WORDS)


def heavy_entries() -> set[str]:
    """The node ids and files of HEAVY_LIST (its lines but the comments)."""
    if not HEAVY_LIST.is_file():
        return set()
    return {line for line in HEAVY_LIST.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")}


class UnitLane:
    """Marks `server` the tests of a file that starts servers or subprocesses; holds the unit lane to it."""

    def __init__(self) -> None:
        self._files: dict[Path, bool] = {}
        self._heavy = heavy_entries()

    def _file_starts_servers(self, path: Path) -> bool:
        if path not in self._files:
            self._files[path] = starts_servers(path.read_text(encoding="utf-8"))
        return self._files[path]

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            if self._file_starts_servers(Path(str(item.fspath))):
                item.add_marker(pytest.mark.server)
            if item.nodeid in self._heavy or item.nodeid.split("::")[0] in self._heavy:
                item.add_marker(pytest.mark.heavy)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item):
        item.stash[_CHILDREN_BEFORE] = children_finished()
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report = (yield).get_result()
        if call.when != "call" or not report.passed or item.get_closest_marker("server"):
            return
        # Only the unit lane promises no child process. Elsewhere a child another test started (a server it
        # stopped) can be reaped while this test runs, which the count cannot tell apart from this test's own.
        if "not server" not in (item.config.option.markexpr or ""):
            return
        if children_finished() > item.stash.get(_CHILDREN_BEFORE, children_finished()):
            report.outcome = "failed"
            report.longrepr = (f"{item.nodeid}: ran a child process but is not marked `server`; add the word "
                               "in its file that starts it to SERVER_WORDS in tests/support/lanes.py, so "
                               "`make test-unit` leaves it out")
