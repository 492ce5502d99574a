"""`trustmh plan` against what a run really asks: a canned multi-pillar run on the loopback server, counted
with the plan's own tokenizer (the server's `usage` hook)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.pillars.conversation.designs import SETS_DIR
from trustmh.pillars.conversation.scripts import load_scripts
from trustmh.prices import load_prices
from trustmh.run.estimate import wall_time
from trustmh.run.outlook import pilot_sds
from trustmh.run.tokens import Tokenizer
from trustmh.stats.power import items_for_difference, items_for_width, wilson_width

SUBTASKS = "safety/over_refusal,crisis/crisis_escalation,reliability/emotional_support,sycophancy/oeq,conversation/gradual_disclosure"
# a reply of the model under test: plain prose near the expected length given to `plan` (not its placeholder)
# It takes up none of the person's words, so the scripted person plays on as with the plan's placeholder
# (`scripts`: `when_ignored`), and the plan's count of turns is exact.
REPLY = ("These weeks can wear anyone down, and it makes sense to feel worn out. It might help to talk "
         "with someone you trust today, and a counsellor or your doctor can offer steadier support over time. "
         "Would you like to think together about a first small step?")
EXPECT = str(len(REPLY.split()))


def judge_reply(prompt: str) -> str:
    """One JSON object every judge of these sub-tasks accepts (the empathy score varies with the item, so a
    pilot of this run has a per-item spread)."""
    if '"refused"' in prompt:
        return '{"label": "safe_redirect", "helpful": 1, "rationale": "ok"}'
    return json.dumps({"label": 0, "rationale": "ok", "appropriateness": 4, "risk_check": True,
                       "resources_offered": True, "professional_help": True, "followup": True, "explanation": "ok",
                       "empathy": 2 + len(prompt) % 3, "helpfulness": 4, "safety": 5, "fluency": 5, "risk_asked": True,
                       "resources": True, "human_escalation": True})


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    if request.get("model") == "judge":
        return judge_reply(message_text(messages[-1]))
    return REPLY


def args(server: LoopbackServer, out: Path, *more: str) -> list[str]:
    return ["--model", server.model_name("mut"), "--judge", server.model_name("judge"), "--suite", "starter",
            "--subtasks", SUBTASKS, "--limit", "2", "--out", str(out), "--n-boot", "200",
            "--expect-reply-tokens", EXPECT, *more]


def planned_by_role(plan: dict[str, Any]) -> tuple[Counter[str], Counter[str], Counter[str]]:
    calls: Counter[str] = Counter()
    calls_max: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    for sub in plan["subtasks"].values():
        for row in sub["roles"]:
            calls[row["model"]] += row["calls"]["min"]
            calls_max[row["model"]] += row["calls"]["max"]
            tokens[row["model"]] += row["input_tokens"]["min"]
    return calls, calls_max, tokens


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The canned run's plan alone (no server: a plan makes no call)."""
    mp = pytest.MonkeyPatch()
    try:
        return plan_again(tmp_path_factory.mktemp("plan-only"), mp, "--n-boot", "200", "--expect-reply-tokens", EXPECT)
    finally:
        mp.undo()


# The plan against what the run really asked: an end-to-end run of five sub-tasks on the loopback server, in
# the slow lane (docs/contributing.md#tests); the plan's own facts below are read from `planned`, no run needed.
end_to_end = pytest.mark.slow


@pytest.fixture(scope="module")
def planned_and_actual(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], LoopbackServer, Path]:
    tok = Tokenizer("openai-api/loop/mut")
    tmp = tmp_path_factory.mktemp("plan")
    mp = pytest.MonkeyPatch()
    try:
        with LoopbackServer(respond, max_requests=400, max_seconds=240, prompt_tokens=tok.prompt_tokens,
                            completion_tokens=tok.count) as server:
            for key, value in server.env().items():
                mp.setenv(key, value)
            assert main(["plan", *args(server, tmp / "plan")]) == 0
            assert not server.chat_requests, "plan made no model call"
            code = main(["run", *args(server, tmp / "run"), "--display", "none"])
        assert code == 0
    finally:
        mp.undo()
    return json.loads((tmp / "plan" / "plan.json").read_text()), server, tmp / "run"


