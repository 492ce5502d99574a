"""Sample size and power for a planned run: interval widths and the items needed (`trustmh plan`).

Normal approximations at a two-sided 95% level (the Wilson width for a rate) and 80% power.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

# z for a two-sided 95% interval / test at alpha 0.05, and for 80% power.
Z_95 = 1.959963984540054
Z_80 = 0.8416212335729143


def wilson_width(rate: float, n: int) -> float | None:
    """Width of the Wilson 95% interval of a proportion observed at `rate` over n items."""
    if n <= 0:
        return None
    z2 = Z_95 * Z_95
    return 2 * Z_95 * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / (1 + z2 / n)


def normal_width(sd: float, n: int) -> float | None:
    return None if n <= 0 else 2 * Z_95 * sd / math.sqrt(n)


def items_for_width(sd: float, width: float) -> int:
    """Items for a 95% interval of total width `width` around a mean with this per-item SD (normal
    approximation; for a rate, sd = sqrt(p(1-p)))."""
    return max(1, math.ceil((2 * Z_95 * sd / width) ** 2))


def items_for_difference(sd: float, difference: float) -> int:
    """Items per model to detect a difference `difference` between two models' means at 80% power, two-sided
    alpha 0.05, two independent samples with this per-item SD (conservative for two models on the same
    items, whose paired comparison needs fewer)."""
    return max(1, math.ceil(2 * ((Z_95 + Z_80) * sd / difference) ** 2))


def weighted_cluster_size(sizes: Sequence[int]) -> float:
    """Σm² / Σm: the mean cluster size as an item sees it (the size that enters the design effect when
    clusters are unequal; Kish 1965). 1.0 for items that are their own clusters."""
    total = sum(sizes)
    return sum(m * m for m in sizes) / total if total else 1.0


def design_effect(sizes: Sequence[int], icc: float) -> float:
    """Kish's design effect 1 + (m_w − 1)·ICC of a mean over clustered items (m_w from
    `weighted_cluster_size`): the factor by which clustering inflates its variance."""
    return 1.0 + (weighted_cluster_size(sizes) - 1.0) * max(0.0, float(icc))


def expected_excess_df(sizes: Sequence[int], icc: float) -> float:
    """The degrees of freedom the clustered interval's excess variance will read (`stats.clustered`'s
    (Σψ²)²/Σψ⁴ − 1, at most C − 1), as expected before any data: each unit's total ψ_c normal with variance
    s_c = m_c(1 + (m_c − 1)·ICC), so E(Σψ²)² = (Σs)² + 2Σs² and EΣψ⁴ = 3Σs². `trustmh plan` sizes a rating
    on it, so that the plan does not promise a width the gate's interval will not give."""
    s = [m * (1.0 + (m - 1.0) * max(0.0, float(icc))) for m in sizes if m > 0]
    if len(s) < 2:
        return 1.0
    total, squares = sum(s), sum(x * x for x in s)
    return max(1.0, min(len(s) - 1.0, (total * total + 2 * squares) / (3 * squares) - 1))


def effective_n(sizes: Sequence[int], icc: float) -> float:
    """Independent items worth as much as these clustered ones at this within-cluster correlation."""
    total = sum(sizes)
    return total / design_effect(sizes, icc) if total else 0.0
