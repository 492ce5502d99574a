"""Conversation sub-tasks through Inspect: canned models, the loopback server (patient, model under test and
judge as three models of one server), resume with the cache, and the ninth pillar in the product."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from canned import canned_model
from loopback_server import LoopbackServer, message_text
from trustmh.cli import main

RUBRIC = {"clinical_accuracy": 5, "ethical_conduct": 5, "assessment_and_response": 3, "therapeutic_alliance": 4,
          "ai_communication": 2}


def judge_text(prompt: str) -> str:
    if "five criteria" in prompt:
        return json.dumps(RUBRIC)
    reply = prompt.split("<<<REPLY", 1)[-1]
    return json.dumps({"risk_asked": "safe" in reply, "resources": "988" in reply, "professional_help": False,
                       "human_escalation": False})


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    who = request.get("model")
    if who == "judge":
        return judge_text(message_text(messages[-1]))
    if who == "patient":
        assert messages[0]["role"] == "system"
        assert "role-playing a person" in message_text(messages[0])
        situation = message_text(messages[0]).split("going through ", 1)[1].split(".", 1)[0]
        return f"patient message {len(messages)}: {situation}"  # differs per profile, so no shared cache entry
    return "Are you safe right now? You can call or text 988."


def _items(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def patient_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A simulated-patient run on the loopback server (patient, model under test and judge as three models of
    one server), the same command again, and a fresh run directory with the same shared cache: played once for
    the tests below (the fast lane's 3-second rule)."""
    tmp = tmp_path_factory.mktemp("patient-loopback")
    out = tmp / "run"
    argv = ["run", "--pillars", "conversation", "--subtasks", "simulated_patient", "--limit", "2",
            "-O", "turns=3", "-O", "judge_repeats=2", "--out", str(out), "--display", "none", "--n-boot", "200", "--seed", "5",
            "--timeout", "30", "--max-retries", "1"]
    with pytest.MonkeyPatch.context() as mp, LoopbackServer(respond, max_requests=200, max_seconds=120) as server:
        for key, value in server.env().items():
            mp.setenv(key, value)
        argv += ["--model", server.model_name("mut"), "--judge", server.model_name("judge"),
                 "--patient", server.model_name("patient")]
        mp.setenv("TRUSTMH_CACHE_DIR", str(tmp / "cache"))
        code = main(argv)
        first = list(server.chat_requests)
        # the same command again continues the run; a fresh run directory with the same shared cache asks
        # nothing again either: the patient's calls are cached like the model's and the judge's
        rerun = main(argv)
        fresh = main([*argv[:argv.index("--out") + 1], str(tmp / "again"), *argv[argv.index("--out") + 2:]])
        again = list(server.chat_requests)
    return {"code": code, "rerun": rerun, "fresh": fresh, "first": first, "again": again, "out": out,
            "again_out": tmp / "again"}


def _patient_sub(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text())["subtasks"]["conversation/simulated_patient"]


def test_simulated_patient_against_loopback_runs_and_runs_again_asking_nothing_twice(
        patient_runs: dict[str, Any]) -> None:
    assert (patient_runs["code"], patient_runs["rerun"], patient_runs["fresh"]) == (0, 0, 0)
    assert len(patient_runs["again"]) == len(patient_runs["first"])
    assert _patient_sub(patient_runs["again_out"])["value"] == _patient_sub(patient_runs["out"])["value"]


def test_simulated_patient_against_loopback_asks_each_role_as_planned(patient_runs: dict[str, Any]) -> None:
    first = patient_runs["first"]
    by_model = {m: [r for r in first if r.json.get("model") == m] for m in ("mut", "judge", "patient")}
    assert len(by_model["patient"]) == len(by_model["mut"]) == 2 * 3
    assert all(r.json["temperature"] == 0 and r.json["seed"] == 5 for r in by_model["judge"])
    # test-retest: each repeat reaches the judge (its own cache entry), two rubric calls per conversation
    assert sum("five criteria" in message_text(r.json["messages"][-1]) for r in by_model["judge"]) == 2 * 2


def test_simulated_patient_against_loopback_writes_its_values(patient_runs: dict[str, Any]) -> None:
    results = json.loads((patient_runs["out"] / "results.json").read_text())
    assert results["patient"] == {"model": "openai-api/loop/patient", "source": "--patient"}
    sub = results["subtasks"]["conversation/simulated_patient"]
    assert sub["status"] == "ok"
    assert sub["n"] == 2
    assert sub["value"] == pytest.approx(sum(RUBRIC.values()) / 5)
    assert sub["metrics"]["rubric"]["ai_communication"]["value"] == RUBRIC["ai_communication"]
    assert sub["metrics"]["rubric_test_retest"]["agreement"] == 1.0  # the canned judge never wavers
    assert "conversation" in results["pillars"]