def plan_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *more: str) -> dict[str, Any]:
    """`trustmh plan` of the canned run with more arguments (no server: plan makes no call)."""
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOOP_API_KEY", "unused")
    cli = ["plan", "--model", "openai-api/loop/mut", "--judge", "openai-api/loop/judge", "--suite", "starter",
           "--subtasks", SUBTASKS, "--limit", "2", "--out", str(tmp_path / "again"), *more]
    assert main(cli) == 0
    return json.loads((tmp_path / "again" / "plan.json").read_text())


@end_to_end
def test_plan_predicts_calls_per_role_exactly(planned_and_actual: Any) -> None:
    plan, server, _ = planned_and_actual
    calls, _, _ = planned_by_role(plan)
    # the judge's anchor items (docs/judge-probes.md#drift)
    calls.update({m: f["calls"] for m, f in plan.get("anchors", {}).get("by_model", {}).items()})
    actual = Counter("openai-api/loop/" + str(r.json["model"]) for r in server.completed())
    assert dict(calls) == dict(actual)


@end_to_end
def test_plan_predicts_input_tokens_within_5_percent(planned_and_actual: Any) -> None:
    plan, server, _ = planned_and_actual
    _, _, tokens = planned_by_role(plan)
    tokens.update({m: f["input_tokens"] for m, f in plan.get("anchors", {}).get("by_model", {}).items()})
    actual: Counter[str] = Counter()
    for model, prompt, _completion in server.usage:
        actual["openai-api/loop/" + model] += prompt
    for model, n in actual.items():
        assert tokens[model] == pytest.approx(n, rel=0.05), model


def test_plan_maximum_allows_every_judge_reask(planned: dict[str, Any]) -> None:
    plan = planned
    calls, calls_max, _ = planned_by_role(plan)
    assert calls_max["openai-api/loop/judge"] == 3 * calls["openai-api/loop/judge"]


@end_to_end
def test_results_carry_actual_usage_beside_the_plan(planned_and_actual: Any) -> None:
    plan, server, run_dir = planned_and_actual
    usage = json.loads((run_dir / "results.json").read_text())["usage"]
    judge_rows = [row for rows in usage["subtasks"].values() for row in rows if row["role"] == "judge"]
    assert sum(r["calls"] for r in judge_rows) == sum(1 for r in server.completed() if r.json["model"] == "judge")
    # the anchor items' calls (docs/judge-probes.md#drift) are in the usage, planned in the plan's anchors
    assert all("planned" in row for sid, rows in usage["subtasks"].items() if not sid.startswith("anchors:")
               for row in rows if row["role"] == "judge")
    assert usage["totals"]["input_tokens"] == sum(p for _, p, _ in server.usage)


@end_to_end
def test_results_csv_has_usage_rows(planned_and_actual: Any) -> None:
    _, _, run_dir = planned_and_actual
    assert "usage:judge:openai-api/loop/judge:calls" in (run_dir / "results.csv").read_text()


def test_unknown_model_price_is_reported_as_unknown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai-api/loop/judge"]\ninput = 1.0\noutput = 2.0\n')
    with LoopbackServer(respond, max_requests=5, max_seconds=60) as server:
        code = main(["plan", *args(server, tmp_path / "p"), "--prices", str(prices)])
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    rows = [r for sub in plan["subtasks"].values() for r in sub["roles"]]
    assert code == 0
    assert {r["cost"] for r in rows if r["model"].endswith("/mut")} == {"price unknown"}
    assert all(isinstance(r["cost"]["expected"], float) for r in rows if r["model"].endswith("/judge"))
    assert plan["totals"]["cost"]["expected"] is None
    assert plan["totals"]["cost"]["price_unknown"] == ["openai-api/loop/mut"]
    assert "price unknown for openai-api/loop/mut" in capsys.readouterr().out


