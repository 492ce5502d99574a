"""The suite's two hygiene rules, shown on planted faults (docs/contributing.md#stalls-and-leaks): a fake
server capped below a test's calls fails that test within seconds, and a fixture that leaves a process
running fails the session. Each runs a small pytest session of its own (pytester, in a subprocess, so its
session-end check sees only its own children)."""

from __future__ import annotations

import os
from pathlib import Path
from xml.etree import ElementTree

import psutil
import pytest

from fixture_paths import REPO

SUPPORT = REPO / "tests" / "support"

STALLED = '''
import json
import urllib.error
import urllib.request

import pytest
from loopback_server import LoopbackServer


def chat(server):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = urllib.request.Request(server.base_url + "/chat/completions", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {server.api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status
    except urllib.error.HTTPError as ex:
        return ex.code


@pytest.fixture
def capped():
    server = LoopbackServer(max_requests=2).start()  # owned by a fixture, not a `with` block
    yield server
    server.stop()


def test_calls_past_its_cap(capped):
    statuses = [chat(capped) for _ in range(3)]
    assert statuses[:2] == [200, 200]  # its own asserts pass: only the broken bound fails it


def test_calls_within_its_cap(capped):
    assert [chat(capped) for _ in range(2)] == [200, 200]
'''

LEAKY = '''
import subprocess
import sys
from pathlib import Path

import pytest

SLEEPER = "import time; time.sleep(120)"


@pytest.fixture
def left_running(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER + " # the direct child"])
    Path("{pids}", "child").write_text(str(proc.pid))
    yield proc  # never stopped


@pytest.fixture
def orphaned():
    # a daemon that detaches: its parent exits at once, as `ray start` does
    starter = "import subprocess, sys; print(subprocess.Popen([sys.executable, '-c', sys.argv[1]], " \\
              "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"
    out = subprocess.run([sys.executable, "-c", starter, SLEEPER + " # the orphan"], capture_output=True,
                         text=True, check=True).stdout
    Path("{pids}", "orphan").write_text(out.strip())
    yield


@pytest.fixture
def stopped():
    proc = subprocess.Popen([sys.executable, "-c", SLEEPER + " # stopped by its fixture"])
    yield proc
    proc.kill()
    proc.wait()


def test_leaves_a_child(left_running, stopped):
    assert left_running.poll() is None


def test_leaves_an_orphan(orphaned):
    pass
'''


def _run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str) -> pytest.RunResult:
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(SUPPORT), str(REPO / "src"),
                                                      os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # the inner session needs no installed plugin
    pytester.makepyfile(test_planted=source)
    return pytester.runpytest_subprocess("-p", "stalls_and_leaks", "-p", "no:cacheprovider", "-q",
                                         f"--junitxml={pytester.path / 'junit.xml'}", timeout=60)


def _seconds(pytester: pytest.Pytester, name: str) -> float:
    """How long the planted test took, setup to teardown (the inner session's JUnit report)."""
    case = ElementTree.parse(pytester.path / "junit.xml").find(f".//testcase[@name='{name}']")
    assert case is not None, name
    return float(case.get("time", "inf"))


def test_a_server_capped_below_its_tests_calls_fails_that_test_within_10_s(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(pytester, monkeypatch, STALLED)
    outcomes = result.parseoutcomes()
    text = result.stdout.str()
    assert outcomes.get("failed") == 1, text
    assert outcomes.get("passed") == 1, text
    assert "FAILED test_planted.py::test_calls_past_its_cap" in text
    assert "request 3 (POST /v1/chat/completions) came after the cap of max_requests=2" in text
    assert "LoopbackServer on 127.0.0.1:" in text  # the line names the server
    assert "outlived their fixtures" not in text  # a loopback server is a thread, not a leaked process
    assert _seconds(pytester, "test_calls_past_its_cap") < 10


def test_a_fixture_that_leaves_a_process_running_fails_the_session(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    result = _run(pytester, monkeypatch, LEAKY.replace("{pids}", str(pids)))
    text = result.stdout.str()
    child, orphan = (int((pids / name).read_text()) for name in ("child", "orphan"))
    assert result.ret != 0, text
    assert result.parseoutcomes().get("passed") == 2, text  # the tests pass: only the session fails
    assert f"pid {child}, started during test_planted.py::test_leaves_a_child" in text
    assert f"pid {orphan}, started during test_planted.py::test_leaves_an_orphan" in text
    assert "stopped by its fixture" not in text
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    assert not psutil.pid_exists(orphan) or psutil.Process(orphan).status() == psutil.STATUS_ZOMBIE
