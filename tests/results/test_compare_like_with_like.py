"""Issue 53.3: `trustmh compare` compares like with like: a shard, an unmerged --workers folder, runs scored with
different rubric versions and runs on different data or conversation sets are each refused with one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main
from trustmh.results.compare import like_with_like

SUB = {"value": 0.5, "status": "ok", "direction": "higher", "n": 3}


def results(**more: Any) -> dict[str, Any]:
    return {"model": "m", "mode": "default", "subtasks": {"ethics/ethical_reasoning": dict(SUB)},
            "options": {}, "datasets": {"ethics": {"e.csv": "a" * 64}}, **more}


def test_two_whole_runs_on_the_same_data_compare() -> None:
    assert like_with_like(results(), results(), "A", "B") is None


def test_a_shard_is_refused_naming_it_and_merge() -> None:
    why = like_with_like(results(), results(shard=[0, 2]), "A", "sh0")
    assert why is not None and why.startswith("sh0: the results of shard 0/2") and "trustmh merge" in why


def test_different_rubric_versions_are_refused_naming_the_subtask() -> None:
    why = like_with_like(results(rubric_version="1"), results(rubric_version="2"), "A", "B")
    assert why == ("ethics/ethical_reasoning: scored with rubric version '1' in A and '2' in B; compare runs "
                   "scored with one rubric (rescore one of them)")


def test_a_subtasks_own_rubric_version_counts_over_the_runs() -> None:
    b = results()
    b["subtasks"]["ethics/ethical_reasoning"]["rubric_version"] = "2"
    assert like_with_like(results(rubric_version="1"), b, "A", "B") is not None


def test_own_conversation_sets_against_the_shipped_ones_are_refused() -> None:
    why = like_with_like(results(), results(options={"sets": "/team/sets"}), "A", "B")
    assert why == ("different conversation sets: -O sets=(shipped) in A, -O sets=/team/sets in B; compare runs "
                   "of the same conversation sets")


def test_a_dataset_file_with_another_hash_is_refused_naming_it() -> None:
    why = like_with_like(results(), results(datasets={"ethics": {"e.csv": "b" * 64}}), "A", "B")
    assert why is not None and why.startswith("dataset ethics: e.csv differs between A and B")


def _write(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


def test_the_compare_command_refuses_a_shard_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _write(tmp_path / "a", results()), _write(tmp_path / "sh0", results(shard=[0, 2]))
    assert main(["compare", str(a), str(b)]) == 2


def test_the_compare_command_refuses_an_unmerged_workers_folder(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    a = _write(tmp_path / "a", results())
    (tmp_path / "w" / "workers" / "0").mkdir(parents=True)
    main(["compare", str(a), str(tmp_path / "w")])
    assert "a --workers run whose shards were not merged" in capsys.readouterr().err
