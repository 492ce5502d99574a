"""Judges everywhere: truncated replies recovered and counted, ensembles for any judged sub-task with member
agreement, antitoxic scored on the jailbreak replies themselves (one generation, one refusal decision)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.core import JudgeInfo, JudgeRequest, RunContext
from trustmh.judges.ensemble import combine_member_scores, member_agreement
from trustmh.judges.parse import extract_judge_object, judge_was_recovered, recover_truncated_object
from trustmh.offline import run_offline
from trustmh.pillars.safety.jailbreak import JailbreakResistance

REFUSAL = "I'm sorry, but I can't help with that."


def test_recover_truncated_object_keeps_only_complete_fields() -> None:
    cut = '{"empathy": 4, "helpfulness": 3, "safety": 5, "fluency": 4, "rationale": "The reply is warm and it'
    assert recover_truncated_object(cut) == {"empathy": 4, "helpfulness": 3, "safety": 5, "fluency": 4}
    assert judge_was_recovered(cut)
    assert extract_judge_object(cut)["safety"] == 5
    # a value cut mid-way is never guessed
    assert recover_truncated_object('{"leak": 1, "severity": 2') == {"leak": 1}
    assert recover_truncated_object('{"a": "x, y", "b": [1, 2') == {"a": "x, y"}  # commas in strings/lists
    assert recover_truncated_object('{"a": 1}') is None
    assert not judge_was_recovered('{"a": 1}')
    assert recover_truncated_object("no json") is None
    assert recover_truncated_object('{"a": 1') is None


def _support_judge(req: JudgeRequest) -> str:
    # complete scores, then a rationale cut off by the token limit
    return '{"empathy": 4, "helpfulness": 4, "safety": 5, "fluency": 4, "rationale": "Kind and spe'


def test_truncated_judge_reply_is_recovered_and_counted(tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    data, code = run(RunOptions(model=canned_model(lambda p, m, c: "That sounds hard. I'm here with you."),
                                judge=canned_model(lambda p, m, c: _support_judge(JudgeRequest("s", p, bool)),
                                                   "judge"),
                                suite="starter", subtasks=["emotional_support"], limit=3, out=tmp_path,
                                display="none", n_boot=200))
    assert code == 0
    sub = data["subtasks"]["reliability/emotional_support"]
    assert sub["status"] == "ok"
    assert sub["n_invalid"] == 0
    assert sub["metrics"]["judge_recovered"] == 3
    assert any("recovered" in n for n in sub["notes"])


def _rta_judge(verdict_for_comply: str):  # noqa: ANN202
    def judge(prompt: str) -> str:
        if "toxicity" in prompt.split("\n", 1)[0].lower() or '"toxicity"' in prompt:
            return json.dumps({"toxicity": 0})
        refused = "can't help with that" in prompt
        return json.dumps({"label": "refused" if refused else verdict_for_comply})
    return judge


def test_ensemble_on_a_trustmh_subtask_offline() -> None:
    """Two judges that disagree on complied replies: combined by vote (tie → first judge), agreement shown."""
    ctx = RunContext(mode="default", seed=3, n_boot=200, suite="starter",
                     judge=JudgeInfo(model="judge/a", validated=False, members=("judge/a", "judge/b")))

    def respond(item, prompt):  # noqa: ANN001, ANN202
        return REFUSAL if item.metadata["base_id"] % 2 else "Sure, here you go."

    verdicts = {"judge/a": _rta_judge("complied"), "judge/b": _rta_judge("safe_redirect")}
    calls: list[str | None] = []

    def judge(req: JudgeRequest) -> str:
        calls.append(req.model)
        return verdicts[req.model](req.prompt)

    records, _ = run_offline(JailbreakResistance(), ctx, respond, judge)
    assert set(calls) == {"judge/a", "judge/b"}
    for r in records:
        members = r.score["members"]
        assert set(members) == {"judge/a", "judge/b"}
        assert r.score["label"] == members["judge/a"]["label"]  # a tie goes to the first-listed judge
        assert set(r.judge_raw) == {"rta@judge/a", "toxicity@judge/a", "rta@judge/b", "toxicity@judge/b"}
    agreement = member_agreement([r.score["members"] for r in records])
    assert agreement["label"]["level"] == "nominal"
    complied = sum(1 for r in records if r.score["members"]["judge/a"]["label"] == "complied")
    assert 0 < complied < len(records)
    assert agreement["label"]["alpha"] is not None
    assert agreement["label"]["alpha"] < 1
    assert agreement["toxicity"]["identical"] is True  # both always said 0


def test_combine_member_scores_vote_mean_and_min_valid() -> None:
    a = {"judge_valid": True, "score": 4, "flag": True, "label": "x", "text": "a"}
    b = {"judge_valid": True, "score": 2, "flag": False, "label": "y", "text": "b"}
    c = {"judge_valid": False, "score": None, "flag": None, "label": None, "text": None}
    vote = combine_member_scores({"a": a, "b": b}, "vote")
    assert vote["score"] == 3
    assert vote["flag"] is True
    assert vote["label"] == "x"
    assert vote["text"] == "a"
    assert combine_member_scores({"a": a, "b": b}, "mean")["score"] == pytest.approx(3.0)
    strict = combine_member_scores({"a": a, "b": b, "c": c}, "vote")  # min_valid defaults to every member
    assert strict["judge_valid"] is False
    assert strict["n_judges_valid"] == 2
    lenient = combine_member_scores({"a": a, "b": b, "c": c}, "vote", min_valid=2)
    assert lenient["judge_valid"] is True
    assert lenient["score"] == 3


def test_the_ensemble_rule_is_resolved_once_into_the_spec_and_its_context() -> None:
    """`-O ensemble` is read once into the spec; without it each sub-task keeps its declared rule."""
    from trustmh.pillars.mentalbench.generation import MentalBenchGeneration
    from trustmh.run.config import RunOptions, resolve

    def request(**options: str) -> RunOptions:
        return RunOptions(model=canned_model(lambda p, m, c: REFUSAL),
                          judge=canned_model(lambda p, m, c: "{}", "judge-a"),
                          more_judges=[canned_model(lambda p, m, c: "{}", "judge-b")], suite="starter",
                          subtasks=["jailbreak_resistance"], options=options)

    declared = resolve(request()).context()
    assert declared.ensemble_rule(JailbreakResistance) == "vote"
    assert declared.ensemble_rule(MentalBenchGeneration) == "mean"
    spec = resolve(request(ensemble="median"))
    assert spec.judges.ensemble == "median"
    assert spec.context().ensemble_rule(MentalBenchGeneration) == "median"


def test_ensemble_through_inspect_reports_member_agreement(tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    def model(prompt: str, messages, config) -> str:  # noqa: ANN001
        return REFUSAL if "7" in prompt else "Sure, here you go."

    judge_a = canned_model(lambda p, m, c: _rta_judge("complied")(p), "judge-a")
    judge_b = canned_model(lambda p, m, c: _rta_judge("safe_redirect")(p), "judge-b")
    data, code = run(RunOptions(model=canned_model(model), judge=judge_a, more_judges=[judge_b],
                                suite="starter", subtasks=["jailbreak_resistance"], out=tmp_path,
                                display="none", n_boot=200))
    assert code == 0
    sub = data["subtasks"]["safety/jailbreak_resistance"]
    assert sub["judge"]["members"] == ["mockllm/judge-a", "mockllm/judge-b"]
    assert sub["judge"]["aggregator"] == "vote"
    assert "label" in sub["metrics"]["judge_agreement"]
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert all(set(i["score"]["members"]) == {"mockllm/judge-a", "mockllm/judge-b"} for i in items)


def test_antitoxic_reads_the_jailbreak_replies(tmp_path: Path) -> None:
    """One generation per JailbreakMH item serves both sub-tasks; antitoxic's "refused" is the rta
    judge's decision on the same reply."""
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    prompts: list[str] = []

    def model(prompt: str, messages, config) -> str:  # noqa: ANN001
        prompts.append(prompt)
        return REFUSAL if len(prompts) % 2 else "Sure, heck, here you go."

    def judge(prompt: str, messages, config) -> str:  # noqa: ANN001
        if '"toxicity"' in prompt:
            return json.dumps({"toxicity": 1 if "heck" in prompt else 0})
        return json.dumps({"label": "refused" if "can't help with that" in prompt else "complied"})

    data, code = run(RunOptions(model=canned_model(model), judge=canned_model(judge, "judge"), suite="starter",
                                subtasks=["jailbreak_resistance", "antitoxic"], out=tmp_path, display="none",
                                n_boot=200))
    assert code == 0
    jb, at = data["subtasks"]["safety/jailbreak_resistance"], data["subtasks"]["safety/antitoxic"]
    assert len(prompts) == jb["n"] == at["n"], "each item generated once, for both sub-tasks"
    items = [json.loads(line) for line in (tmp_path / "items.jsonl").read_text().splitlines()]
    assert {i["subtask"] for i in items} == {"safety/jailbreak_resistance"}
    non_refused = [i["score"]["toxicity"] for i in items if i["score"]["refused"] is False]
    assert at["metrics"]["antitox_non_refused"] == pytest.approx(1 - sum(non_refused) / 3 / len(non_refused))
    assert all(i["score"]["refused"] == (i["score"]["label"] == "refused") for i in items)
    # antitoxic alone still generates once, through jailbreak_resistance, which is then not published
    only, code = run(RunOptions(model=canned_model(model), judge=canned_model(judge, "judge"), suite="starter",
                                subtasks=["antitoxic"], out=tmp_path / "only", display="none", n_boot=200))
    assert code == 0
    assert list(only["subtasks"]) == ["safety/antitoxic"]
    assert only["subtasks"]["safety/antitoxic"]["value"] == pytest.approx(at["value"])


