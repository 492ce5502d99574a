"""Per-item primary scores, for the paired bootstrap of the leaderboard (`trustmh.stats.paired`).

A sub-task's primary value is a mean of per-item values only for some sub-tasks and modes; for the others
(macro F1, weighted kappa, retention curves, judge-panel statistics...) there is no per-item score whose mean
is the published value, and we say so instead of inventing one. Each sub-task declares its per-item scores
beside its `aggregate` (`Subtask.per_item`); the leaderboard's tests check their mean against results.json."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.catalogue import lookup
from trustmh.core import NO_ITEM_SCORE, ItemScorer

ItemKey = tuple[str, int]  # (item id, epoch)


def item_scorer(subtask: str, mode: str) -> tuple[ItemScorer | None, str | None]:
    """(scorer, None) or (None, reason the paired bootstrap is not computed for this sub-task)."""
    cls = lookup(subtask)
    if cls is None:
        return None, NO_ITEM_SCORE
    return cls.item_scorer(mode)


def item_scores(subtask: str, records: Sequence[Mapping[str, Any]], results: Mapping[str, Any]
                ) -> tuple[dict[ItemKey, float], dict[ItemKey, str], str | None]:
    """Per-item primary scores of one sub-task's records (items.jsonl rows), their clusters, and the reason
    when there are none."""
    scorer, reason = item_scorer(subtask, str(results.get("mode")))
    if scorer is None:
        return {}, {}, reason
    scores: dict[ItemKey, float] = {}
    clusters: dict[ItemKey, str] = {}
    for rec in records:
        if rec.get("subtask") != subtask:
            continue
        value = scorer(rec, results)
        if value is None or not math.isfinite(value):
            continue
        key = (str(rec["item_id"]), int(rec.get("epoch") or 1))
        scores[key] = value
        clusters[key] = str(rec.get("cluster") or rec["item_id"])
    return scores, clusters, None
