"""Reliability MCQs (docs/pillars/reliability.md#reliability): `reliability/knowledge` (USMLE-Mental) and
`reliability/emotion_recognition` (EmoBench EU). Plain Python: loaders, parsers, scorers, metrics.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import Item, Option, Record, RunContext, Subtask, SubtaskResult, TrustmhError, same_anchors
from trustmh.data import resolve
from trustmh.data.files import read_jsonl
from trustmh.judges.parse import extract_json_object, parse_mcq, strip_reasoning
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.starter import load_starter
from trustmh.stats.bootstrap import bootstrap_mean

USMLE_RELPATH = "external/USMLE-Mental/USMLE-mental.jsonl"
EU_RELPATH = "external/EmoBench-EU/EU.jsonl"
LETTERS = "ABCDEFGHIJ"


# --------------------------------------------------------------------------------------------- helpers

def letters_for(n: int) -> list[str]:
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"{n} options: only 1..{len(LETTERS)} can be lettered A..J")
    return list(LETTERS[:n])


def format_options(options: dict[str, str]) -> str:
    """`X. text` lines, in key order."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def _mean(xs: Iterable[float]) -> float | None:
    vals = list(xs)
    return float(np.mean(vals)) if vals else None


def _group_mean(records: Sequence[Record], key: Callable[[Record], Any],
                value: Callable[[Record], float]) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in records:
        groups[str(key(r))].append(value(r))
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


# ------------------------------------------------------------------------------------------- knowledge

def validate_usmle_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    """Check one USMLE-Mental row (or a starter row with the same fields); returns it normalised."""
    for key in ("question", "options", "answer", "meta_info1", "meta_info2"):
        if key not in row:
            raise TrustmhError(f"{where}: missing field {key!r}")
    if not isinstance(row["question"], str) or not row["question"].strip():
        raise TrustmhError(f"{where}: field 'question' must be a non-empty string")
    options = row["options"]
    if not isinstance(options, dict) or not 2 <= len(options) <= len(LETTERS):
        raise TrustmhError(f"{where}: field 'options' must be an object with 2..10 letter keys")
    if list(options) != letters_for(len(options)):
        raise TrustmhError(f"{where}: field 'options' keys must be A, B, C... in order, got {list(options)}")
    answer = row["answer"].strip() if isinstance(row["answer"], str) else row["answer"]
    if answer not in options:
        raise TrustmhError(f"{where}: field 'answer' {row['answer']!r} is not one of the option keys")
    cat = row["meta_info2"]
    if isinstance(cat, list):
        if len(cat) != 1 or not isinstance(cat[0], str):
            raise TrustmhError(f"{where}: field 'meta_info2' must be a 1-item list of strings")
        cat = cat[0]
    if not isinstance(cat, str):
        raise TrustmhError(f"{where}: field 'meta_info2' must be a string or a 1-item list")
    return {**row, "answer": answer, "category": cat, "step": str(row["meta_info1"])}


def load_usmle(path: Path) -> list[dict[str, Any]]:
    """USMLE-Mental rows, validated, each with `row_index` (0-based line order), `category`, `step`."""
    rows = read_jsonl(path)
    return [{**validate_usmle_row(r, f"{path} row {i + 1}"), "row_index": i} for i, r in enumerate(rows)]


# "Letter only" replies in the original are read by taking the first standalone capital letter that is
# one of the item's keys (so "I think B" on a 9-option item reads as "I": a kept quirk).
_STANDALONE_CAPITAL = re.compile(r"(?<![A-Za-z0-9])([A-Z])(?![A-Za-z0-9])")


def parse_letter_faithful(text: str | None, option_keys: Iterable[str]) -> str | None:
    """Faithful knowledge parser: the first standalone capital letter that is a valid option key."""
    if not text:
        return None
    keys = set(option_keys)
    for m in _STANDALONE_CAPITAL.finditer(strip_reasoning(text)):
        if m.group(1) in keys:
            return m.group(1)
    return None



# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'usmle_mental_path': Option('USMLE-Mental file'),
    'emobench_eu_path': Option('EmoBench EU file'),
}


