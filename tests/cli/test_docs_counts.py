"""The sub-task counts the front door and the pillars page state are the ones `trustmh list` prints, so the docs
cannot drift from the catalogue again."""

from __future__ import annotations

import re

import pytest

from fixture_paths import REPO
from trustmh.cli import main

ROW = re.compile(r"^    ([a-z0-9_]+/[a-z0-9_]+) ")
DEFAULT_ONLY = "[default mode only]"


def listed(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The sub-task rows of `trustmh list` (its "Sub-tasks" section)."""
    assert main(["list"]) == 0
    section = capsys.readouterr().out.split("\nSuites:")[0]
    return [line for line in section.splitlines() if ROW.match(line)]


def stated(path: str, pattern: str) -> int:
    match = re.search(pattern, (REPO / path).read_text(encoding="utf-8"), re.DOTALL)
    assert match is not None, f"{path}: no sub-task count found"
    return int(match.group(1))


def test_readme_states_the_default_modes_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert stated("README.md", r"(\d+) sub-tasks") == len(listed(capsys))


def test_the_pillars_page_states_the_default_modes_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert stated("docs/pillars/index.md", r"Default mode adds.*?(\d+) sub-tasks") == len(listed(capsys))


def test_the_pillars_page_states_the_faithful_modes_count(capsys: pytest.CaptureFixture[str]) -> None:
    faithful = [row for row in listed(capsys) if DEFAULT_ONLY not in row]
    assert stated("docs/pillars/index.md", r"Faithful mode has the original's (\d+) sub-tasks") == len(faithful)
