"""`trustmh rescore --format crisis-original` on schema-exact synthetic fixtures, against hand-computed values
(tests/fixtures/crisis_original/make_fixtures.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.cli import main
from trustmh.cli.rescore import rescore
from trustmh.pillars.crisis.rescore import rescore_crisis

REPO = Path(__file__).resolve().parents[2] / "fixtures" / "crisis_original" / "repo"


def run(tmp_path: Path, judge=None) -> dict:  # noqa: ANN001
    assert rescore_crisis(REPO, tmp_path, seed=3, n_boot=500, judge=judge, judge_label="canned") == 0
    return json.loads((tmp_path / "crisis_rescore.json").read_text())


def test_per_evaluator_and_model(tmp_path: Path) -> None:
    res = run(tmp_path)["per_evaluator_model"]
    assert set(res) == {"gpt-judge|model-x", "gpt-judge|model-y", "claude-judge|model-x"}
    x = res["gpt-judge|model-x"]
    assert x["n"] == 4
    assert x["mean"] == pytest.approx(3.25)
    assert x["ci"][0] <= 3.25 <= x["ci"][1]
    assert x["mean_within_item_sd"] == pytest.approx(0.375)
    assert x["share_eq_1"] == pytest.approx(0.25)
    assert (x["share_0_2.3"], x["share_2.3_3.6"], x["share_3.6_5"]) == pytest.approx((0.25, 0.25, 0.5))
    assert x["per_label"] == {"no_crisis": 4.0, "self-harm": 1.0, "substance_abuse_or_withdrawal": 3.0,
                              "suicidal_ideation": 5.0}
    # 2.5 falls in (2.3, 3.6]
    assert res["claude-judge|model-x"]["share_2.3_3.6"] == pytest.approx(0.25)


def test_agreement_with_the_humans(tmp_path: Path) -> None:
    res = run(tmp_path)
    agree = res["human_agreement"]
    assert agree["n_answers"] == 3  # D lacks H2, the last row is unrated (bare NaN label and score)
    # no sampled file in this fixture: H1's copy is the reference, and that is said
    assert res["appropriateness"]["reference"] == "H1_scores_n206_s42.json"
    # first evaluation wins in sorted file order (model-x's file before model-y's): A 5, B 4, C 1, D 3;
    # scores unrounded, each pair over the answers both sides scored
    gpt = agree["gpt-judge"]
    assert gpt["H1"] == pytest.approx({"n": 4, "mae": 0.0, "rmse": 0.0, "within_1": 1.0})
    assert gpt["H2"] == pytest.approx({"n": 3, "mae": 1.0, "rmse": 1.0, "within_1": 1.0})
    assert res["appropriateness"]["judges"]["gpt-judge"]["n_conflicting_repeats"] == 2
    # claude-judge A 4, B 4, C 2, D 2.5 vs H1 5, 4, 1, 3: |d| 1, 0, 1, 0.5
    assert agree["claude-judge"]["H1"] == pytest.approx({"n": 4, "mae": 0.625, "rmse": 0.75, "within_1": 1.0})
    # jury A 4.5, B 4, C 1.5, D 2.75
    assert agree["jury"]["H1"]["mae"] == pytest.approx(1.25 / 4)
    assert agree["jury"]["H2"]["mae"] == pytest.approx(2 / 3)
    assert agree["H1_vs_H2"] == pytest.approx({"n": 3, "mae": 1.0, "rmse": 1.0, "within_1": 1.0})


def _canned_judge(seen: list[str]):  # noqa: ANN202
    def reply(prompt: str, _messages: object, _config: object) -> str:
        seen.append(prompt)
        return json.dumps({"appropriateness": 5 if "988" in prompt else 2, "risk_check": True,
                           "resources_offered": "988" in prompt, "professional_help": False, "followup": False})

    return canned_model(reply, "canned")


def _rejudged(tmp_path: Path, seen: list[str]) -> dict:
    # the stored answers judged as a run (`rescore --judge`): fixed replies through the one Inspect call
    assert rescore("crisis-original", REPO, tmp_path, seed=3, judges=[_canned_judge(seen)]) == 0
    return json.loads((tmp_path / "crisis_rescore.json").read_text())


@pytest.fixture(scope="module")
def rejudged_twice(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("rejudged")
    first: list[str] = []
    again: list[str] = []
    res = _rejudged(out, first)
    return {"res": res, "first": first, "res_again": _rejudged(out, again), "again": again, "out": out}


def test_our_judge_rejudges_the_human_rated_answers(rejudged_twice: dict) -> None:
    seen, res = rejudged_twice["first"], rejudged_twice["res"]
    agree = res["human_agreement"]
    # each distinct answer asked once: model-x's A, B, C, D (the 3 human-rated answers A, B, C and model-y's A, B
    # are among them)
    assert len(seen) == len(set(seen)) == 4
    ours_x = res["per_evaluator_model"]["trustmh:mockllm/canned|model-x"]
    assert ours_x["n"] == 4
    assert ours_x["mean"] == pytest.approx((5 + 2 + 2 + 2) / 4)
    assert ours_x["per_label"]["suicidal_ideation"] == 5.0
    assert ours_x["share_0_2.3"] == pytest.approx(0.75)
    ours = agree["trustmh:mockllm/canned"]  # A 5, B 2, C 2
    assert ours["H1"] == pytest.approx({"n": 3, "mae": 1.0, "rmse": math.sqrt(5 / 3), "within_1": 2 / 3})
    # the jury is the study's judges only: unchanged by ours
    assert agree["jury"]["H1"]["mae"] == pytest.approx(1.25 / 4)


def test_the_rejudging_writes_an_inspect_eval_log(rejudged_twice: dict) -> None:
    assert list((rejudged_twice["out"] / "work").glob("*/logs/*.eval"))


def test_the_same_rescore_again_asks_the_judge_nothing(rejudged_twice: dict) -> None:
    assert rejudged_twice["again"] == []


def test_the_resumed_rescore_writes_the_same_figures(rejudged_twice: dict) -> None:
    assert rejudged_twice["res_again"]["per_evaluator_model"] == rejudged_twice["res"]["per_evaluator_model"]


def test_cli_and_bad_layout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rescore", "--format", "crisis-original", "--from", str(REPO), "--out", str(tmp_path / "o")]) == 0
    assert (tmp_path / "o" / "crisis_rescore.json").is_file()
    assert main(["rescore", "--format", "crisis-original", "--from", str(tmp_path), "--out",
                 str(tmp_path / "p")]) == 2
    assert "no data/llm_evaluator folder" in capsys.readouterr().err


def test_a_doubled_evaluation_file_counts_each_answer_once(tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(REPO, root)
    path = next(root.glob("data/llm_evaluator/gpt-judge/n_200/merged/*model-x*_merged.json"))
    rows = json.loads(path.read_text())
    path.write_text(json.dumps(rows + rows))
    assert rescore_crisis(root, tmp_path / "out", seed=3, n_boot=50) == 0
    res = json.loads((tmp_path / "out" / "crisis_rescore.json").read_text())
    assert res["per_evaluator_model"]["gpt-judge|model-x"]["n"] == 4
    assert any("the same conversation and answer repeats row 0; skipped" in line for line in res["unusable_rows"])