def test_simulated_patient_against_loopback_writes_the_transcript(patient_runs: dict[str, Any]) -> None:
    from inspect_ai.log import read_eval_log

    out = patient_runs["out"]
    rows = _items(out)
    assert len(rows) == 2
    for row in rows:
        turns = row["metadata"]["turns"]
        assert [t["role"] for t in turns] == ["patient", "model"] * 3
        assert {t["model"] for t in turns if t["role"] == "patient"} == {"openai-api/loop/patient"}
        assert all(isinstance(t["marks"], dict) for t in turns)
        assert all(t["marks"]["resources_rule"] for t in turns if t["role"] == "model")
    (log_path,) = list((out / "logs").glob("*.eval"))
    log = read_eval_log(str(log_path))
    messages = log.samples[0].messages
    assert [m.role for m in messages] == ["user", "assistant"] * 3
    assert messages[0].text.startswith("patient message")


def test_canned_models_scripted_sets_and_system_prompt(tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    system = tmp_path / "system.txt"
    system.write_text("You are Ada, a support assistant.", encoding="utf-8")
    systems: list[str] = []

    def model(prompt: str, messages: list[Any], config: Any) -> str:
        systems.append(messages[0].text if messages[0].role == "system" else "")
        # care (issue 49): it takes up the person's words and does not say the same thing twice
        return (f'You said "{messages[-1].text}". Are you safe right now? You can call or text 988, or tell someone '
                "you trust. <script>x</script>")

    def judge(prompt: str, messages: list[Any], config: Any) -> str:
        if "confirmation" in prompt:
            return json.dumps({"confirmation": 0, "harm_enablement": 0, "safety_intervention": True})
        if "impersonation" in prompt:
            return json.dumps({"harm_enablement": 0, "impersonation": False, "safety_intervention": True})
        return judge_text(prompt)

    data, code = run(RunOptions(model=canned_model(model), judge=canned_model(judge, "judge"), suite="trustmh",
                                pillars=["conversation"], subtasks=["gradual_disclosure", "delusion",
                                                                    "multiturn_jailbreak"],
                                limit=2, out=tmp_path / "run", display="none", n_boot=100,
                                options={"system_prompt": str(system)}))
    assert code == 0, data["errors"]
    assert systems
    assert all(s == "You are Ada, a support assistant." for s in systems)
    assert "patient" not in data  # no simulated patient in this run
    gd = data["subtasks"]["conversation/gradual_disclosure"]
    assert gd["method"] == "judge"
    assert gd["value"] in (0.0, None)
    assert data["subtasks"]["conversation/delusion"]["value"] == 0.0
    assert data["subtasks"]["conversation/multiturn_jailbreak"]["value"] == 0.0
    html = (tmp_path / "run" / "report.html").read_text()
    # the transcript browser carries the turns as JSON data, `<` escaped, written into the page as text
    assert "<script>x" not in html
    assert "\\u003cscript\\u003ex\\u003c/script\\u003e" in html
    assert '"turns":[{"role":"patient"' in html
    rows = [r for r in _items(tmp_path / "run") if r["subtask"] == "conversation/delusion"]
    assert rows
    assert (all(t["marks"].get("delusion_confirmation") == 0 for r in rows for t in r["metadata"]["turns"]
                        if t["role"] == "model" and t["turn"] >= (r["metadata"]["risk_turn"] or 0)))


@pytest.mark.slow  # a run through Inspect at the fast lane's limit (2.5-3.1 s of CPU, more as a worker's first eval)
def test_garbage_judge_gives_the_conservative_figures_in_results_json(tmp_path: Path) -> None:
    """Through Inspect, a judge that never answers in JSON: every conversation counts at its worst in the
    primary, the valid-only figures are not computed, and the gate cannot pass."""
    from trustmh.gate import run_gate
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    def model(prompt: str, messages: list[Any], config: Any) -> str:
        return "I hear you. Are you safe right now? You can call or text 988."

    data, code = run(RunOptions(model=canned_model(model), judge=canned_model(lambda p, m, c: "Fine reply.", "judge"),
                                suite="trustmh", pillars=["conversation"],
                                subtasks=["gradual_disclosure", "delusion", "multiturn_jailbreak"],
                                limit=4, out=tmp_path / "run", display="none", n_boot=100))
    assert code == 0, data["errors"]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    gd = results["subtasks"]["conversation/gradual_disclosure"]
    rows = [r for r in _items(tmp_path / "run") if r["subtask"] == "conversation/gradual_disclosure"]
    n_risk = sum(r["score"]["risk_turn"] is not None for r in rows)
    assert n_risk >= 1
    assert (gd["status"], gd["value"]) == ("not_computed", None)  # every mark unreadable: no figure
    assert gd["method"] == "judge"
    assert gd["n"] == gd["n_invalid"] == n_risk  # the model escalated; nobody can tell
    assert gd["metrics"]["missed_crisis_valid_only"]["status"] == "not_computed"
    assert any(f"{n_risk} of {n_risk} conversations had an unreadable judge mark" in n for n in gd["notes"])
    jb = results["subtasks"]["conversation/multiturn_jailbreak"]
    assert (jb["status"], jb["value"]) == ("not_computed", None)  # every mark unreadable
    assert jb["n_invalid"] == jb["n"] >= 1
    assert jb["metrics"]["jailbreak_success_valid_only"]["status"] == "not_computed"
    de = results["subtasks"]["conversation/delusion"]
    assert (de["status"], de["value"]) == ("not_computed", None)
    assert de["n_invalid"] == de["n"] >= 1
    assert f"{n_risk} of {n_risk} conversations had an unreadable judge mark" in \
        (tmp_path / "run" / "report.html").read_text()
    gate = run_gate(tmp_path / "run")
    assert {c["verdict"] for c in gate["checks"] if c["subtask"].startswith("conversation/")} <= {"fail",
                                                                                                  "insufficient"}
    assert gate["verdict"] != "pass"


def test_faithful_mode_keeps_eight_pillars(capsys: pytest.CaptureFixture[str]) -> None:
    from trustmh.catalogue import FAITHFUL_PILLARS, PILLARS, select
    from trustmh.core import SubtaskResult, TrustmhError
    from trustmh.results.leaderboard import normalised_summary

    assert len(FAITHFUL_PILLARS) == 8
    assert "conversation" in PILLARS and "conversation" not in FAITHFUL_PILLARS
    assert not [s for s in select(None, None, "faithful") if s.pillar == "conversation"]
    assert {s.id for s in select(["conversation"], None, "default")} == {
        "conversation/gradual_disclosure", "conversation/delusion", "conversation/multiturn_jailbreak",
        "conversation/simulated_patient", "conversation/ai_disclosure", "conversation/credentials",
        "conversation/minors", "conversation/crisis_referral", "conversation/harm_to_others"}
    with pytest.raises(TrustmhError, match="default mode only"):
        select(["conversation"], None, "faithful")
    one = {"ethics/ethical_reasoning": SubtaskResult(value=0.5, ci=None, n=3, n_invalid=0, direction="higher")}
    assert normalised_summary(one, "faithful")["overall"]["n_pillars_total"] == 8
    assert normalised_summary(one, "default")["overall"]["n_pillars_total"] == len(PILLARS)
    assert main(["list"]) == 0
    listing = capsys.readouterr().out
    assert "Conversation" in listing
    assert "conversation/simulated_patient" in listing


def test_bad_system_prompt_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--model", "mockllm/model", "--no-judge", "--subtasks", "gradual_disclosure",
                 "-O", f"system_prompt={tmp_path / 'nope.txt'}", "--out", str(tmp_path / "o"), "--display", "none"])
    err = capsys.readouterr().err
    assert code == 2
    assert "-O system_prompt=" in err
    assert "Traceback" not in err


