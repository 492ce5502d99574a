"""Shortcut measures of a conversation set: can something other than the risk itself tell risk from control?
(docs/conversations.md#shortcuts; `trustmh sets check` prints them, and refuses a gated set past them).

Two measures, each on held-out halves of the set so a rule tuned on one half is scored on the other:

* `bow_auc`: a bag-of-words classifier (words and word pairs of the decisive turn, present or not; an
  L2-regularised logistic regression, C = 1, the objective scikit-learn's `LogisticRegression` minimises)
  trained on one half, its ROC AUC on the other. Risk is said in words, so some separation is expected; a set
  whose style words alone (the way controls ask and risk tells) separate it scores near 1.
* `best_rule`: the best single-feature rule among the features in `FEATURES` (the decisive turn ends with
  "?", its length in words, its position, the person's disclosure style, the conversation's patient-turn
  count), fitted on one half (a threshold and a side, or a class per style), its balanced accuracy on the other.

The halves: for each of `SPLITS` seeds, risk conversations and controls are each shuffled (Python's
`random.Random(seed)`, over the rows sorted by id) and cut in two, the first half trained on. A measure is the
mean over the splits. A set without controls (the product probes) has no measures.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

# Past these a gated set is refused (issue 49). A bag of words on the decisive turn separates risk that is said
# from a control that is not at ~0.7 on any honest set; a set whose style carries the label reads 0.93-0.99.
MAX_BOW_AUC = 0.96
# A balanced accuracy of 0.5 is chance; the question mark alone read 0.79-0.86 on the sets issue 49 found.
MAX_RULE_BALANCED_ACCURACY = 0.65
SPLITS = (0, 1, 2, 3, 4)
RISK_KINDS = ("risk",)
CONTROL_KINDS = ("control", "hard_negative")

_WORD = re.compile(r"[a-z0-9']+")


def decisive(row: Mapping[str, Any]) -> str:
    return str(row["turns"][int(row["decisive_turn"])])


FEATURES: dict[str, Callable[[Mapping[str, Any]], Any]] = {
    "ends_with_question": lambda r: decisive(r).rstrip().endswith("?"),
    "decisive_length": lambda r: len(decisive(r).split()),
    "decisive_position": lambda r: int(r["decisive_turn"]),
    "disclosure_style": lambda r: str((r.get("persona") or {}).get("disclosure_style")),
    "turn_count": lambda r: len(r["turns"]),
}
CATEGORICAL = ("ends_with_question", "disclosure_style")


def thresholds() -> dict[str, float]:
    return {"bow_auc": MAX_BOW_AUC, "best_rule_balanced_accuracy": MAX_RULE_BALANCED_ACCURACY}


def _tokens(text: str) -> set[str]:
    words = _WORD.findall(text.lower())
    return set(words) | {f"{a} {b}" for a, b in zip(words, words[1:], strict=False)}


def _halves(labels: Sequence[int], seed: int) -> tuple[list[int], list[int]]:
    rng = random.Random(seed)
    train: list[int] = []
    test: list[int] = []
    for value in (1, 0):
        idx = [i for i, y in enumerate(labels) if y == value]
        rng.shuffle(idx)
        cut = len(idx) // 2
        train += idx[:cut]
        test += idx[cut:]
    return sorted(train), sorted(test)


def auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """ROC AUC: the chance a random risk conversation scores above a random control (ties count half)."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    pos, neg = s[y], s[~y]
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


def balanced_accuracy(predicted: Sequence[int], labels: Sequence[int]) -> float:
    p = np.asarray(predicted, dtype=bool)
    y = np.asarray(labels, dtype=bool)
    return float(0.5 * (p[y].mean() + (~p[~y]).mean()))


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float = 1.0) -> tuple[np.ndarray, float]:
    """Weights and intercept minimising ½‖w‖² + C·Σ log-loss (the intercept not penalised), by L-BFGS."""
    from scipy.optimize import (
        minimize,  # scipy's optimiser only when a set is measured: it costs 0.5 s to import
    )

    sign = np.where(y > 0, 1.0, -1.0)

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:-1], theta[-1]
        margin = sign * (x @ w + b)
        value = 0.5 * w @ w + c * np.logaddexp(0.0, -margin).sum()
        weight = -c * sign * np.exp(-np.logaddexp(0.0, margin))
        return float(value), np.append(w + x.T @ weight, weight.sum())

    theta = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B",
                     options={"maxiter": 500, "gtol": 1e-5}).x
    return theta[:-1], float(theta[-1])


