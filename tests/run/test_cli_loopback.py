"""`trustmh run --model openai-api/<name>/<model>` against a loopback OpenAI-compatible server: the same
files as any run, the judge bound to temperature 0 and the seed, and bounded retries through a 429."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.judges.certificates import fingerprint_of


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "sc1" in text:  # the ethics judge
        return '```json\n{"sc1": 4, "sc2": 4, "sc3": 5, "sc4": 3, "sc5": 4, "sc1_reason": "ok"}\n```'
    if "Scenario:" in text:  # the ethics question
        return '```json\n{"choice": "A", "reasoning": "Synthetic reasoning."}\n```'
    return "Answer: A"


def test_run_against_loopback_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    with LoopbackServer(respond, fail_first=1, max_requests=120, max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        code = main(["run", "--model", server.model_name("model-under-test"), "--judge",
                     server.model_name("judge"), "--suite", "trustmh", "--subtasks",
                     "knowledge,ethical_reasoning", "--limit", "3", "--seed", "11", "--out", str(out),
                     "--display", "none", "--n-boot", "200", "--max-retries", "2", "--timeout", "30"])
        requests = list(server.chat_requests)
    assert code == 0
    for name in ("results.json", "results.csv", "report.html", "items.jsonl"):
        assert (out / name).is_file(), name
    results = json.loads((out / "results.json").read_text())
    assert results["model"] == "openai-api/loop/model-under-test"
    knowledge = results["subtasks"]["reliability/knowledge"]
    assert knowledge["status"] == "ok"
    assert knowledge["n"] == 3
    assert knowledge["n_invalid"] == 0
    ethics = results["subtasks"]["ethics/ethical_reasoning"]
    assert ethics["metrics"]["sc1"] == pytest.approx(4.0)
    assert ethics["metrics"]["sc3"] == pytest.approx(5.0)
    judge = dict(ethics["judge"])
    fingerprint = judge.pop("fingerprint")
    settings = judge.pop("fingerprint_settings")
    assert len(judge.pop("anchors")) == 20, "the judge's verdicts on its anchor items, recorded without a certificate"
    assert fingerprint == fingerprint_of(settings), "the judge's fingerprint is the sha256 of the settings recorded"
    assert settings["subtask"] == "ethics/ethical_reasoning"
    assert judge == {"model": "openai-api/loop/judge", "validated": False,
                     "same_family": {"openai-api/loop/judge": False}}
    assert requests[0].status == 429, "the first request was refused, and the run still succeeded"
    judge_calls = [r for r in requests if r.json.get("model") == "judge" and r.status == 200
                   and not r.judges_an_anchor]
    assert len(judge_calls) == 3
    assert all(r.json["temperature"] == 0 and r.json["seed"] == 11 for r in judge_calls)
    assert "loopback-test-key" not in (out / "results.json").read_text()
    assert "loopback-test-key" not in (out / "report.html").read_text()


@pytest.mark.slow
def test_dead_endpoint_fails_fast_and_exits_nonzero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        raise RuntimeError("server-side failure")

    with LoopbackServer(never, max_requests=40, max_seconds=90) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        code = main(["run", "--model", server.model_name("m"), "--suite", "trustmh", "--subtasks", "knowledge",
                     "--limit", "1", "--out", str(tmp_path), "--display", "none", "--max-retries", "0",
                     "--timeout", "5", "--no-judge"])
    assert code == 5  # incomplete: the run finished, a sub-task errored
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["errors"]
