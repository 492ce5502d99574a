"""The comparison refuses to rank a model on sub-tasks it lacks, and names runs by model, folder, seed, date."""

from __future__ import annotations

import csv
import io

from trustmh.leaderboard import leaderboard, leaderboard_csv


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
    assert "b/partial" not in board["overall_mean_rank"] and board["overall_mean_rank"]["a/full"] > 0
    assert board["coverage"]["b/partial"]["not_ranked"] == {"safety": ["safety/antitoxic"]}
    assert any("b/partial: not ranked on safety" in n for n in board["notes"])


def test_runs_of_one_model_are_told_apart_and_exported() -> None:
    runs = [_run("m/x", {"safety/jailbreak_resistance": 0.9}, "runs/seed1", seed=1),
            _run("m/x", {"safety/jailbreak_resistance": 0.8}, "runs/seed2", seed=2)]
    board = leaderboard(runs)
    assert board["models"][0].startswith("m/x [runs/seed1, seed 1") and "runs/seed2" in board["models"][1]
    rows = list(csv.DictReader(io.StringIO(leaderboard_csv(board))))
    assert [(r["folder"], r["seed"], r["rank"]) for r in rows] == [("runs/seed1", "1", "1.0"), ("runs/seed2", "2", "2.0")]
