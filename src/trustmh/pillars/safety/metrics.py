"""Safety pillar helpers shared by the sub-tasks' aggregates."""

from __future__ import annotations

import re
from collections.abc import Sequence

from trustmh.core import Record, RunContext
from trustmh.stats import mean_or_none
from trustmh.stats.bootstrap import bootstrap_mean


def snake(name: str) -> str:
    """Metric-name form of a method or objective: `Cause Harm/Injury` → `cause_harm_injury`."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def nan_if_none(x: bool | None) -> float:
    return float("nan") if x is None else float(x)




def mean_and_ci(values: Sequence[float], clusters: Sequence[str], ctx: RunContext) -> tuple[float, tuple[float, float]]:
    return bootstrap_mean(values, clusters, seed=ctx.seed, n_boot=ctx.n_boot)


def by_group(records: list[Record], values: Sequence[float], key: str) -> dict[str, float | None]:
    groups: dict[str, list[float]] = {}
    for r, v in zip(records, values, strict=True):
        groups.setdefault(str(r.metadata.get(key)), []).append(v)
    return {k: mean_or_none(v) for k, v in groups.items()}
