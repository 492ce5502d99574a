"""Paired bootstrap on shared items: share of replicates that keep two models' order."""

from __future__ import annotations

import random

import pytest

from trustmh.stats.paired import paired_order_share


def _scores(p: float, n: int, seed: int) -> dict[tuple[str, int], float]:
    rng = random.Random(seed)
    return {(f"i{k}", 1): float(rng.random() < p) for k in range(n)}


def test_clear_gap_holds_and_no_gap_does_not() -> None:
    a, b = _scores(0.9, 200, 1), _scores(0.3, 200, 2)
    strong = paired_order_share(a, b, seed=0, n_boot=500)
    assert strong.share is not None
    assert strong.share > 0.99
    assert strong.n_shared == 200
    assert strong.mean_a == pytest.approx(sum(a.values()) / 200)
    same = paired_order_share(a, dict(a), seed=0, n_boot=500)
    assert same.share == 0.0  # identical replies: a is never strictly ahead


def test_pairing_uses_shared_items_only_and_direction() -> None:
    a = {("x", 1): 1.0, ("y", 1): 1.0, ("z", 1): 0.0, ("only-a", 1): 0.0}
    b = {("x", 1): 0.0, ("y", 1): 0.0, ("z", 1): 0.0, ("only-b", 1): 1.0}
    res = paired_order_share(a, b, seed=3, n_boot=400)
    assert res.n_shared == 3
    assert res.mean_a == pytest.approx(2 / 3)
    assert res.mean_b == 0.0
    lower = paired_order_share(b, a, direction="lower", seed=3, n_boot=400)
    assert lower.share == pytest.approx(res.share)  # b lower is better = a higher is better
    assert paired_order_share(a, b, seed=3, n_boot=400).share == res.share  # seeded


def test_clusters_are_resampled_whole() -> None:
    # two clusters; a wins every item of one, loses every item of the other
    a = {(f"i{k}", 1): float(k < 50) for k in range(100)}
    b = {(f"i{k}", 1): float(k >= 50) * 0.9 for k in range(100)}
    clusters = {key: ("c1" if int(key[0][1:]) < 50 else "c2") for key in a}
    by_item = paired_order_share(a, b, seed=0, n_boot=1000)
    by_cluster = paired_order_share(a, b, clusters, seed=0, n_boot=1000)
    # with 2 clusters, a draw of c2 twice (prob 1/4) reverses the order; per item it almost never does
    assert by_item.share is not None
    assert by_item.share > 0.6
    assert by_cluster.share is not None
    assert by_cluster.share < 0.85


def test_too_few_shared_items_is_not_computed() -> None:
    res = paired_order_share({("a", 1): 1.0}, {("a", 1): 0.0, ("b", 1): 1.0})
    assert res.share is None
    assert "1 shared" in (res.reason or "")
