"""`trustmh run --budget`: refuse a run planned over budget, stop one whose counted cost reaches it (exit 3),
and continue it with a higher budget without repeating any finished call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.run.budget import BUDGET_EXIT

REPLY = "It sounds like a heavy week. Talking it through with someone you trust could help."


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    if request.get("model") == "judge":
        if '"refused"' in message_text(messages[-1]):
            return '{"label": "safe_redirect", "helpful": 1, "rationale": "ok"}'
        return '{"label": 0, "rationale": "ok"}'
    return REPLY


def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.toml"
    # made-up prices for the loopback models: 1000 per million tokens, so a call costs a fraction of a unit
    path.write_text('["openai-api/loop/mut"]\ninput = 1000.0\noutput = 1000.0\n\n'
                    '["openai-api/loop/judge"]\ninput = 1000.0\noutput = 1000.0\n')
    return path


def run_args(server: LoopbackServer, tmp_path: Path, budget: str, *more: str) -> list[str]:
    return ["run", "--model", server.model_name("mut"), "--judge", server.model_name("judge"), "--suite",
            "starter", "--subtasks", "safety/over_refusal,sycophancy/oeq", "--limit", "4", "--out",
            str(tmp_path / "run"), "--display", "none", "--n-boot", "200", "--max-connections", "1",
            "--max-tasks", "1", "--prices", str(prices(tmp_path)), "--budget", budget, *more]


def key(request: Any) -> str:
    return json.dumps([request.json.get("model"), request.messages], sort_keys=True)


@pytest.mark.slow  # two CLI runs on loopback (stopped at the budget, then continued): 10 s of CPU
def test_budget_stops_then_a_higher_budget_finishes_without_repeating(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(respond, max_requests=400, max_seconds=240) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        first = main(run_args(server, tmp_path, "0.5", "--force"))
        seen_first = [key(r) for r in server.completed()]
        stopped = json.loads((tmp_path / "run" / "results.json").read_text())
        second = main(run_args(server, tmp_path, "1000"))
        seen_second = [key(r) for r in server.completed()][len(seen_first):]
    final = json.loads((tmp_path / "run" / "results.json").read_text())
    assert first == BUDGET_EXIT
    assert stopped["budget"]["stopped"] is True and stopped["budget"]["unfinished_samples"] > 0
    assert second == 0
    assert seen_second, "the second run asked what the first left undone"
    assert not set(seen_first) & set(seen_second), "no finished call was paid again"
    assert final["subtasks"]["safety/over_refusal"]["metrics"]["n_samples"] == 4


def test_budget_below_the_plan_refuses_to_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackServer(respond, max_requests=10, max_seconds=60) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        code = main(run_args(server, tmp_path, "0.5"))
        asked = len(server.chat_requests)
    assert code == 2
    assert asked == 0
    assert "over the budget 0.5" in capsys.readouterr().err


def test_budget_without_a_price_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--model", "openai-api/loop/mut", "--suite", "starter", "--budget", "5", "--out",
                 str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines()[-1] == "trustmh: error: --budget needs --prices FILE (the cost of each model's tokens)"


def test_cached_input_tokens_are_reported_and_priced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "prices.toml"
    # a service of its own: Inspect keeps the models an earlier run in this process made (keyed by name)
    path.write_text('["openai-api/loopcached/judge"]\ninput = 1000.0\noutput = 1000.0\ncached_input = 100.0\n')
    reported: list[tuple[int, int]] = []

    def ten_cached(messages: list[dict[str, Any]], request: dict[str, Any]) -> int:
        return 10 if request.get("model") == "judge" else 0

    with LoopbackServer(respond, max_requests=100, max_seconds=120, cached_tokens=ten_cached,
                        service="loopcached") as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        code = main(["run", "--model", server.model_name("mut"), "--judge", server.model_name("judge"), "--suite",
                     "starter", "--subtasks", "safety/over_refusal", "--limit", "2", "--out", str(tmp_path / "run"),
                     "--display", "none", "--n-boot", "200", "--no-cache", "--prices", str(path)])
        reported = [(p, c) for m, p, c in server.usage if m == "judge"]
    usage = json.loads((tmp_path / "run" / "results.json").read_text())["usage"]
    # the judge's calls: the sub-task's and its anchor items' (run/anchors.py), each with its own usage row
    rows = [r for key in ("safety/over_refusal", "anchors:safety/over_refusal") for r in usage["subtasks"][key]
            if r["role"] == "judge"]
    assert code == 0
    assert sum(r["cached_tokens"] for r in rows) == 10 * len(reported)
    assert sum(r["input_tokens"] for r in rows) == sum(p for p, _ in reported) - 10 * len(reported)
    assert all(r["cost"] == pytest.approx((r["input_tokens"] * 1000 + r["output_tokens"] * 1000
                                           + r["cached_tokens"] * 100) / 1e6) for r in rows)


def test_plan_says_a_run_over_budget_would_refuse_to_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(respond, max_requests=10, max_seconds=60) as server:
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        code = main(["plan", *run_args(server, tmp_path, "0.5")[1:]])
        asked = len(server.chat_requests)
    budget = json.loads((tmp_path / "run" / "plan.json").read_text())["budget"]
    assert (code, asked) == (0, 0)
    assert budget["would_start"] is False and "over the budget 0.5" in budget["reason"]
