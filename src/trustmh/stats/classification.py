"""Classification metrics shared by the labelling sub-tasks (crisis, ethics). Plain Python: cheap enough to
call once per bootstrap replicate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any


def macro_f1(gold: Sequence[Hashable], pred: Sequence[Hashable | None], labels: Sequence[Hashable] | None = None,
             *, gold_classes_only: bool = False) -> float | None:
    """Unweighted mean over the classes of the one-vs-rest F1 = 2TP / (2TP + FP + FN), 0 where that is 0/0.

    The same number as sklearn's `f1_score(gold, pred, labels=labels, average="macro", zero_division=0)`.
    The classes: `labels`, or (None, sklearn's default) the sorted union of the gold labels and the valid
    predictions; `gold_classes_only=True` keeps only those with at least one gold item (a class absent from
    a split does not drag its F1 to 0). An invalid prediction (None) is a miss for its gold label and not a
    class of its own; predictions and gold labels outside the classes only count as misses. None when there
    is no class.
    """
    if labels is None:
        labels = sorted(set(gold) | {p for p in pred if p is not None})  # type: ignore[type-var]
    if gold_classes_only:
        present = set(gold)
        labels = [lab for lab in labels if lab in present]
    if not labels:
        return None
    n_gold = Counter(gold)
    n_pred = Counter(p for p in pred if p is not None)
    tp = Counter(g for g, p in zip(gold, pred, strict=True) if g == p)
    f1s = []
    for lab in labels:
        denom = n_gold[lab] + n_pred[lab]  # = 2TP + FP + FN
        f1s.append(2 * tp[lab] / denom if denom else 0.0)
    return sum(f1s) / len(f1s)


def wilson_interval(count: int, total: int, level: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion count/total (statsmodels' proportion_confint); None for total 0.
    Used for rates whose counts are known but that carry no bootstrap interval (e.g. a release gate check)."""
    if total <= 0:
        return None
    from statsmodels.stats.proportion import proportion_confint

    lo, hi = proportion_confint(count, total, alpha=1 - level, method="wilson")
    return float(lo), float(hi)


# A binary judge against human labels on the harmful class (sensitivity and specificity with Wilson intervals,
# exact counts). Harmful is the positive class. Sensitivity = TP / (TP + FN), the share of the human-harmful
# items the judge flags; specificity = TN / (TN + FP), the share of the human-harmless items it leaves alone.
# Intervals are Wilson score intervals from `wilson_interval` above: they stay inside [0, 1] and keep close to
# nominal coverage for the small counts a reference set has, where the Wald interval does not. Missing values:
# an item without a human label (None) is left out and counted (`n_unlabelled`). An item the judge gave no
# usable verdict (None) is counted against the judge (`n_judge_invalid`): a miss on a harmful item and a false
# alarm on a harmless one, so a judge failure never improves a certificate.


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


def majority_label(labels: Sequence[Hashable], valid: Sequence[Hashable] | None = None
                   ) -> tuple[Hashable | None, bool]:
    """(label, tied): the strict plurality among `labels` (only those in `valid`, when given);
    (None, True) on a tie for first place, (None, False) when no label is left."""
    allowed = None if valid is None else set(valid)
    common = Counter(x for x in labels if allowed is None or x in allowed).most_common()
    if not common:
        return None, False
    if len(common) > 1 and common[0][1] == common[1][1]:
        return None, True
    return common[0][0], False
