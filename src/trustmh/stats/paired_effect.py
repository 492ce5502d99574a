"""The effect of one change on the same items, as a paired difference with a 95% interval (docs/judge-probes.md):
a judge's verdicts on each item before and after the change.

* Labels (0/1): the change in the rate of 1s, Newcombe's hybrid-score interval for paired proportions (his
  method 10, without continuity correction), and McNemar's exact test on the discordant pairs.
* Scores: the mean per-item difference with a seeded paired bootstrap percentile interval (items resampled
  as pairs).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.stats import binomtest

from trustmh.stats.bootstrap import percentile_ci
from trustmh.stats.classification import wilson_interval


def paired_label_difference(before: Sequence[int], after: Sequence[int]) -> dict[str, Any]:
    """Rate of 1s after minus before on the same items: point, Newcombe's interval, McNemar's exact p and the
    discordant counts (`up`: 0 became 1, `down`: 1 became 0)."""
    n = len(before)
    a = sum(1 for x, y in zip(before, after, strict=True) if x and y)
    down = sum(1 for x, y in zip(before, after, strict=True) if x and not y)
    up = sum(1 for x, y in zip(before, after, strict=True) if not x and y)
    d = n - a - down - up
    if n == 0:
        return {"n": 0, "effect": None, "ci": None, "p_value": None, "up": 0, "down": 0}
    p1, p2 = (a + down) / n, (a + up) / n
    l1, u1 = wilson_interval(a + down, n) or (0.0, 1.0)
    l2, u2 = wilson_interval(a + up, n) or (0.0, 1.0)
    denominator = (a + down) * (up + d) * (a + up) * (down + d)
    phi = (a * d - down * up) / math.sqrt(denominator) if denominator else 0.0
    lower = math.sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    upper = math.sqrt(max(0.0, (u2 - p2) ** 2 - 2 * phi * (u2 - p2) * (p1 - l1) + (p1 - l1) ** 2))
    effect = p2 - p1
    p_value = 1.0 if up + down == 0 else float(binomtest(up, up + down, 0.5).pvalue)
    return {"n": n, "effect": effect, "ci": [max(-1.0, effect - lower), min(1.0, effect + upper)],
            "p_value": p_value, "up": up, "down": down, "method": "Newcombe (paired, method 10); McNemar exact"}


def paired_score_difference(before: Sequence[float], after: Sequence[float], *, seed: int,
                            n_boot: int = 2000) -> dict[str, Any]:
    """Mean of after minus before on the same items, with a seeded paired bootstrap percentile interval."""
    diff = np.asarray(after, dtype=float) - np.asarray(before, dtype=float)
    n = len(diff)
    if n == 0:
        return {"n": 0, "effect": None, "ci": None}
    rng = np.random.default_rng(seed)
    replicates = diff[rng.integers(0, n, size=(n_boot, n))].mean(axis=1)
    lo, hi = percentile_ci(replicates)
    return {"n": n, "effect": float(diff.mean()), "ci": [float(lo), float(hi)], "n_changed": int((diff != 0).sum()),
            "method": f"paired bootstrap of the mean difference ({n_boot} replicates, seed {seed})"}