def test_bad_price_file_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai/gpt-x"]\ninput = 1.0\n')
    assert main(["plan", "--prices", str(prices)]) == 2
    assert "model 'openai/gpt-x': field 'output' is missing" in capsys.readouterr().err


def test_power_formulas() -> None:
    # a rate of 0.5 within +-0.05 (width 0.1) needs 385 items; detecting 0.1 between two models at 80% power
    # (two-sided alpha 0.05, SD 0.5) needs 393 per model
    assert items_for_width(0.5, 0.1) == 385
    assert items_for_difference(0.5, 0.1) == 393
    assert wilson_width(0.5, 385) == pytest.approx(0.0997, abs=1e-3)


@end_to_end
def test_report_shows_usage(planned_and_actual: Any) -> None:
    _, _, run_dir = planned_and_actual
    html = (run_dir / "report.html").read_text()
    assert 'id="usage"' in html and "openai-api/loop/judge" in html


def gate_row(plan: dict[str, Any], check_id: str) -> dict[str, Any]:
    return next(row for row in plan["gate"]["checks"] if row["id"] == check_id)


def test_gate_outlook_counts_items_against_min_n(planned: dict[str, Any]) -> None:
    plan = planned
    row = gate_row(plan, "over_refusal")
    assert (row["items"], row["min_n"], row["decidable"]) == (2, 30, False)


def test_gate_outlook_gives_the_expected_interval_width(planned: dict[str, Any]) -> None:
    plan = planned
    row = gate_row(plan, "over_refusal")  # its limit, 0.7, is the stated rate
    assert row["width"] == pytest.approx(wilson_width(0.7, 2))


def test_gate_outlook_names_a_check_whose_sub_task_is_not_run(planned: dict[str, Any]) -> None:
    plan = planned
    row = gate_row(plan, "privacy_leak_rate")
    assert (row["decidable"], row["reason"]) == (False, "sub-task not in this run")


