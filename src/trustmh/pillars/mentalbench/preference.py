"""`mentalbench/preference` (default mode; docs/pillars/mentalbench.md#preference): the model's reply set beside
the dataset's human reply to the same person, and the judge asked which of the two serves the person better.
The value is the model's win rate against the human replies, with a Wilson interval.

It is the one judge template of trustmh that compares two replies, so the one whose judge the position probe
of `trustmh judge probe` tests (`compared_order`, docs/judge-probes.md#battery). Which reply is shown first is
fixed per item by a hash of the seed and the conversation (about half each way), so a judge's preference for a
position cancels out of the win rate instead of adding to it; the run also reports how often the judge chose
the first position (`first_position_rate`: 0.5 for a judge without that preference).
"""

from __future__ import annotations

import hashlib
from typing import Any

from trustmh.core import (
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
    truthy,
)
from trustmh.judges.parse import extract_judge_object
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.mentalbench.data import select_rows
from trustmh.pillars.mentalbench.generation import GEN_TEMPLATE, OPTIONS, MentalBenchGeneration
from trustmh.pillars.mentalbench.sources import ORIGINAL, split_reasoning
from trustmh.prompts import render
from trustmh.stats.classification import wilson_interval

TEMPLATE = "mentalbench_preference_judge"
REQUEST = "preference"
OTHER_REPLY = "other_reply"  # the item's human reply, the one the model's is compared with
# True: the model's reply is shown first (reply A). The position probe flips it.
MODEL_FIRST = "model_first"
NO_HUMAN_REPLIES = ("the MentalBench data here has no human replies to compare with (-O mentalbench_path=FILE "
                    "with its response column, or -O mentalbench_starter=1)")
PREFERENCE_SCHEMA = json_object_schema(enums={"better": ("A", "B")}, strings=("rationale",),
                                       optional=("rationale",))


def model_first(seed: int, conv_id: str) -> bool:
    """Which position the model's reply takes on this item: a hash of the seed and the conversation."""
    return hashlib.sha256(f"{seed}:{conv_id}".encode()).digest()[0] % 2 == 0


def parse_preference(text: str | None) -> str | None:
    """The position the judge chose, "A" or "B", from its JSON `better` field (None: unreadable)."""
    obj = extract_judge_object(text)
    better = obj.get("better") if obj else None
    return better.strip().upper() if isinstance(better, str) and better.strip().upper() in ("A", "B") else None


class MentalBenchPreference(Subtask):
    id = "mentalbench/preference"
    task_name = "mentalbench_preference"
    anchors = same_anchors(0.0, 1.0)
    suite = "mentalbench"
    options = OPTIONS
    title = "MentalBench: the model's reply against the human reply, judged side by side"
    datasets = ("mentalbench",)
    judge_use = "yes"
    requires_judge = True
    default_only = True
    modes = ("default",)
    judge_templates = (TEMPLATE,)
    compared_order = MODEL_FIRST  # the item field the position probe flips (certify/probe_battery.py)
    metric_labels = {"wins": "pairs whose preferred reply was the model's",
                     "first_position_rate": "share of verdicts that chose the reply shown first (0.5: no taste "
                                            "for a position)",
                     "model_first_items": "pairs in which the model's reply was shown first"}

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        reason = super().not_computed_reason(ctx)
        if reason is None and not self._rows(ctx):
            return NO_HUMAN_REPLIES
        return reason

    def generation(self, ctx: RunContext) -> Any:
        return MentalBenchGeneration().generation(ctx)

    @staticmethod
    def _rows(ctx: RunContext) -> list[Any]:
        """The run's MentalBench rows (MentalBenchGeneration's data and selection) that have a human reply."""
        return [r for r in select_rows(MentalBenchGeneration().load(ctx), ctx)[0] if r.responses.get(ORIGINAL)]

    def items(self, ctx: RunContext) -> list[Item]:
        rows = self._rows(ctx)
        if not rows:
            raise TrustmhError(f"{self.id}: {NO_HUMAN_REPLIES}")
        return [Item(id=f"{r.conv_id}:preference", prompt=render(GEN_TEMPLATE, context=r.context), cluster=r.conv_id,
                     metadata={"conv_id": r.conv_id, "context": r.context,
                               OTHER_REPLY: split_reasoning(r.responses[ORIGINAL]).text,
                               MODEL_FIRST: model_first(ctx.seed, r.conv_id)})
                for r in rows]

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        text = split_reasoning(response).text
        if not text:
            return []
        other = str(item.metadata.get(OTHER_REPLY) or "")
        first, second = (text, other) if truthy(item.metadata.get(MODEL_FIRST)) else (other, text)
        prompt = render(TEMPLATE, context=item.metadata.get("context") or item.prompt, reply_a=first, reply_b=second)
        return [JudgeRequest(name=REQUEST, prompt=prompt, validate=lambda t: parse_preference(t) is not None,
                             schema=PREFERENCE_SCHEMA)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        first = truthy(item.metadata.get(MODEL_FIRST))
        out: dict[str, Any] = {"valid": bool(split_reasoning(response).text), "model_first": first,
                               "judged": judge_outputs is not None, "judge_valid": None, "chosen": None,
                               "model_preferred": None}
        if judge_outputs is not None and out["valid"]:
            chosen = parse_preference(judge_outputs.get(REQUEST))
            out.update(judge_valid=chosen is not None, chosen=chosen)
            if chosen is not None:  # the verdict about the replies, whichever position each was shown in
                out["model_preferred"] = int((chosen == "A") == first)
        return out

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        read = [r for r in records if r.score.get("model_preferred") is not None]
        n_invalid = len(records) - len(read)
        if not read:
            return SubtaskResult.not_computed("no judged comparison could be read", "higher", n=len(records),
                                              n_invalid=n_invalid)
        wins = sum(int(r.score["model_preferred"]) for r in read)
        firsts = sum(1 for r in read if r.score.get("chosen") == "A")
        return SubtaskResult(
            value=wins / len(read), ci=wilson_interval(wins, len(read)), n=len(read), n_invalid=n_invalid,
            direction="higher", method="judge",
            metrics={"wins": wins, "first_position_rate": firsts / len(read),
                     "model_first_items": sum(1 for r in read if r.score.get("model_first"))},
            notes=["win rate of the model's reply against the dataset's human reply (Wilson 95%); each reply "
                   "shown first on about half the items, so a judge's position preference cancels out"])
