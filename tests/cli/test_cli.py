"""The command line: list, rescore → report, and clear errors with exit code 2 on bad input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scipy.stats import rankdata

from trustmh.catalogue import SUBTASKS
from trustmh.cli import main


def test_list_shows_every_subtask_and_suite(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for info in SUBTASKS:
        assert info.id in out
    assert out.count("not implemented yet") == 0
    for suite in ("starter", "trustmh", "mentalbench"):
        assert suite in out


@pytest.mark.slow
def test_rescore_then_compare(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rescored"
    assert main(["rescore", "--format", "trustmh-original", "--from", str(data_dir / "trustmh"),
                 "--out", str(out), "--mode", "faithful"]) == 0
    dirs = sorted(p for p in out.iterdir() if (p / "results.json").is_file())
    assert len(dirs) == 12
    assert (out / "report.html").is_file()
    board_file = tmp_path / "board.html"
    assert main(["report", *map(str, dirs), "--out", str(board_file)]) == 0
    board = json.loads(board_file.with_suffix(".json").read_text())
    runs = [json.loads((d / "results.json").read_text()) for d in dirs]
    values = {r["model"]: r["subtasks"]["ethics/ethical_reasoning"]["value"] for r in runs}
    expected = rankdata([-v for v in values.values()], method="average")
    assert board["subtasks"]["ethics/ethical_reasoning"]["ranks"] == dict(zip(values, expected, strict=True))
    # privacy was released for 6 models only: the others are not ranked on it
    assert len(board["subtasks"]["privacy/awareness"]["ranks"]) == 6


@pytest.mark.parametrize("argv, message", [
    (["run", "--subtasks", "no_such_task", "--no-judge"], "unknown sub-task"),
    (["run", "--pillars", "astrology", "--no-judge"], "unknown pillar"),
    (["run", "--judge", "a/b", "--judge", "c/d"], "unknown model provider 'a'"),
    (["run", "--model", "nosuchprovider/x", "--no-judge"], "unknown model provider 'nosuchprovider'"),
    (["run", "--model", "gpt-4o", "--no-judge"], "expected PROVIDER/MODEL"),
    (["report", "/nonexistent/run"], "no results.json"),
    (["rescore", "--format", "trustmh-original", "--from", "/nonexistent", "--out", "x"], "not a directory"),
])
def test_bad_input_exits_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str],
                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not any(tmp_path.iterdir()), "nothing is written on bad input"


def test_report_rejects_a_file_that_is_not_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "run"
    bad.mkdir()
    (bad / "results.json").write_text('{"model": "x"}')
    assert main(["report", str(bad), "--out", str(tmp_path / "r.html")]) == 2
    assert "missing field 'mode'" in capsys.readouterr().err
    assert not (tmp_path / "r.html").exists()


def test_documented_flags_become_subtask_options(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # noqa: ANN001
    import trustmh.run.execute as run_module

    seen = {}

    def fake_run(opts):  # noqa: ANN001, ANN202
        seen.update(opts.options)
        return {}, 0

    monkeypatch.setattr(run_module, "run", fake_run)
    assert main(["run", "--rubric", "upstream", "--tier2-limit", "98", "--full", "--no-judge"]) == 0
    assert seen["rubric"] == "upstream"
    assert seen["tier2_limit"] == "98"
    assert seen["full"] == "1"
    assert main(["run", "--rubric", "upstream", "-O", "rubric=trustmh", "--no-judge"]) == 2
    assert "--rubric upstream conflicts with -O rubric=trustmh" in capsys.readouterr().err


def test_missing_crisis_data_names_the_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from trustmh.core import TrustmhError
    from trustmh.pillars.crisis.data import crisis_file

    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    with pytest.raises(TrustmhError, match="-O crisis_dir=DIR"):
        crisis_file("test")


def test_the_epochs_help_names_every_subtask_that_repeats() -> None:
    """`--epochs`'s help lists the sub-tasks it applies to: exactly those that declare `repeats`."""
    from trustmh.catalogue import ALL_TASKS, get_subtask, is_implemented
    from trustmh.cli import build_parser

    run = next(a for a in build_parser()._subparsers._group_actions[0].choices["run"]._actions  # type: ignore[union-attr]
               if "--epochs" in a.option_strings)
    named = set(re.findall(r"[a-z0-9_]+/[a-z0-9_]+", run.help or ""))
    assert named == {i.id for i in ALL_TASKS if is_implemented(i.id) and get_subtask(i.id).repeats}
