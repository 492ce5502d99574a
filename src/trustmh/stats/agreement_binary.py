"""A binary judge against human labels on the harmful class: sensitivity and specificity with Wilson
intervals (issue 23: the figures a judge certificate holds a binary judge to).

Harmful is the positive class. Sensitivity = TP / (TP + FN), the share of the human-harmful items the judge
flags; specificity = TN / (TN + FP), the share of the human-harmless items it leaves alone. Intervals are
Wilson score intervals from `trustmh.stats.classification.wilson_interval` (the one Wilson in trustmh; the
gate uses it for counted rates too): they stay inside [0, 1] and keep close to nominal coverage for the
small counts a reference set has, where the Wald interval does not.

Missing values: an item without a human label (None) is left out and counted (`n_unlabelled`). An item the
judge gave no usable verdict (None) is counted against the judge (`n_judge_invalid`): a miss on a harmful
item and a false alarm on a harmless one, so a judge failure never improves a certificate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trustmh.stats.classification import wilson_interval


@dataclass(frozen=True)
class Proportion:
    """count/total with its Wilson interval; value and ci None when total is 0 (see `reason`)."""

    count: int
    total: int
    value: float | None
    ci: tuple[float, float] | None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "total": self.total, "value": self.value,
                "ci": list(self.ci) if self.ci is not None else None, "reason": self.reason}


def proportion(count: int, total: int, level: float = 0.95, *, empty: str = "no item") -> Proportion:
    if total <= 0:
        return Proportion(count, total, None, None, empty)
    return Proportion(count, total, count / total, wilson_interval(count, total, level))


@dataclass(frozen=True)
class BinaryJudgeAgreement:
    tp: int
    fn: int
    tn: int
    fp: int
    sensitivity: Proportion
    specificity: Proportion
    n: int  # items with a human label
    n_unlabelled: int
    n_judge_invalid: int
    level: float

    def to_json(self) -> dict[str, Any]:
        return {"tp": self.tp, "fn": self.fn, "tn": self.tn, "fp": self.fp,
                "sensitivity": self.sensitivity.to_json(), "specificity": self.specificity.to_json(),
                "n": self.n, "n_unlabelled": self.n_unlabelled, "n_judge_invalid": self.n_judge_invalid,
                "level": self.level}


def _flag(x: object, name: str) -> bool | None:
    if x is None:
        return None
    if isinstance(x, bool) or x in (0, 1):
        return bool(x)
    raise ValueError(f"{name} labels must be 0/1, True/False or None, not {x!r}")


def binary_judge_agreement(human: Sequence[object], judge: Sequence[object],
                           level: float = 0.95) -> BinaryJudgeAgreement:
    """Sensitivity and specificity of `judge` on the harmful class (1/True), with Wilson intervals, against
    `human` on the same items in the same order. Labels: 0/1, False/True, None = missing (see the module
    docstring for how each side's None counts)."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    tp = fn = tn = fp = n_unlabelled = n_invalid = 0
    for h_raw, j_raw in zip(human, judge, strict=True):
        h, j = _flag(h_raw, "human"), _flag(j_raw, "judge")
        if h is None:
            n_unlabelled += 1
            continue
        if j is None:
            n_invalid += 1
            j = not h  # against the judge: a miss if harmful, a false alarm if not
        if h:
            tp, fn = tp + j, fn + (not j)
        else:
            fp, tn = fp + j, tn + (not j)
    return BinaryJudgeAgreement(
        tp, fn, tn, fp,
        proportion(tp, tp + fn, level, empty="no item the humans labelled harmful"),
        proportion(tn, tn + fp, level, empty="no item the humans labelled harmless"),
        tp + fn + tn + fp, n_unlabelled, n_invalid, level)
