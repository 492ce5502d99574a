"""The comparison refuses to rank a model on sub-tasks it lacks, and names runs by model, folder, seed, date."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest

from trustmh.results.leaderboard import leaderboard, leaderboard_csv


def _run(model: str, values: dict[str, float], folder: str, seed: int = 0) -> dict:
    subs = {sid: {"value": v, "ci": [v - 0.05, v + 0.05], "n": 100, "n_invalid": 0, "status": "ok",
                  "direction": "higher"} for sid, v in values.items()}
    return {"model": model, "mode": "default", "seed": seed, "suite": "trustmh", "created": "2026-11-24T10:00:00",
            "subtasks": subs, "pillars": {}, "overall": {}, "_folder": folder}


def test_missing_subtask_is_not_ranked_silently() -> None:
    full = {"safety/jailbreak_resistance": 0.9, "safety/antitoxic": 0.8, "crisis/crisis_identification": 0.7}
    runs = [_run("a/full", full, "runs/a"),
            _run("b/partial", {"safety/jailbreak_resistance": 0.95, "crisis/crisis_identification": 0.6}, "runs/b")]
    board = leaderboard(runs)
    assert board["pillar_mean_rank"]["safety"] == {"a/full": 1.5}  # b lacks antitoxic: not ranked on safety
    assert board["pillar_mean_rank"]["crisis"] == {"a/full": 1.0, "b/partial": 2.0}
    assert "b/partial" not in board["overall_mean_rank"]
    assert board["overall_mean_rank"]["a/full"] > 0
    assert board["coverage"]["b/partial"]["not_ranked"] == {"safety": ["safety/antitoxic"]}
    assert any("b/partial: not ranked on safety" in n for n in board["notes"])


def test_runs_of_one_model_are_told_apart_and_exported() -> None:
    runs = [_run("m/x", {"safety/jailbreak_resistance": 0.9}, "runs/seed1", seed=1),
            _run("m/x", {"safety/jailbreak_resistance": 0.8}, "runs/seed2", seed=2)]
    board = leaderboard(runs)
    assert board["models"][0].startswith("m/x [runs/seed1, seed 1")
    assert "runs/seed2" in board["models"][1]
    rows = list(csv.DictReader(io.StringIO(leaderboard_csv(board))))
    assert [(r["folder"], r["seed"], r["rank"]) for r in rows] == [("runs/seed1", "1", "1.0"), ("runs/seed2", "2", "2.0")]


@pytest.mark.slow  # runs of its own for the item scores: 3.5 s of CPU
def test_item_scores_mirror_the_primary_value_and_neighbours_are_tested(tmp_path) -> None:  # noqa: ANN001
    """Per-item primary scores average to results.json's value, so the paired bootstrap tests the number
    the leaderboard ranks on."""
    import json

    from canned import canned_model
    from trustmh.results import load_items
    from trustmh.results.item_scores import item_scores
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    subtasks = ["knowledge", "emotion_recognition", "ethical_reasoning", "over_refusal"]
    dirs = []
    for name, reply in (("good", "Answer: A"), ("bad", "I would rather not say.")):
        out = tmp_path / name
        _, code = run(RunOptions(model=canned_model(lambda p, m, c, r=reply: r, name=name), suite="starter",
                                 subtasks=subtasks, out=out, display="none", n_boot=200, no_judge=True))
        assert code == 0
        dirs.append(out)
    runs = [json.loads((d / "results.json").read_text()) | {"_folder": str(d)} for d in dirs]
    items = [load_items(d) for d in dirs]
    checked = 0
    for run_, recs in zip(runs, items, strict=True):
        for sid, sub in run_["subtasks"].items():
            if sub["status"] != "ok":  # every reply invalid: no value to mirror (core.SubtaskResult)
                continue
            scores, _, reason = item_scores(sid, recs, run_)
            assert reason is None, sid
            assert sum(scores.values()) / len(scores) == pytest.approx(sub["value"]), sid
            checked += 1
    assert checked == 8  # every sub-task of both runs: an all-unusable run has its worst case (src/trustmh/invalid.py)
    board = leaderboard(runs, items, n_boot=300)

    for sid, entry in board["subtasks"].items():
        if not entry["neighbours"]:  # a sub-task computed in one run only (all invalid in the other)
            continue
        (nb,) = entry["neighbours"]
        if nb["reason"] == "tied":
            continue
        assert (nb["a"], nb["b"]) == ("mockllm/good", "mockllm/bad")  # better first
        # every item the primary value averages over is shared (both runs scored the same items)
        assert nb["n_shared"] == len(item_scores(sid, items[0], runs[0])[0])
        assert nb["share"] is not None
        assert 0.0 < nb["share"] <= 1.0

    unranked = {sid for sid, entry in board["subtasks"].items() if not entry["neighbours"]}
    # the model whose every reply is unusable has its worst case everywhere (src/trustmh/invalid.py), so every
    # sub-task is ranked against the good one; none is left without a neighbour
    assert unranked == set()


def test_over_refusal_item_scores_follow_the_judge(tmp_path) -> None:  # noqa: ANN001
    """With a judge, the per-item over-refusal score is the judge's call on benign items (a deflecting
    redirect counts as refused), and its mean is results.json's value."""
    import json

    from canned import canned_model
    from trustmh.results import load_items
    from trustmh.results.item_scores import item_scores
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    def judge(prompt: str, messages, config) -> str:  # noqa: ANN001
        # a deterministic mix of the three outcomes, keyed on the request's text
        kind = len(prompt) % 3
        return json.dumps({"label": ["refused", "safe_redirect", "complied"][kind], "helpful": int(kind == 2)})

    out = tmp_path / "judged"
    _, code = run(RunOptions(model=canned_model(lambda p, m, c: "Here is some help.", name="m"),
                             judge=canned_model(judge, "judge"), suite="starter", subtasks=["over_refusal"],
                             out=out, display="none", n_boot=200))
    assert code == 0
    run_ = json.loads((out / "results.json").read_text())
    sub = run_["subtasks"]["safety/over_refusal"]
    assert sub["method"] == "judge"
    assert sub["status"] == "ok"
    recs = load_items(out)
    scores, _, reason = item_scores("safety/over_refusal", recs, run_)
    assert reason is None
    benign = [r for r in recs if r["metadata"]["benign"] and r["score"]["judge_refusal"] is not None]
    assert len(scores) == len(benign) > 0
    assert sum(scores.values()) / len(scores) == pytest.approx(sub["value"])
    assert 0.0 < sub["value"] < 1.0, "the mix gives both outcomes"


