"""Helpers shared by the Reliability sub-tasks (and by fairness and robustness): option letters, group
means, seeded randomness, the classification metrics and the demo-judge note."""

from __future__ import annotations

import hashlib
import random
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from trustmh.core import Record

Perturb = Callable[[str, str], str]


def seeded_rng(*parts: object) -> random.Random:
    """A `random.Random` keyed by the parts (stable across runs and Python versions)."""
    key = "|".join(str(p) for p in parts).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


INVALID_LABEL = "invalid"


def classification_counts(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-hot (n, L) matrices: gold, prediction (all-zero row when invalid or unknown), true positives."""
    index = {lab: j for j, lab in enumerate(labels)}
    g = np.zeros((len(gold), len(labels)))
    p = np.zeros((len(gold), len(labels)))
    for i, (a, b) in enumerate(zip(gold, pred, strict=True)):
        g[i, index[a]] = 1.0
        if b is not None and b in index:
            p[i, index[b]] = 1.0
    return g, p, g * p


def f1_from_totals(tp: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> dict[str, np.ndarray]:
    """accuracy, weighted F1 and macro-F1 from per-label totals (..., L), as sklearn computes them with
    `labels` = labels seen in gold or predictions and `zero_division=0` (invalid replies count as wrong)."""
    n = gold.sum(axis=-1)
    denom = gold + pred
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
        present = denom > 0
        macro = (f1 * present).sum(axis=-1) / present.sum(axis=-1)
        weighted = (f1 * gold).sum(axis=-1) / n
        acc = tp.sum(axis=-1) / n
    return {"accuracy": acc, "weighted_f1": weighted, "macro_f1": macro}


def classification_metrics(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
                           ) -> dict[str, Any]:
    g, p, tp = classification_counts(gold, pred, labels)
    m = f1_from_totals(tp.sum(0), g.sum(0), p.sum(0))
    index = {lab: j for j, lab in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels) + 1), dtype=int)
    for a, b in zip(gold, pred, strict=True):
        matrix[index[a], index[b] if b in index else len(labels)] += 1
    return {"accuracy": float(m["accuracy"]), "weighted_f1": float(m["weighted_f1"]),
            "macro_f1": float(m["macro_f1"]), "n": len(gold),
            "invalid_rate": float(np.mean([b is None for b in pred])) if pred else None,
            "confusion": {"labels": list(labels), "columns": [*labels, INVALID_LABEL],
                          "matrix": matrix.tolist()}}


LETTERS = "ABCDEFGHIJ"


# -------------------------------------------------------------------------------------------- MCQ helpers

def letters_for(n: int) -> list[str]:
    if not 1 <= n <= len(LETTERS):
        raise ValueError(f"{n} options: only 1..{len(LETTERS)} can be lettered A..J")
    return list(LETTERS[:n])


def format_options(options: dict[str, str]) -> str:
    """`X. text` lines, in key order."""
    return "\n".join(f"{k}. {v}" for k, v in options.items())


def group_mean(records: Sequence[Record], key: Callable[[Record], Any],
                value: Callable[[Record], float]) -> dict[str, float]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in records:
        groups[str(key(r))].append(value(r))
    return {k: float(np.mean(v)) for k, v in sorted(groups.items())}


def count_by(records: Sequence[Record], key: Callable[[Record], Any]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for r in records:
        out[str(key(r))] += 1
    return dict(out)
