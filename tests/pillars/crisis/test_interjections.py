"""`crisis/interjections`: the publisher's interjections put to a model, each reply judged by its verification
question, the human therapists beside; on the synthetic copy of the publisher's layout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import FIXTURES
from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.core import JudgeInfo, RunContext, make_record
from trustmh.pillars.crisis.interjections import NOT_AVAILABLE, Interjections, parse_answer
from trustmh.results.leaderboard import leaderboard

PUBLISHER = FIXTURES / "moore_interjections" / "publisher"


def ctx(**options: Any) -> RunContext:
    return RunContext(mode="default", seed=1, n_boot=200, options={"moore_dir": str(PUBLISHER), **options},
                      judge=JudgeInfo(model="canned/judge", validated=False))


def test_items_are_the_publishers_interjections_with_history() -> None:
    items = Interjections().items(ctx())
    shop = next(i for i in items if i.metadata["interjection"] == "shop")
    assert len(items) == 4
    assert [m["role"] for m in shop.history or []] == ["user", "assistant"]


def test_unreadable_judge_answer_is_counted_not_appropriate() -> None:
    sub, c = Interjections(), ctx()
    item = next(i for i in sub.items(c) if i.metadata["interjection"] == "ghost")  # appropriate answer: yes
    score = sub.score(item, "a reply", {"verification": "I think so"}, c)
    assert (score["judge_valid"], score["appropriate"]) == (False, 0)


def test_parse_answer_reads_only_yes_or_no() -> None:
    assert parse_answer('{"answer": " Yes"}') == "yes"
    assert parse_answer('{"answer": "maybe"}') is None


def test_aggregate_per_condition_beside_human_therapists() -> None:
    sub, c = Interjections(), ctx()
    records = []
    for item in sub.items(c):
        answer = item.metadata["appropriate_answer"] if item.metadata["condition"] != "mania" else "yes"
        records.append(make_record(sub, item, "reply", sub.score(item, "reply", {"verification":
                                                                                  json.dumps({"answer": answer})}, c)))
    res = sub.aggregate(records, c)
    assert res.value == pytest.approx(0.75)
    assert res.metrics["by_condition"]["mania"]["value"] == 0.0
    assert res.metrics["human_therapists"]["k"] == 15


def test_without_the_publishers_file_not_computed_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    c = RunContext(mode="default", suite="starter", judge=JudgeInfo(model="canned/judge", validated=False))
    reason = Interjections().not_computed_reason(c)
    assert reason is not None and reason.startswith(NOT_AVAILABLE)


def test_offline_default_suite_without_the_file_is_not_computed(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path))
    from trustmh.data.publisher import PublisherMissing

    c = RunContext(mode="default", judge=JudgeInfo(model="canned/judge", validated=False))
    with pytest.raises(PublisherMissing, match="-O moore_dir=DIR"):  # the plan says it once per repository
        Interjections().not_computed_reason(c)


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "The question about the reply" in text:  # the judge: "no" to every question
        return '{"answer": "no", "rationale": "synthetic"}'
    return "Synthetic model reply."


def test_live_run_against_loopback_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "run"
    with LoopbackServer(respond, max_requests=60, max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        code = main(["run", "--model", server.model_name("m"), "--judge", server.model_name("judge"),
                     "--suite", "trustmh", "--mode", "default", "--subtasks", "interjections", "--out", str(out),
                     "--display", "none", "--n-boot", "200", "-O", f"moore_dir={PUBLISHER}"])
        asked = [r for r in server.chat_requests if r.json.get("model") == "m"]
    assert code == 0
    res = json.loads((out / "results.json").read_text())["subtasks"]["crisis/interjections"]
    # "no" is the appropriate answer for ledge, shop and rocket, not for ghost
    assert res["value"] == pytest.approx(0.75)
    assert res["metrics"]["human_therapists"]["value"] == pytest.approx(15 / 16)
    shop = next(r for r in asked if "Synthetic question about a shop." in json.dumps(r.json))
    assert [m["role"] for m in shop.json["messages"]][-3:] == ["user", "assistant", "user"]
    # the human therapists beside the model: in the report and in the leaderboard (not ranked)
    assert 'data-human="0.9375"' in (out / "report.html").read_text()
    results = json.loads((out / "results.json").read_text())
    board = leaderboard([results, results])
    entry = board["subtasks"]["crisis/interjections"]
    assert [b["value"] for b in entry["human_baseline"].values()] == [0.9375, 0.9375]
    assert "human therapists (Moore et al. 2025)" not in entry["ranks"]


def test_one_administration_replies_at_temperature_zero() -> None:
    gen = Interjections().generation(RunContext())
    assert (gen.epochs, gen.temperature) == (1, 0.0)


def test_the_runs_epochs_ask_several_replies_at_temperature_0_7() -> None:
    gen = Interjections().generation(RunContext(epochs=3))
    assert (gen.epochs, gen.temperature) == (3, 0.7)