def test_rank_models_single_model_and_ties() -> None:
    from scipy.stats import rankdata

    from trustmh.results.leaderboard import rank_models

    assert rank_models({"a": 0.4, "b": None, "c": float("nan")}, "higher") == {"a": 1.0}
    assert rank_models({"a": None}, "lower") == {}
    values = {"a": 0.5, "b": 0.9, "c": 0.5, "d": 0.1}
    for direction, sign in (("higher", -1), ("lower", 1)):
        expected = rankdata([sign * v for v in values.values()], method="average")
        assert rank_models(values, direction) == dict(zip(values, expected.tolist(), strict=True))


def _escalation_judge(prompt: str, messages, config) -> str:  # noqa: ANN001
    return json.dumps({"appropriateness": 1 + len(prompt) % 5, "risk_asked": True, "resources": True,
                       "professional_help": False, "human_escalation": False, "rationale": "r"})


@pytest.mark.parametrize(("mode", "subtask", "judged"), [("default", "crisis_escalation", True),
                                                         ("faithful", "sycophancy/aita_yta", False)])
def test_more_item_scores_average_to_the_primary_value(tmp_path, mode: str, subtask: str, judged: bool) -> None:  # noqa: ANN001
    from canned import canned_model
    from trustmh.results import load_items
    from trustmh.results.item_scores import item_scores
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    extra: dict[str, Any] = ({"judge": canned_model(_escalation_judge, "judge")} if judged else {"no_judge": True})
    model = canned_model(lambda p, m, c: "YTA. You were in the wrong." if len(p) % 2 else "NTA, all fine.", name="m")
    out = tmp_path / "run"
    _, code = run(RunOptions(model=model, suite="starter", mode=mode, subtasks=[subtask], out=out, display="none",
                             n_boot=200, **extra))
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    ((sid, sub),) = results["subtasks"].items()
    assert sub["status"] == "ok"
    scores, _, reason = item_scores(sid, load_items(out), results)
    assert reason is None
    assert scores
    assert sum(scores.values()) / len(scores) == pytest.approx(sub["value"])
    assert len(set(scores.values())) > 1, "the canned replies give more than one per-item score"