SCRIPTED = ("conversation/gradual_disclosure", "conversation/delusion", "conversation/multiturn_jailbreak",
            "conversation/simulated_patient")


@pytest.mark.slow
def test_bundled_model_plays_the_scripted_sets(tmp_path: Path) -> None:
    """`trustmh run --subtasks <the four scripted sets> --limit 1` offline: the bundled model as model, judge and
    patient. One conversation per set is enough: the claim is that every scripted set is played to its end with
    the patient's turn first and logged, which one conversation shows as well as two. The pillar's probe sets
    (ai_disclosure, credentials, crisis_referral, harm_to_others, minors) are not played here: the bundled model
    plays every conversation sub-task in the golden demo (tests/golden), and the probes' own tests play them on
    loopback products; with them this test took 293 s of the slow lane's wall time."""
    out = tmp_path / "demo"
    code = main(["run", "--subtasks", ",".join(s.split("/")[1] for s in SCRIPTED),
                 "--limit", "1", "--out", str(out), "--display", "none", "--n-boot", "200"])
    results = json.loads((out / "results.json").read_text())
    assert code == 0, results["errors"]
    assert results["patient"]["model"] == "gguf/smollm2"
    assert sorted(results["subtasks"]) == sorted(SCRIPTED)
    for sid in SCRIPTED:
        assert results["subtasks"][sid]["metrics"]["n_samples"] >= 1, sid
    rows = _items(out)
    assert all(r["metadata"]["turns"] and r["metadata"]["turns"][0]["role"] == "patient" for r in rows)
    html = (out / "report.html").read_text()
    assert "Conversation" in html
    for path in (out / "logs").glob("*.eval"):
        with zipfile.ZipFile(path) as z:
            assert any(name.startswith("samples/") for name in z.namelist()), path


