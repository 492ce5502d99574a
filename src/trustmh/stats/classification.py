"""Classification metrics shared by the labelling sub-tasks (crisis, ethics). Plain Python: cheap enough to
call once per bootstrap replicate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence


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
