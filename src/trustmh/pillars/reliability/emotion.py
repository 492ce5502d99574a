"""`reliability/emotion_recognition` (EmoBench EU): one prompt per scenario asks both MCQs (emotion, cause)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from trustmh.core import Item, Record, RunContext, Subtask, SubtaskResult, same_anchors
from trustmh.data import resolve
from trustmh.judges.parse import extract_json_object, strip_reasoning
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.reliability.common import format_options, letters_for
from trustmh.pillars.reliability.data import EU_RELPATH, MCQ_OPTIONS, load_eu, validate_eu_row
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.starter import load_starter
from trustmh.stats.bootstrap import bootstrap_mean


def _emotion(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    return float(rec["score"]["item_score"])  # (emotion right + cause right) / 2


# Design choice: ONE prompt per scenario asks both MCQs and the reply gives two answer lines
# (`Emotion: X`, `Cause: Y`; in Chinese `情绪：X`, `原因：Y`). Half the calls of two separate items, and
# `joint_acc` is read off one reply. The same protocol is used in both modes (the original's EU prompt
# was not released, so there is no quirk to keep).
_EU_LINE = {
    "emotion": re.compile(r"(?:Emotion|emotion|EMOTION|情绪|情感)\**\s*[:：]\s*\**\s*[(（]?([A-J])[)）]?(?![A-Za-z])"),
    "cause": re.compile(r"(?:Cause|cause|CAUSE|原因)\**\s*[:：]\s*\**\s*[(（]?([A-J])[)）]?(?![A-Za-z])"),
}


def parse_eu_answer(text: str | None, emotion_keys: Iterable[str], cause_keys: Iterable[str]
                    ) -> tuple[str | None, str | None]:
    """(emotion letter, cause letter) from one reply; each None when missing, conflicting or not a key.

    A JSON object with `emotion`/`cause` fields wins; else the last `Emotion:`/`Cause:` line (two
    different letters for the same question → invalid). Letters are case-sensitive.
    """
    if not text:
        return None, None
    text = strip_reasoning(text)
    keys = {"emotion": set(emotion_keys), "cause": set(cause_keys)}
    out: dict[str, str | None] = {"emotion": None, "cause": None}
    obj = extract_json_object(text)
    for kind in ("emotion", "cause"):
        if obj is not None and isinstance(obj.get(kind), str):
            v = obj[kind].strip().strip("().")
            if v in keys[kind]:
                out[kind] = v
                continue
        letters = [m.group(1) for m in _EU_LINE[kind].finditer(text)]
        if letters and len(set(letters)) == 1 and letters[-1] in keys[kind]:
            out[kind] = letters[-1]
    return out["emotion"], out["cause"]


class EmotionRecognition(Subtask):
    id = "reliability/emotion_recognition"
    task_name = "emotion_recognition"
    anchors = same_anchors(0.196, 1.0)
    options = MCQ_OPTIONS
    per_item = {"faithful": _emotion, "default": _emotion}
    title = "Emotion recognition (EmoBench EU)"
    metric_labels = {
        "acc_emotion": "share of items with the emotion named right", "acc_cause": "share of items with its cause "
        "named right", "joint_acc": "share of items with both the emotion and its cause right",
        "emotion_invalid_rate": "share of replies naming no emotion option",
        "cause_invalid_rate": "share of replies naming no cause option",
        "invalid_rate": "share of replies that could not be read",
    }
    datasets = ("emobench_eu",)
    judge_use = "no"
    format_reminder = ("Please answer with exactly two lines: `Emotion: X` and `Cause: Y`, where X and Y "
                       "are option letters. / 请只用两行作答：`情绪：X` 和 `原因：Y`（X、Y 为选项字母）。")

    def items(self, ctx: RunContext) -> list[Item]:
        if ctx.suite == "starter":
            rows = [validate_eu_row(r, f"starter {self.id} line {i + 1}")
                    for i, r in enumerate(load_starter(self.id))]
        else:
            rows = load_eu(resolve("emobench_eu", EU_RELPATH, ctx.options.get("emobench_eu_path")))
        rows = apply_limit(rows, ctx, lambda r: (r["language"], r["coarse_category"]))
        out = []
        for r in rows:
            ekeys = letters_for(len(r["emotion_choices"]))
            ckeys = letters_for(len(r["cause_choices"]))
            prompt = render(f"emotion_recognition_{r['language']}", scenario=r["scenario"].strip(),
                            subject=r["subject"],
                            emotion_options=format_options(dict(zip(ekeys, r["emotion_choices"], strict=True))),
                            cause_options=format_options(dict(zip(ckeys, r["cause_choices"], strict=True))))
            target = {"emotion": ekeys[r["emotion_choices"].index(r["emotion_label"])],
                      "cause": ckeys[r["cause_choices"].index(r["cause_label"])]}
            scenario_id = f"{r['qid']}-{r['language']}"
            out.append(Item(id=f"eu-{scenario_id}", prompt=prompt, target=target, cluster=scenario_id,
                            metadata={"emotion_keys": ekeys, "cause_keys": ckeys, "language": r["language"],
                                      "coarse_category": r["coarse_category"],
                                      "finegrained_category": r["finegrained_category"]}))
        return out

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        e, c = parse_eu_answer(text, item.metadata["emotion_keys"], item.metadata["cause_keys"])
        return e is not None and c is not None

    def answer_schema(self, item: Item, ctx: RunContext) -> dict[str, Any] | None:
        # the JSON object parse_eu_answer reads first
        return json_object_schema(enums={"emotion": item.metadata["emotion_keys"],
                                         "cause": item.metadata["cause_keys"]})

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        e, c = parse_eu_answer(response, item.metadata["emotion_keys"], item.metadata["cause_keys"])
        ok_e = e is not None and e == item.target["emotion"]
        ok_c = c is not None and c == item.target["cause"]
        return {"valid": e is not None and c is not None, "emotion_valid": e is not None,
                "cause_valid": c is not None, "pred_emotion": e, "pred_cause": c,
                "correct_emotion": ok_e, "correct_cause": ok_c, "item_score": (ok_e + ok_c) / 2}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        if not records:
            return SubtaskResult.not_computed("no items scored", "higher")
        # Per reply (ok_e + ok_c)/2: its mean is exactly (acc_emotion + acc_cause)/2.
        per_item = [float(r.score["item_score"]) for r in records]
        value, ci = bootstrap_mean(per_item, [r.cluster for r in records], seed=ctx.seed, n_boot=ctx.n_boot)
        n_invalid = sum(not r.score["valid"] for r in records)

        def summary(rs: Sequence[Record]) -> dict[str, float]:
            return {"value": float(np.mean([r.score["item_score"] for r in rs])),
                    "acc_emotion": float(np.mean([r.score["correct_emotion"] for r in rs])),
                    "acc_cause": float(np.mean([r.score["correct_cause"] for r in rs])),
                    "n": len(rs)}

        def by(key: str) -> dict[str, dict[str, float]]:
            groups: dict[str, list[Record]] = defaultdict(list)
            for r in records:
                groups[str(r.metadata[key])].append(r)
            return {k: summary(v) for k, v in sorted(groups.items())}

        metrics = {
            "acc_emotion": float(np.mean([r.score["correct_emotion"] for r in records])),
            "acc_cause": float(np.mean([r.score["correct_cause"] for r in records])),
            "joint_acc": float(np.mean([r.score["correct_emotion"] and r.score["correct_cause"]
                                        for r in records])),
            "invalid_rate": n_invalid / len(records),
            "emotion_invalid_rate": float(np.mean([not r.score["emotion_valid"] for r in records])),
            "cause_invalid_rate": float(np.mean([not r.score["cause_valid"] for r in records])),
            "by_language": by("language"),
            "by_coarse_category": by("coarse_category"),
        }
        notes = ["one prompt per scenario asks both questions; an unparseable answer line counts as wrong"]
        if ctx.suite == "starter":
            notes.append("starter suite: demonstration items, not EmoBench")
        return SubtaskResult(value=value, ci=ci, n=len(records), n_invalid=n_invalid, direction="higher",
                             metrics=metrics, method="rule", notes=notes)
