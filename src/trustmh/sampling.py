"""Seeded stratified sampling and `--limit` handling, shared by every sub-task (docs/running.md#sampling).

Faithful mode keeps the original's "head of the file"; default mode draws a seeded sample whose strata
(labels, categories, topics...) keep the data's proportions. Plain Python, no Inspect.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from trustmh.core import Mode, RunContext

T = TypeVar("T")

# How a row's stratum is found: a function of the row, the name of a field (`row[name]`), or a sequence of
# stratum labels parallel to the rows.
Stratum = Callable[[Any], Hashable] | str | Sequence[Hashable]


def _strata(rows: Sequence[T], stratum: Stratum) -> list[Hashable]:
    if isinstance(stratum, str):
        return [row[stratum] for row in rows]  # type: ignore[index]
    if callable(stratum):
        return [stratum(row) for row in rows]
    labels = list(stratum)
    if len(labels) != len(rows):
        raise ValueError(f"{len(labels)} stratum labels for {len(rows)} rows")
    return labels


def allocate(sizes: Sequence[int], n: int, *, min_per_stratum: bool = False) -> list[int]:
    """How many of `n` draws each stratum gets: proportional to `sizes`, largest remainder (Hamilton).

    With `min_per_stratum`, every stratum first gets one draw when `n` allows (so no label vanishes from a
    small sample); the rest follow the same largest-remainder rule. Ties go to the earlier stratum.
    """
    total = sum(sizes)
    n = max(0, min(n, total))
    if n == total:
        return list(sizes)
    quotas = [n * s / total for s in sizes]
    alloc = [0] * len(sizes)
    if min_per_stratum and n >= sum(1 for s in sizes if s > 0):
        alloc = [1 if s > 0 else 0 for s in sizes]
    # Give each remaining draw to the stratum furthest below its quota. From zero this is exactly Hamilton's
    # method (all floors first, then the largest fractional parts); `max` keeps the first of equal values.
    for _ in range(n - sum(alloc)):
        best = max((i for i in range(len(sizes)) if alloc[i] < sizes[i]), key=lambda i: quotas[i] - alloc[i])
        alloc[best] += 1
    return alloc


def stratified_sample(rows: Sequence[T], stratum: Stratum, n: int, seed: int, *,
                      min_per_stratum: bool = False) -> list[T]:
    """A seeded sample of `n` rows without replacement, allocated to strata by `allocate`, in input order.

    Strata are taken in order of first appearance and each is sampled with one `random.Random(seed)`, so
    the sample depends only on the rows, the strata and the seed. `n >= len(rows)` returns every row.
    """
    if n >= len(rows):
        return list(rows)
    if n <= 0:
        return []
    groups: dict[Hashable, list[int]] = {}
    for i, s in enumerate(_strata(rows, stratum)):
        groups.setdefault(s, []).append(i)
    alloc = allocate([len(idx) for idx in groups.values()], n, min_per_stratum=min_per_stratum)
    rng = random.Random(seed)
    chosen: list[int] = []
    for idx, k in zip(groups.values(), alloc, strict=True):
        chosen.extend(rng.sample(idx, k))
    return [rows[i] for i in sorted(chosen)]


def limit_rows(rows: Sequence[T], stratum: Stratum, limit: int | None, mode: Mode, seed: int, *,
               pool: int | None = None, min_per_stratum: bool = False) -> list[T]:
    """The rows a run uses.

    Without a limit: every row, or with `pool` a seeded stratified sample of `pool` rows (the sub-task's
    fixed item count). Faithful `--limit` keeps the head of that; default `--limit` draws a seeded
    stratified sample of `limit` rows from all of them. Always in input order.
    """
    if limit is not None and mode != "faithful":
        return stratified_sample(rows, stratum, max(limit, 0), seed, min_per_stratum=min_per_stratum)
    base = list(rows) if pool is None else stratified_sample(rows, stratum, pool, seed,
                                                             min_per_stratum=min_per_stratum)
    return base if limit is None else base[: max(limit, 0)]


def apply_limit(rows: Sequence[T], ctx: RunContext, stratum: Stratum, *, pool: int | None = None,
                min_per_stratum: bool = False) -> list[T]:
    """`limit_rows` with the run's limit, mode and seed."""
    return limit_rows(rows, stratum, ctx.limit, ctx.mode, ctx.seed, pool=pool, min_per_stratum=min_per_stratum)
