"""TRUSTMH_PUBLISHERS_DIR (docs/data.md#publishers): one folder of local copies of the publishers' repositories,
each found by its name (owner+repo or repo), read by every reader; offline without it, the plan says once per
repository what is missing and the folder or option that fixes it, and prints no ERROR line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.cli import main

# the sub-tasks that read only from a publisher's repository (crisis study, Moore et al., the SIRI-2 tutorial)
PUBLISHER_SUBTASKS = ("crisis/crisis_identification", "crisis/crisis_escalation", "crisis/interjections",
                      "fairness/stigma", "clinical/siri2")


def publishers_folder(root: Path) -> Path:
    """Synthetic fixture copies laid out like the publishers' repositories, named both ways the lookup knows."""
    shutil.copytree(FIXTURES / "crisis", root / "ellisalicante+LLMs-Mental-Health-Crisis")
    shutil.copytree(FIXTURES / "siri2", root / "MattMatt27+mental-health-benchmark-tutorial")
    moore = root / "llms-as-therapists"  # the repository's name alone
    shutil.copytree(FIXTURES / "moore_stigma", moore)
    shutil.copytree(FIXTURES / "moore_interjections" / "publisher", moore, dirs_exist_ok=True)
    shutil.copytree(FIXTURES / "mindeval", root / "SWORDHealth+mind-eval")
    return root


def plan(out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5",
                 "--suite", "trustmh", "--subtasks", ",".join(PUBLISHER_SUBTASKS), "--limit", "2",
                 "--out", str(out)])
    return code, capsys.readouterr().err


@pytest.fixture
def offline_fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Offline, no copy in the data folder or the cache: what a fresh clone without the network sees."""
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    monkeypatch.delenv("TRUSTMH_PUBLISHERS_DIR", raising=False)


@pytest.mark.usefixtures("offline_fresh")
def test_with_the_publishers_folder_every_publisher_subtask_is_planned(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUSTMH_PUBLISHERS_DIR", str(publishers_folder(tmp_path / "publishers")))
    code, err = plan(tmp_path / "out", capsys)
    assert code == 0
    assert "ERROR" not in err
    assert "not computed" not in err


@pytest.mark.usefixtures("offline_fresh")
def test_without_it_the_plan_names_each_missing_repository_once_with_its_fix(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = plan(tmp_path / "out", capsys)
    missing = [line for line in err.splitlines() if "not available here" in line]
    assert code == 0
    assert "ERROR" not in err
    assert len(missing) == 3  # the crisis study, Moore et al. (two sub-tasks, one line), the SIRI-2 tutorial
    moore = next(line for line in missing if "jlcmoore/llms-as-therapists" in line)
    assert "crisis/interjections, fairness/stigma not computed" in moore
    assert "TRUSTMH_PUBLISHERS_DIR=DIR" in moore
    assert "-O moore_dir=DIR" in moore
    assert "raw.githubusercontent.com" not in err


@pytest.mark.usefixtures("offline_fresh")
def test_each_reader_finds_its_repository_in_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.pillars.clinical.siri2_data import ITEMS_FILE, siri2_file
    from trustmh.pillars.conversation.mindeval import ANNOTATIONS, locate
    from trustmh.pillars.conversation.realism import find_human_turns
    from trustmh.pillars.crisis.data import crisis_file
    from trustmh.pillars.crisis.moore import reference_root

    root = publishers_folder(tmp_path / "publishers")
    monkeypatch.setenv("TRUSTMH_PUBLISHERS_DIR", str(root))
    assert crisis_file("h1_scores").is_relative_to(root / "ellisalicante+LLMs-Mental-Health-Crisis")
    assert siri2_file(ITEMS_FILE, {}).is_relative_to(root / "MattMatt27+mental-health-benchmark-tutorial")
    assert reference_root(None) == root / "llms-as-therapists"
    assert locate(None, ANNOTATIONS).is_relative_to(root / "SWORDHealth+mind-eval")
    assert find_human_turns({}) is not None


def test_an_explicit_option_wins_over_the_publishers_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.pillars.crisis.data import crisis_file

    monkeypatch.setenv("TRUSTMH_PUBLISHERS_DIR", str(publishers_folder(tmp_path / "publishers")))
    own = tmp_path / "own"
    shutil.copytree(FIXTURES / "crisis", own)
    assert crisis_file("h1_scores", {"crisis_dir": str(own)}).is_relative_to(own)


@pytest.mark.slow  # the whole suite's plan, about a minute on a busy machine
@pytest.mark.usefixtures("offline_fresh")
def test_a_fresh_offline_plan_of_the_whole_suite_has_no_error_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TRUSTMH_PUBLISHERS_DIR", str(publishers_folder(tmp_path / "publishers")))
    code = main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 0
    assert "ERROR" not in err
    assert "not available here" not in err