def test_inspect_view_shows_target_answer_and_explanation(tmp_path: Path) -> None:
    """Each sample carries its gold answer, each score the parsed answer and the judge's reasoning."""
    from inspect_ai.log import read_eval_log

    from trustmh.run.calls import SCORER_NAME
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    def judge(prompt: str, messages, config) -> str:  # noqa: ANN001
        if '"toxicity"' in prompt:
            return json.dumps({"toxicity": 0, "rationale": "calm wording"})
        return json.dumps({"label": "refused", "rationale": "it declines and offers support"})

    _, code = run(RunOptions(model=canned_model(lambda p, m, c: REFUSAL), judge=canned_model(judge, "judge"),
                             suite="starter", subtasks=["jailbreak_resistance", "knowledge"], out=tmp_path,
                             display="none", n_boot=200, limit=2))
    assert code == 0
    seen = set()
    for path in (tmp_path / "logs").glob("*.eval"):
        log = read_eval_log(str(path))
        for sample in log.samples or []:
            score = sample.scores[SCORER_NAME]
            if log.eval.task == "knowledge":
                assert len(sample.target) == 1
                assert sample.target in "ABCDEFGHIJ"  # the gold option
                assert score.answer == "(invalid: no answer could be read)"  # a refusal names no option
                assert score.explanation == "scored by rule"
            else:
                assert score.answer == "refused"
                assert score.explanation == "it declines and offers support"
            seen.add(log.eval.task)
    assert seen == {"knowledge", "jailbreak_resistance"}


def test_raw_line_break_inside_a_judge_string_is_read() -> None:
    """Small judges under a grammar write literal line breaks inside strings; the scores still count."""
    from trustmh.scoring.support_judge import parse_support_judge

    text = '{"empathy": 2, "helpfulness": 3, "safety": 4, "fluency": 3, "rationale": "Warm but\nvague.\n"}'
    parsed = parse_support_judge(text)
    assert parsed is not None
    assert parsed["safety"] == 4
    assert parsed["rationale"] == "Warm but\nvague.\n"
