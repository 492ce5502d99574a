"""Crisis pillar helpers shared by the sub-tasks' metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def confusion(gold: Sequence[Any], pred: Sequence[Any], labels: Sequence[Any]) -> dict[str, Any]:
    """Rows = gold, columns = predicted; invalid predictions are not in the matrix (see invalid_rate)."""
    index = {lab: i for i, lab in enumerate(labels)}
    m = [[0] * len(labels) for _ in labels]
    for a, b in zip(gold, pred, strict=True):
        if b is not None and a in index and b in index:
            m[index[a]][index[b]] += 1
    return {"labels": list(labels), "matrix": m}


def ratio_or_none(num: int, den: int) -> float | None:
    return num / den if den else None