def test_power_is_capped_by_the_items_available(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_again(tmp_path, monkeypatch, "--target-width", "0.1", "--detect-difference", "0.1")
    row = plan["power"]["conversation/gradual_disclosure"]
    assert row["available_items"] < 385
    assert row["target_width"] == {"width": 0.1, "items_needed": 385, "capped": True,
                                   "items": row["available_items"]}
    assert row["detect_difference"]["items"] == row["available_items"]


@end_to_end
def test_power_uses_a_pilot_runs_variance(planned_and_actual: Any, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, run_dir = planned_and_actual
    plan = plan_again(tmp_path, monkeypatch, "--target-width", "0.5", "--pilot", str(run_dir))
    sd, _ = pilot_sds(run_dir)["reliability/emotional_support"]
    assert plan["power"]["reliability/emotional_support"]["target_width"]["items_needed"] == items_for_width(sd, 0.5)


@end_to_end
def test_a_pilot_without_spread_falls_back_to_the_stated_rate(planned_and_actual: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _, _, run_dir = planned_and_actual  # every crisis escalation item was judged the same
    plan = plan_again(tmp_path, monkeypatch, "--target-width", "0.2", "--pilot", str(run_dir))
    assert plan["power"]["crisis/crisis_escalation"]["target_width"]["items_needed"] == items_for_width(0.5, 0.2)


def test_tokenizer_says_when_it_approximates(planned: dict[str, Any]) -> None:
    plan = planned
    assert plan["assumptions"]["tokenizers"]["openai-api/loop/mut"].startswith("approximate")


def test_wall_time_spreads_calls_over_the_connections() -> None:
    assert wall_time(100, 300, 4, 10, 2.0) == {"min": 20.0, "max": 60.0}


def test_wall_time_is_never_below_one_samples_chain_of_calls() -> None:
    assert wall_time(3, 9, 3, 10, 2.0) == {"min": 6.0, "max": 6.0}


def test_example_price_file_loads() -> None:
    prices = load_prices(Path(__file__).resolve().parents[2] / "examples" / "prices.toml")
    assert prices["openai/gpt-4o-mini"].cached_input is not None


def test_an_unquoted_model_name_in_the_price_file_says_to_quote_it(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('[openai.gpt-4o]\ninput = 1.0\noutput = 2.0\n')
    assert main(["plan", "--prices", str(prices)]) == 2
    assert 'quote a model name that has "/" or ".", e.g. ["openai/gpt-4o"]' in capsys.readouterr().err


def test_a_pilot_that_is_not_a_run_names_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOOP_API_KEY", "unused")
    code = main(["plan", "--model", "openai-api/loop/mut", "--suite", "starter", "--subtasks", "safety/over_refusal",
                 "--target-width", "0.1", "--pilot", str(tmp_path / "nowhere")])
    assert code == 2
    assert f"error: --pilot {tmp_path / 'nowhere'}: not a finished run directory" in capsys.readouterr().err


def test_a_plan_without_prices_says_the_cost_is_not_estimated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    plan_again(tmp_path, monkeypatch)
    assert "cost not estimated (no --prices FILE)" in capsys.readouterr().out


@end_to_end
def test_results_csv_has_the_planned_range_beside_the_actual(planned_and_actual: Any) -> None:
    _, _, run_dir = planned_and_actual
    assert "usage:judge:openai-api/loop/judge:planned_calls_max" in (run_dir / "results.csv").read_text()


@end_to_end
def test_report_shows_the_planned_range_beside_the_actual(planned_and_actual: Any) -> None:
    plan, _, run_dir = planned_and_actual
    calls = next(r["calls"] for r in plan["subtasks"]["safety/over_refusal"]["roles"] if r["role"] == "judge")
    row = re.search(r"<tr><td>safety/over_refusal</td><td>judge</td>.*?</tr>", (run_dir / "report.html").read_text())
    assert row is not None and f"{calls['min']}–{calls['max']}" in row.group(0)


def test_gate_outlook_sizes_the_missed_crisis_check_on_risk_conversations(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The missed-crisis rate is over conversations with risk: the no-risk controls do not narrow its interval."""
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOOP_API_KEY", "unused")
    assert main(["plan", "--model", "openai-api/loop/mut", "--judge", "openai-api/loop/judge", "--subtasks",
                 "conversation/gradual_disclosure", "--out", str(tmp_path / "full")]) == 0
    plan = json.loads((tmp_path / "full" / "plan.json").read_text())
    scripts = load_scripts(SETS_DIR / "gradual_disclosure.json")
    row = gate_row(plan, "conversation_missed_crisis")
    assert plan["subtasks"]["conversation/gradual_disclosure"]["items"] == len(scripts)
    assert row["items"] == sum(1 for s in scripts if s.risk_turn is not None) < len(scripts)
    # sized on its clusters (the design cell joined with the stimulus), not on the conversations one by one
    assert row["width"] == pytest.approx(wilson_width(0.1, row["effective_n"]))


@end_to_end  # three sets replayed and six checks sized: 4 s of CPU (the fast lane's cells: test_plan_stimuli.py)
def test_plan_shows_each_conversation_checks_clusters_on_the_design_cell(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conversation check of the default policy, the controls' too, is sized on its design-cell clusters."""
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOOP_API_KEY", "unused")
    assert main(["plan", "--model", "openai-api/loop/mut", "--judge", "openai-api/loop/judge", "--subtasks",
                 "conversation/gradual_disclosure,conversation/delusion,conversation/multiturn_jailbreak",
                 "--out", str(tmp_path / "p")]) == 0
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    ids = ("conversation_missed_crisis", "conversation_false_alarm", "conversation_jailbreak",
           "conversation_delusion_confirmation", "conversation_over_refusal", "conversation_over_challenge")
    assert all("design cell" in gate_row(plan, cid)["width_basis"] for cid in ids)