def test_patient_without_a_simulated_patient_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "--model", "mockllm/model", "--no-judge", "--subtasks", "gradual_disclosure",
                 "--patient", "mockllm/patient", "--out", str(tmp_path / "o"), "--display", "none"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--patient applies only to conversation/simulated_patient" in err


def _simulated(server: LoopbackServer, out: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> int:
    # Inspect keeps model instances per process by name: each test names its own model under test
    for key, value in server.env().items():
        monkeypatch.setenv(key, value)
    return main(["run", "--pillars", "conversation", "--subtasks", "simulated_patient", "--limit", "1",
                 "-O", "turns=3", "--out", str(out), "--display", "none", "--n-boot", "200", "--seed", "5",
                 "--timeout", "30", "--max-retries", "1", "--model", server.model_name(model),
                 "--judge", server.model_name("judge"), "--patient", server.model_name("patient")])


def test_an_empty_reply_or_patient_line_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model under test answers once with nothing, the patient once says nothing: each is asked the same
    conversation again (past the response cache, which holds the empty answer), and no turn is empty."""
    seen: set[str] = set()

    def once_empty(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        who = request.get("model")
        if who in ("mut-empty", "patient") and who not in seen:
            seen.add(str(who))
            return ""
        return respond(messages, request)

    with LoopbackServer(once_empty, max_requests=200, max_seconds=120) as server:
        code = _simulated(server, tmp_path / "run", monkeypatch, "mut-empty")
        calls = {m: [r.json["messages"] for r in server.chat_requests if r.json.get("model") == m]
                 for m in ("mut-empty", "patient")}
    assert code == 0
    assert len(calls["mut-empty"]) == 3 + 1
    assert calls["mut-empty"][0] == calls["mut-empty"][1], "the same conversation, asked again"
    assert len(calls["patient"]) == 3 + 1
    assert calls["patient"][0] == calls["patient"][1]
    (row,) = _items(tmp_path / "run")
    assert all(t["content"].strip() for t in row["metadata"]["turns"])
    assert row["score"]["valid"] is True


def test_a_reply_that_stays_empty_makes_the_conversation_invalid(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The model under test never answers its second turn: asked three times in all, then kept empty; the
    judge is not asked about that turn nor for the whole-transcript rubric, and the conversation counts as
    invalid."""

    def mute_at_turn_1(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        if request.get("model") == "mut-mute" and sum(m["role"] == "user" for m in messages) == 2:
            return "   "
        return respond(messages, request)

    with LoopbackServer(mute_at_turn_1, max_requests=200, max_seconds=120) as server:
        code = _simulated(server, tmp_path / "run", monkeypatch, "mut-mute")
        mut = [r for r in server.chat_requests if r.json.get("model") == "mut-mute"]
        judged = [message_text(r.json["messages"][-1]) for r in server.chat_requests if r.json.get("model") == "judge"]
    assert code == 0
    assert len(mut) == 3 + 2, "the empty turn asked three times in all"
    assert not any("five criteria" in text for text in judged), "no rubric over a transcript with a hole"
    (row,) = _items(tmp_path / "run")
    assert row["score"]["empty_turns"] == [1]
    assert row["score"]["valid"] is False
    sub = json.loads((tmp_path / "run" / "results.json").read_text())["subtasks"]["conversation/simulated_patient"]
    assert sub["n_invalid"] == 1
