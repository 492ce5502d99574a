"""The judge's model as its provider named it (`trustmh.results.reported`): a loopback judge asked for as
`judge` answers as a dated model; the run records both, per item and per sub-task, and `trustmh compare` says
when the same judge asked for answered under another name in the second run (a provider's alias update)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.results.compare import compare_lines, compare_runs

ASKED = "openai-api/loop/judge"
SID = "ethics/ethical_reasoning"


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    if "sc1" in message_text(messages[-1]):  # the ethics judge
        return '{"sc1": 4, "sc2": 4, "sc3": 5, "sc4": 3, "sc5": 4, "sc1_reason": "ok"}'
    return '{"choice": "A", "reasoning": "Synthetic reasoning."}'


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reported") / "run"
    mp = pytest.MonkeyPatch()
    try:
        with LoopbackServer(respond, answers_as={"judge": "judge-2026-12-01"}, max_requests=40,
                            max_seconds=120) as server:
            for key, value in server.env().items():
                mp.setenv(key, value)
            assert main(["run", "--model", server.model_name("product"), "--judge", ASKED, "--subtasks",
                         "ethical_reasoning", "--limit", "2", "--out", str(out), "--display", "none",
                         "--n-boot", "200", "-O", "anchors=0"]) == 0
    finally:
        mp.undo()
    return out


def test_results_record_the_judge_asked_beside_the_name_it_answered_as(run_dir: Path) -> None:
    results = json.loads((run_dir / "results.json").read_text())
    assert results["judges_reported"] == {SID: {ASKED: {"judge-2026-12-01": 2}}}


def test_each_item_keeps_its_judge_calls_answering_name(run_dir: Path) -> None:
    rows = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert [r["metadata"]["judge_reported"] for r in rows] == [{ASKED: {"judge-2026-12-01": 1}}] * 2


def _results(reported: dict[str, dict[str, int]] | None) -> dict[str, Any]:
    sub = {"value": 0.5, "judge": {"model": ASKED}}
    return {"subtasks": {SID: sub}, **({"judges_reported": {SID: reported}} if reported else {})}


def test_compare_says_the_judges_answering_model_changed() -> None:
    rows = compare_runs(_results({ASKED: {"judge-2026-06-01": 9}}), _results({ASKED: {"judge-2026-12-01": 9}}))
    assert "judge answered as judge-2026-06-01 in A and judge-2026-12-01 in B" in compare_lines(rows)[0]


def test_compare_says_nothing_when_the_judge_answered_under_the_same_name() -> None:
    rows = compare_runs(_results({ASKED: {"judge-2026-12-01": 9}}), _results({ASKED: {"judge-2026-12-01": 4}}))
    assert "judge_reported_change" not in rows[0]


def test_compare_of_runs_without_the_names_says_nothing_of_them() -> None:
    assert "judge_reported_change" not in compare_runs(_results(None), _results({ASKED: {"x": 1}}))[0]
