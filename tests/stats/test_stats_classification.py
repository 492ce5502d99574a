"""The shared macro-F1 against sklearn's."""

from __future__ import annotations

import random

import pytest
from sklearn.metrics import f1_score

from trustmh.stats.classification import macro_f1


def test_macro_f1_matches_sklearn() -> None:
    rng = random.Random(0)
    for _ in range(200):
        classes = list("abcde")[: rng.randint(1, 5)]
        n = rng.randint(1, 30)
        gold = [rng.choice(classes) for _ in range(n)]
        pred = [rng.choice([*classes, "z", None]) for _ in range(n)]
        labels = rng.sample([*classes, "z"], rng.randint(1, len(classes) + 1))
        expected = f1_score(gold, ["INVALID" if p is None else p for p in pred], labels=labels, average="macro",
                            zero_division=0)
        assert macro_f1(gold, pred, labels) == pytest.approx(expected)


def test_macro_f1_by_hand() -> None:
    # a: tp1 fp0 fn1 -> 2/3; b: tp0 fp1 fn0 -> 0; c: nothing -> 0
    assert macro_f1(["a", "a"], ["a", "b"], ["a", "b", "c"]) == pytest.approx(2 / 9)
    assert macro_f1([1, 2], [1, None], [1, 2]) == pytest.approx(0.5)  # invalid: a miss, not a class
    assert macro_f1(["a"], ["a"], []) is None
