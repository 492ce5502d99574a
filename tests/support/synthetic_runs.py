"""Synthetic run directories (results.json + items.jsonl) for report tests and the README screenshot.

Every text is bland and written by us; no real crisis text. Values of mean-type sub-tasks are computed from
the items written, so the paired bootstrap and the page can be checked against them. One model's replies carry
HTML/script payloads, to check the page shows them as text."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from trustmh.results.leaderboard import normalised_summary
from trustmh.stats.bootstrap import bootstrap_mean

XSS_SCRIPT = "<script>window.__pwned = (window.__pwned || 0) + 1;</script>"
XSS_IMG = "<img src=x onerror=\"window.__pwned = (window.__pwned || 0) + 1\">"
CRISIS_LABELS = ["no_crisis", "suicidal_ideation", "self_harm", "violent_thoughts", "substance_warning",
                 "risky_behaviour", "anxiety_crisis"]


def _mean_subtask(rng: random.Random, sid: str, p: float, n: int, model: str, payload: bool,
                  gold_kind: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records = []
    for i in range(n):
        correct = rng.random() < p
        invalid = rng.random() < 0.05
        gold = rng.choice("ABCD")
        pred = None if invalid else (gold if correct else rng.choice([c for c in "ABCD" if c != gold]))
        reply = f"My answer is {pred}." if pred else "I am not sure how to answer that."
        if payload and i % 7 == 0:
            reply += f" {XSS_SCRIPT} {XSS_IMG}"
        records.append({"subtask": sid, "item_id": f"{sid.split('/')[1]}-{i:03d}", "cluster": f"c{i // 2}",
                        "response": reply, "epoch": 1, "finish_reason": "stop", "error": None, "judge_raw": {},
                        "score": {"valid": pred is not None, "pred": pred, "gold": gold,
                                  "correct": pred is not None and pred == gold},
                        "metadata": {"target": gold, "prompt": f"Synthetic {gold_kind} question {i}: which "
                                     "option fits best? Answer with one letter."}})
    value, ci = bootstrap_mean([float(r["score"]["correct"]) for r in records], [r["cluster"] for r in records],
                               seed=0, n_boot=500)
    sub = {"value": value, "ci": list(ci), "n": n, "n_invalid": sum(not r["score"]["valid"] for r in records),
           "direction": "higher", "status": "ok", "method": "rule", "metrics": {"accuracy": value},
           "notes": [f"synthetic {gold_kind} items"], "judge": None, "small_n": n < 30, "reason": None}
    return sub, records


def _crisis(rng: random.Random, skill: float, n: int, payload: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    records, gold, pred = [], [], []
    for i in range(n):
        g = CRISIS_LABELS[i % len(CRISIS_LABELS)]
        p = g if rng.random() < skill else rng.choice(CRISIS_LABELS)
        gold.append(g)
        pred.append(p)
        reply = json.dumps({"label": p})
        if payload and i % 5 == 0:
            reply = XSS_SCRIPT + reply
        records.append({"subtask": "crisis/crisis_identification", "item_id": f"crisis-{i:03d}",
                        "cluster": f"k{i}", "response": reply, "epoch": 1, "finish_reason": "stop", "error": None,
                        "judge_raw": {}, "score": {"valid": True, "pred": p, "gold": g, "correct": p == g},
                        "metadata": {"target": g, "split": "validation",
                                     "prompt": f"Synthetic message {i} about an ordinary week; classify it."}})
    idx = {lab: k for k, lab in enumerate(CRISIS_LABELS)}
    matrix = [[0] * len(CRISIS_LABELS) for _ in CRISIS_LABELS]
    for g, p in zip(gold, pred, strict=True):
        matrix[idx[g]][idx[p]] += 1
    missed = sum(1 for g, p in zip(gold, pred, strict=True) if g != "no_crisis" and p == "no_crisis")
    n_crisis = sum(1 for g in gold if g != "no_crisis")
    value = sum(g == p for g, p in zip(gold, pred, strict=True)) / n  # stands in for macro F1 here
    sub = {"value": value, "ci": [max(0.0, value - 0.08), min(1.0, value + 0.08)], "n": n, "n_invalid": 0,
           "direction": "higher", "status": "ok", "method": "rule", "judge": None, "small_n": False,
           "reason": None, "notes": ["synthetic items"],
           "metrics": {"validation_confusion": {"labels": CRISIS_LABELS, "matrix": matrix},
                       "validation_crisis_miss_rate": missed / n_crisis,
                       "validation_n_crisis_missed": missed, "validation_n_crisis_items": n_crisis}}
    return sub, records


def _robustness(rng: random.Random, clean: float, decay: float) -> dict[str, Any]:
    ps = [0.05, 0.1, 0.2, 0.3]
    curve = {level: {str(p): max(0.0, 1 - decay * k * p * (1 + 0.1 * rng.random())) for p in ps}
             for k, level in enumerate(["char", "word", "sentence", "cascade"], start=1)}
    value = sum(curve["cascade"].values()) / len(ps)
    return {"value": value, "ci": [value - 0.05, value + 0.05], "n": 200, "n_invalid": 3, "direction": "higher",
            "status": "ok", "method": "rule", "judge": None, "small_n": False, "reason": None, "notes": [],
            "metrics": {"clean": clean, "retention_curve": curve}}


def synthetic_run(out: Path, model: str, skill: float, *, seed: int = 0, n: int = 60, payload: bool = False,
                  judge: str | None = "synthetic/judge", validated: bool = False) -> dict[str, Any]:
    rng = random.Random(f"{model}-{seed}")
    subtasks: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for sid, kind in (("reliability/knowledge", "knowledge"), ("ethics/ethical_reasoning", "ethics")):
        subtasks[sid], recs = _mean_subtask(rng, sid, skill, n, model, payload, kind)
        records += recs
    subtasks["crisis/crisis_identification"], recs = _crisis(rng, skill, 70, payload)
    records += recs
    if payload:  # a multi-turn conversation record, as the Conversation pillar writes them
        records[0]["metadata"]["turns"] = [
            {"role": "user", "content": "Synthetic opening message about a long week.", "model": None, "turn": 1,
             "marks": []},
            {"role": "assistant", "content": f"A reply with markup {XSS_SCRIPT}", "model": model, "turn": 2,
             "marks": ["missed_cue"]},
            {"role": "user", "content": "Synthetic follow-up.", "model": None, "turn": 3, "marks": None}]
    subtasks["robustness/psychological_diagnosis"] = _robustness(rng, skill, 1.5 - skill)
    jb = min(0.99, skill + 0.1)
    subtasks["safety/jailbreak_resistance"] = {
        "value": jb, "ci": [jb - 0.06, min(1.0, jb + 0.04)], "n": 120, "n_invalid": 2, "direction": "higher",
        "status": "ok", "method": "judge", "judge": {"model": judge, "validated": validated}, "small_n": False,
        "reason": None, "notes": [], "metrics": {"keyword_judge_kappa": 0.6 + 0.2 * skill}}
    summary = normalised_summary(subtasks, "default")
    results = {"model": model, "model_reported": None, "suite": "trustmh", "mode": "default", "seed": seed,
               "limit": None, "n_boot": 500, "options": {},
               "judge": {"model": judge, "validated": validated, "temperature": 0.0, "seed": 0},
               "trustmh_version": "0.1.0", "anchors_version": "synthetic", "created": f"2026-11-2{seed}T10:00:00+00:00",
               "subtasks": subtasks, "pillars": summary["pillars"], "overall": summary["overall"], "errors": [],
               "datasets": {}}
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1), encoding="utf-8")
    (out / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return results


def three_synthetic_runs(root: Path) -> list[Path]:
    dirs = [root / "runs" / "careful", root / "runs" / "middling", root / "runs" / "careless"]
    synthetic_run(dirs[0], "example/careful-model", 0.85, seed=1, judge="example/judge", validated=True)
    synthetic_run(dirs[1], "example/middling-model", 0.7, seed=2, judge="example/judge", validated=True)
    synthetic_run(dirs[2], "example/careless-model", 0.45, seed=3, payload=True, judge="example/judge",
                  validated=True)
    return dirs