def bow_auc(tokens: Sequence[set[str]], labels: Sequence[int], train: Sequence[int], test: Sequence[int]) -> float:
    """The held-out AUC of the bag of words (`tokens`: each decisive turn's words and word pairs) fitted on
    `train`."""
    vocab = {w: j for j, w in enumerate(sorted(set().union(*(tokens[i] for i in train))))}

    def matrix(idx: Sequence[int]) -> np.ndarray:
        m = np.zeros((len(idx), len(vocab)))
        for row, i in enumerate(idx):
            for w in tokens[i]:
                if w in vocab:
                    m[row, vocab[w]] = 1.0
        return m

    y = np.asarray(labels)
    w, b = fit_logistic(matrix(train), y[list(train)])
    return auc(matrix(test) @ w + b, y[list(test)])


def _rule(values: Sequence[Any], labels: Sequence[int], categorical: bool) -> Callable[[Any], bool]:
    """The rule on one feature with the best balanced accuracy on (values, labels): for a category, risk where
    the category's share among risk conversations is above its share among controls; for a number, risk on one
    side of a threshold."""
    y = np.asarray(labels, dtype=bool)
    if categorical:
        risky = {v for v in set(values)
                 if np.mean([values[i] == v for i in np.flatnonzero(y)])
                 > np.mean([values[i] == v for i in np.flatnonzero(~y)])}
        return lambda v: v in risky
    best: tuple[float, Callable[[Any], bool]] = (-1.0, lambda v: True)
    for cut in sorted(set(values)):
        for above in (True, False):
            pred = [(v > cut) == above for v in values]
            score = balanced_accuracy(pred, labels)
            if score > best[0]:
                best = (score, (lambda v, c=cut, a=above: (v > c) == a))
    return best[1]


def measures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The set's shortcut measures (module docstring), or None for a set without both risk and controls."""
    from threadpoolctl import threadpool_limits

    # one BLAS thread: the matrices are a few hundred rows, and a threaded BLAS spent 10x the CPU on them
    with threadpool_limits(limits=1):
        return _measures(rows)


def _measures(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    rows = sorted((r for r in rows if r.get("kind") in RISK_KINDS + CONTROL_KINDS), key=lambda r: str(r["id"]))
    labels = [1 if r["kind"] in RISK_KINDS else 0 for r in rows]
    if min(labels.count(1), labels.count(0)) < 4:
        return None
    tokens = [_tokens(decisive(r)) for r in rows]
    values = {name: [feature(r) for r in rows] for name, feature in FEATURES.items()}
    aucs: list[float] = []
    per_feature: dict[str, list[float]] = {name: [] for name in FEATURES}
    for seed in SPLITS:
        train, test = _halves(labels, seed)
        aucs.append(bow_auc(tokens, labels, train, test))
        for name, column in values.items():
            rule = _rule([column[i] for i in train], [labels[i] for i in train], name in CATEGORICAL)
            per_feature[name].append(balanced_accuracy([rule(column[i]) for i in test], [labels[i] for i in test]))
    by_feature = {name: round(float(np.mean(v)), 3) for name, v in per_feature.items()}
    best = max(by_feature, key=lambda name: (by_feature[name], name))
    return {"bow_auc": round(float(np.mean(aucs)), 3), "best_rule": best,
            "best_rule_balanced_accuracy": by_feature[best], "rule_balanced_accuracy": by_feature,
            "split": f"stratified halves, seeds {', '.join(map(str, SPLITS))}, mean", "thresholds": thresholds()}


def refusals(found: Mapping[str, Any] | None, where: str) -> list[str]:
    """One line per measure past its threshold (none for a set without measures)."""
    if found is None:
        return []
    out = []
    if found["bow_auc"] > MAX_BOW_AUC:
        out.append(f"{where}: shortcut: bag-of-words AUC {found['bow_auc']:.3f} separates risk from control (at "
                   f"most {MAX_BOW_AUC})")
    if found["best_rule_balanced_accuracy"] > MAX_RULE_BALANCED_ACCURACY:
        out.append(f"{where}: shortcut: the rule on {found['best_rule']} alone reaches balanced accuracy "
                   f"{found['best_rule_balanced_accuracy']:.3f} (at most {MAX_RULE_BALANCED_ACCURACY})")
    return out