def _correct(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    return float(bool(rec["score"].get("correct")))


def _emotion(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    return float(rec["score"]["item_score"])  # (emotion right + cause right) / 2

class Knowledge(Subtask):
    id = "reliability/knowledge"
    task_name = "knowledge"
    anchors = same_anchors(0.189, 1.0)
    options = OPTIONS
    per_item = {"faithful": _correct, "default": _correct}
    title = "Psychiatric knowledge (USMLE-Mental)"
    datasets = ("usmle_mental",)
    judge_use = "no"
    # Works for both parsers: the faithful one finds the letter, the default one reads the Answer line.
    format_reminder = ("Please state your final choice on its own line as `Answer: X`, where X is the "
                       "letter of one of the options.")

    def items(self, ctx: RunContext) -> list[Item]:
        if ctx.suite == "starter":
            rows = [{**validate_usmle_row(r, f"starter {self.id} line {i + 1}"), "row_index": i}
                    for i, r in enumerate(load_starter(self.id))]
        else:
            rows = load_usmle(resolve("usmle_mental", USMLE_RELPATH, ctx.options.get("usmle_mental_path")))
        rows = apply_limit(rows, ctx, lambda r: r["category"])
        template = "knowledge_faithful" if ctx.mode == "faithful" else "knowledge"
        out = []
        for r in rows:
            prompt = render(template, question=r["question"].strip(), options=format_options(r["options"]))
            out.append(Item(id=f"usmle-{r['row_index']:04d}", prompt=prompt, target=r["answer"],
                            metadata={"option_keys": list(r["options"]), "category": r["category"],
                                      "step": r["step"]}))
        return out

    def parse(self, text: str | None, option_keys: Iterable[str], ctx: RunContext) -> str | None:
        if ctx.mode == "faithful":
            return parse_letter_faithful(text, option_keys)
        return parse_mcq(text, option_keys)

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        return self.parse(text, item.metadata["option_keys"], ctx) is not None

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        pred = self.parse(response, item.metadata["option_keys"], ctx)
        return {"valid": pred is not None, "pred": pred, "correct": pred is not None and pred == item.target}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        if not records:
            return SubtaskResult.not_computed("no items scored", "higher")
        correct = [float(r.score["correct"]) for r in records]
        value, ci = bootstrap_mean(correct, [r.cluster for r in records], seed=ctx.seed, n_boot=ctx.n_boot)
        n_invalid = sum(not r.score["valid"] for r in records)
        metrics = {
            "accuracy": value,
            "invalid_rate": n_invalid / len(records),
            "accuracy_by_category": _group_mean(records, lambda r: r.metadata["category"],
                                                lambda r: float(r.score["correct"])),
            "accuracy_by_step": _group_mean(records, lambda r: r.metadata["step"],
                                            lambda r: float(r.score["correct"])),
            "n_by_category": {k: int(v) for k, v in sorted(
                _count(records, lambda r: r.metadata["category"]).items())},
        }
        notes = ["invalid (unparseable) replies count as wrong"]
        if ctx.suite == "starter":
            notes.append("starter suite: demonstration items, not USMLE-Mental")
        return SubtaskResult(value=value, ci=ci, n=len(records), n_invalid=n_invalid, direction="higher",
                             metrics=metrics, method="rule", notes=notes)


def _count(records: Sequence[Record], key: Callable[[Record], Any]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for r in records:
        out[str(key(r))] += 1
    return dict(out)


# --------------------------------------------------------------------------------- emotion recognition

EU_FIELDS = ("qid", "language", "coarse_category", "finegrained_category", "scenario", "subject",
             "emotion_choices", "emotion_label", "cause_choices", "cause_label")


def validate_eu_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    for key in EU_FIELDS:
        if key not in row:
            raise TrustmhError(f"{where}: missing field {key!r}")
    if row["language"] not in ("en", "zh"):
        raise TrustmhError(f"{where}: field 'language' must be 'en' or 'zh', got {row['language']!r}")
    for kind in ("emotion", "cause"):
        choices = row[f"{kind}_choices"]
        if (not isinstance(choices, list) or not 2 <= len(choices) <= len(LETTERS)
                or not all(isinstance(c, str) for c in choices)):
            raise TrustmhError(f"{where}: field '{kind}_choices' must be a list of 2..10 strings")
        if len(set(choices)) != len(choices):
            raise TrustmhError(f"{where}: field '{kind}_choices' has duplicate choices")
        if row[f"{kind}_label"] not in choices:
            raise TrustmhError(f"{where}: field '{kind}_label' is not one of '{kind}_choices'")
    return row


def load_eu(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path)
    out = [validate_eu_row(r, f"{path} row {i + 1}") for i, r in enumerate(rows)]
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(out):
        key = (str(r["qid"]), r["language"])
        if key in seen:
            raise TrustmhError(f"{path} row {i + 1}: duplicate (qid, language) {key}")
        seen.add(key)
    return out


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
    options = OPTIONS
    per_item = {"faithful": _emotion, "default": _emotion}
    title = "Emotion recognition (EmoBench EU)"
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
