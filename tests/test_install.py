"""The install resolves at once (issue 52): `make install` runs pip through tools/pip_resolves_at_once.sh, held
to constraints.txt, and that script fails an install whose resolver backtracked."""

from __future__ import annotations

import subprocess

from fixture_paths import REPO

SCRIPT = REPO / "tools" / "pip_resolves_at_once.sh"
BACKTRACK = "INFO: pip is looking at multiple versions of boto3 to determine which version is compatible"


def _run(*command: str) -> int:
    return subprocess.run([str(SCRIPT), *command], capture_output=True, timeout=30).returncode


def test_an_install_that_backtracks_fails() -> None:
    assert _run("echo", BACKTRACK) == 1


def test_an_install_that_resolves_at_once_passes() -> None:
    assert _run("echo", "Successfully installed trustmh-0.1.0") == 0


def test_a_failing_pip_keeps_its_own_exit_code() -> None:
    assert _run("sh", "-c", "exit 7") == 7


def test_both_make_installs_go_through_the_script() -> None:
    assert (REPO / "Makefile").read_text(encoding="utf-8").count("$(PIP_ONCE) -e") == 2


def test_the_script_is_given_the_constraints() -> None:
    assert "PIP_ONCE := tools/pip_resolves_at_once.sh $(BIN)/pip install -c constraints.txt" in (
        REPO / "Makefile").read_text(encoding="utf-8")
