"""The shared seeded stratified sampler and `--limit` handling (trustmh.sampling)."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest

from trustmh.core import RunContext
from trustmh.sampling import allocate, apply_limit, limit_rows, stratified_sample


def hamilton(sizes: list[int], n: int) -> list[int]:
    """Textbook largest remainder, written independently: floors, then the largest fractional parts."""
    total = sum(sizes)
    quotas = [n * s / total for s in sizes]
    alloc = [math.floor(q) for q in quotas]
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - alloc[i]), i))
    for i in order[: n - sum(alloc)]:
        alloc[i] += 1
    return alloc


def test_allocate_is_largest_remainder() -> None:
    assert allocate([10, 6, 4], 10) == [5, 3, 2]
    assert allocate([60, 30, 10], 20) == [12, 6, 2]
    assert allocate([5, 5, 5], 4) == [2, 1, 1]  # equal remainders: the earlier stratum first
    assert allocate([3, 1], 10) == [3, 1]  # more than there is: everything
    rng = random.Random(0)
    for _ in range(300):
        sizes = [rng.randint(1, 40) for _ in range(rng.randint(1, 7))]
        n = rng.randint(0, sum(sizes))
        got = allocate(sizes, n)
        assert got == hamilton(sizes, n), (sizes, n)
        assert sum(got) == n
        assert all(0 <= g <= s for g, s in zip(got, sizes, strict=True))


def test_allocate_min_per_stratum() -> None:
    assert allocate([20, 5, 2], 6) == [5, 1, 0]  # a and c tie on .44: a, the earlier, wins
    assert allocate([20, 5, 2], 6, min_per_stratum=True) == [4, 1, 1]
    assert allocate([100, 1, 1], 3, min_per_stratum=True) == [1, 1, 1]
    assert allocate([100, 1, 1], 2, min_per_stratum=True) == allocate([100, 1, 1], 2)  # limit too small
    rng = random.Random(1)
    for _ in range(300):
        sizes = [rng.randint(1, 40) for _ in range(rng.randint(1, 7))]
        n = rng.randint(len(sizes), sum(sizes))
        got = allocate(sizes, n, min_per_stratum=True)
        assert sum(got) == n, (sizes, n)
        assert all(1 <= g <= s for g, s in zip(got, sizes, strict=True)), (sizes, n)


def test_stratified_sample_seeded_proportional_in_order() -> None:
    rows = [{"i": i, "k": "abc"[min(i // 10, 2)]} for i in range(27)]  # 10 a, 10 b, 7 c
    s = stratified_sample(rows, "k", 9, seed=5)
    assert s == stratified_sample(rows, "k", 9, seed=5)
    assert any(stratified_sample(rows, "k", 9, seed=x) != s for x in range(6, 12))
    assert Counter(r["k"] for r in s) == dict(zip("abc", allocate([10, 10, 7], 9), strict=True))
    assert [r["i"] for r in s] == sorted(r["i"] for r in s)
    assert len({r["i"] for r in s}) == 9
    # the three ways of naming the stratum agree
    assert s == stratified_sample(rows, lambda r: r["k"], 9, seed=5)
    assert s == stratified_sample(rows, [r["k"] for r in rows], 9, seed=5)
    assert stratified_sample(rows, "k", 27, seed=5) == rows
    assert stratified_sample(rows, "k", 0, seed=5) == []
    with pytest.raises(ValueError, match="2 stratum labels for 27 rows"):
        stratified_sample(rows, ["a", "b"], 5, seed=0)


def test_stratified_sample_min_per_stratum_covers_small_strata() -> None:
    rows = list("a" * 30 + "b" * 2 + "c")
    for seed in range(10):
        assert set(stratified_sample(rows, lambda r: r, 3, seed, min_per_stratum=True)) == {"a", "b", "c"}
    assert set(stratified_sample(rows, lambda r: r, 3, 0)) == {"a"}


def test_limit_rows_and_apply_limit() -> None:
    rows = [(i, i % 3) for i in range(30)]
    by = lambda r: r[1]  # noqa: E731
    assert limit_rows(rows, by, None, "default", 1) == rows
    assert limit_rows(rows, by, 4, "faithful", 1) == rows[:4]
    assert limit_rows(rows, by, -1, "faithful", 1) == []
    assert limit_rows(rows, by, -1, "default", 1) == []
    assert limit_rows(rows, by, 6, "default", 1) == stratified_sample(rows, by, 6, 1)
    pool = stratified_sample(rows, by, 12, 1)
    assert limit_rows(rows, by, None, "faithful", 1, pool=12) == pool
    assert limit_rows(rows, by, 5, "faithful", 1, pool=12) == pool[:5]
    assert limit_rows(rows, by, 5, "default", 1, pool=12) == stratified_sample(rows, by, 5, 1)
    ctx = RunContext(mode="default", seed=4, limit=7)
    assert apply_limit(rows, ctx, by) == stratified_sample(rows, by, 7, 4)
    assert apply_limit(rows, RunContext(mode="faithful", limit=7), by) == rows[:7]
