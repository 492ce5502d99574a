"""The lanes' rules (tests/support/lanes.py) on planted test files, run once in-process: the CPU limit fails a
test outside the slow lane, charges a shared fixture to itself, and the unit lane's classifier reads a file's
text and catches a child process it missed."""

from __future__ import annotations

from pathlib import Path

import pytest

import lanes

LIMIT_S = 0.02  # far below the planted burns, so the verdicts do not depend on the machine's speed
BURN = """
import time

import pytest


def burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass


"""
PLANTED = {
    "test_cpu.py": BURN + """
def test_over_the_limit():
    burn(0.1)


@pytest.mark.slow
def test_marked_slow():
    burn(0.1)


@pytest.fixture
def own_fixture():
    burn(0.1)


def test_with_a_slow_fixture(own_fixture):
    pass


@pytest.fixture(scope="module")
def shared_fixture():
    burn(0.05)  # over the test's limit, under the shared fixture's (4 times it)


def test_building_a_shared_fixture(shared_fixture):
    pass


@pytest.fixture(scope="session")
def costly_shared_fixture():
    burn(0.2)


def test_building_a_costly_shared_fixture(costly_shared_fixture):
    pass
""",
    # os.system names no word of SERVER_WORDS, so this file stays in the unit lane and the guard catches it
    "test_missed_child.py": "import os\n\n\ndef test_child():\n    os.system('true')\n",
    "test_named_child.py": "import subprocess\n\n\ndef test_child():\n    subprocess.run(['true'])\n",
}


class Reports:
    """Each planted test's call report (its outcome and failure text), by test name."""

    def __init__(self) -> None:
        self.by_name: dict[str, pytest.TestReport] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call":
            self.by_name[report.nodeid.split("::")[-1] + "@" + report.nodeid.split("::")[0]] = report


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pytest.TestReport]:
    folder: Path = tmp_path_factory.mktemp("planted")
    (folder / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: slow\n    server: server\n")
    for name, text in PLANTED.items():
        (folder / name).write_text(text)
    seen = Reports()
    pytest.main([str(folder), "-c", str(folder / "pytest.ini"), "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                 "--import-mode=importlib", "-m", "not server"],
                plugins=[lanes.CpuRule(limit_s=LIMIT_S), lanes.UnitLane(), seen])
    return seen.by_name


def test_a_test_over_the_limit_fails(reports: dict[str, pytest.TestReport]) -> None:
    assert reports["test_over_the_limit@test_cpu.py"].failed


def test_the_failure_states_the_rule(reports: dict[str, pytest.TestReport]) -> None:
    assert "a test not marked slow spends at most 0.02 s of CPU in setup + call" in str(
        reports["test_over_the_limit@test_cpu.py"].longrepr)


def test_a_test_marked_slow_is_not_held_to_the_limit(reports: dict[str, pytest.TestReport]) -> None:
    assert reports["test_marked_slow@test_cpu.py"].passed


def test_a_slow_fixture_of_its_own_counts_as_the_tests_setup(reports: dict[str, pytest.TestReport]) -> None:
    assert reports["test_with_a_slow_fixture@test_cpu.py"].failed


def test_a_shared_fixture_is_charged_to_itself_not_to_its_first_test(
        reports: dict[str, pytest.TestReport]) -> None:
    assert reports["test_building_a_shared_fixture@test_cpu.py"].passed


def test_a_shared_fixture_over_its_own_bound_fails_the_test_that_builds_it(
        reports: dict[str, pytest.TestReport]) -> None:
    assert "costly_shared_fixture (session)" in str(
        reports["test_building_a_costly_shared_fixture@test_cpu.py"].longrepr)


def test_a_file_that_names_a_subprocess_is_left_out_of_the_unit_lane(
        reports: dict[str, pytest.TestReport]) -> None:
    assert "test_child@test_named_child.py" not in reports


def test_a_child_process_the_classifier_missed_fails_the_test(reports: dict[str, pytest.TestReport]) -> None:
    assert "ran a child process but is not marked `server`" in str(
        reports["test_child@test_missed_child.py"].longrepr)
