"""`reliability/knowledge` (USMLE-Mental): the MCQ sub-task, its faithful letter parser and per-item score."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from trustmh.core import Item, Record, RunContext, Subtask, SubtaskResult, same_anchors
from trustmh.data import resolve
from trustmh.judges.parse import parse_mcq, strip_reasoning
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.reliability.common import count_by, format_options, group_mean
from trustmh.pillars.reliability.data import MCQ_OPTIONS, USMLE_RELPATH, load_usmle, validate_usmle_row
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.starter import load_starter
from trustmh.stats.bootstrap import bootstrap_mean

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


def _correct(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    return float(bool(rec["score"].get("correct")))


class Knowledge(Subtask):
    id = "reliability/knowledge"
    task_name = "knowledge"
    anchors = same_anchors(0.189, 1.0)
    options = MCQ_OPTIONS
    per_item = {"faithful": _correct, "default": _correct}
    title = "Psychiatric knowledge (USMLE-Mental)"
    metric_labels = {"accuracy": "share of questions answered with the right option",
                     "invalid_rate": "share of replies naming no option"}
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

    def answer_schema(self, item: Item, ctx: RunContext) -> dict[str, Any] | None:
        if ctx.mode == "faithful":
            return None  # the original's letter parser reads text, not JSON
        return json_object_schema(enums={"answer": item.metadata["option_keys"]})  # parse_mcq's JSON `answer`

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
            "accuracy_by_category": group_mean(records, lambda r: r.metadata["category"],
                                                lambda r: float(r.score["correct"])),
            "accuracy_by_step": group_mean(records, lambda r: r.metadata["step"],
                                            lambda r: float(r.score["correct"])),
            "n_by_category": {k: int(v) for k, v in sorted(
                count_by(records, lambda r: r.metadata["category"]).items())},
        }
        notes = ["invalid (unparseable) replies count as wrong"]
        if ctx.suite == "starter":
            notes.append("starter suite: demonstration items, not USMLE-Mental")
        return SubtaskResult(value=value, ci=ci, n=len(records), n_invalid=n_invalid, direction="higher",
                             metrics=metrics, method="rule", notes=notes)
