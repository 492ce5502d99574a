"""What the three ELEPHANT/PAS sub-tasks share: a free reply to the post itself, with no framing."""

from __future__ import annotations

from trustmh.core import GenConfig, Item, RunContext, Subtask
from trustmh.pillars.sycophancy.data import DATASET
from trustmh.pillars.sycophancy.parse import reply_text


class Elephant(Subtask):
    datasets = (DATASET,)
    format_reminder = None  # free replies: nothing to re-ask for

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0, max_tokens=1024)

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        return bool(reply_text(text))
