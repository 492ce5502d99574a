"""A mean's interval when items share a stimulus (docs/statistics.md#clustered-intervals).

Conversations built on the same disclosure sentence, locale or patient profile are not independent: a model
that misses one sentence tends to miss it in every conversation built on it. The interval here treats the
stimulus (the cluster) as the unit:

1. the variance of the mean is the cluster-robust (ratio-estimator) variance
   v = C/(C − 1) · Σ_c (y_c − x̄·m_c)² / n², never below the variance the items would have if independent
   (s²/n): clustering can only cost precision here, and a negative ICC estimated from few clusters is noise;
2. the values are put on [0, 1] (a 0–2 mean divided by 2); the effective n is x̄(1 − x̄)/v (for a rate, n
   over the design effect) and the interval is Clopper–Pearson on it with Korn & Graubard's (1998)
   degrees-of-freedom adjustment: the effective n shrinks by (z/q)², where q is the t quantile on C − 1
   degrees of freedom for the independent part of the variance (z for a rate: its independent variance is
   known once the rate is) and on Satterthwaite's degrees of freedom
   for the part the clustering adds (few clusters carrying the spread, as with a rare outcome in a handful
   of stimuli, make that part uncertain; Bell & McCaffrey 2002). The interval stays inside the scale and
   keeps its coverage near 0 and 1 and with few clusters (benchmarks/cluster_coverage.py);
3. where the rarer side of the scale sits in one cluster only, the spread between clusters is not estimable
   either: the design effect is then the assumed one too (a failing design cell among clean ones covered
   0.92 before this rule at 12 cells, ρ = 0.8);
4. with fewer than `MIN_CLUSTERS` clusters that hold more than one item each on average (the controls of a
   set in two design cells), no interval can be had: the cluster-robust variance of two or three units
   covers near 0.8 whatever the correction (benchmarks/cluster_coverage.py --unit cell), so each cluster
   counts as one item (Clopper–Pearson on C: the design effect of a within-cluster correlation of 1, the
   largest there is) and `too_few_clusters` says so (docs/statistics.md#the-unit);
5. where the data cannot show the clustering (every value equal, e.g. no miss at all), the design effect is
   the one an assumed within-cluster correlation gives (`icc_if_undefined`, recorded), never 1.

Plain numpy/scipy; no knowledge of sets or models.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.stats.bootstrap import cluster_codes
from trustmh.stats.power import design_effect, weighted_cluster_size

# The within-cluster correlation assumed where the data cannot estimate it (and `trustmh plan`'s default).
ASSUMED_ICC = 0.5
LEVEL = 0.95
# Fewer clusters than this (each holding several items) count one item each: simulated coverage of the clustered
# interval on 2-5 design cells was 0.83-0.93, on 6 or more ≥ 0.94 (docs/statistics.md#the-unit).
MIN_CLUSTERS = 6
METHOD = ("Clopper–Pearson on the effective n, clustered (cluster-robust variance, Korn–Graubard degrees of "
          "freedom; docs/statistics.md#clustered-intervals)")


@functools.lru_cache(maxsize=1024)  # the plan's label search asks the same few (level, df) hundreds of times
def _t_quantile(level: float, df: float) -> float:
    from scipy.stats import t  # here, not at start-up: scipy.stats is slow to import

    return float(t.ppf(0.5 + level / 2, max(1.0, df)))  # df = inf: the normal quantile


def clopper_pearson_bounds(p: float, n_eff: float, level: float = LEVEL) -> tuple[float, float]:
    """Clopper–Pearson bounds of a proportion p on n_eff (not necessarily whole) items: the beta quantiles at
    x = p·n_eff successes (Korn & Graubard 1998 for an effective n)."""
    from scipy.stats import beta  # here, not at start-up: scipy.stats is slow to import

    x, alpha = p * n_eff, 1 - level
    lo = 0.0 if x <= 0 else float(beta.ppf(alpha / 2, x, n_eff - x + 1))
    hi = 1.0 if x >= n_eff else float(beta.ppf(1 - alpha / 2, x + 1, n_eff - x))
    return lo, hi


def clustered_interval(values: Sequence[float], clusters: Sequence[object], *,
                       scale: tuple[float, float] = (0.0, 1.0), icc_if_undefined: float = ASSUMED_ICC,
                       level: float = LEVEL) -> dict[str, Any]:
    """The mean of `values` (each in `scale`) with its clustered interval (module docstring):
    {"value", "ci", "n", "clusters", "effective_n", "design_effect", "icc_estimated", "icc_assumed", "method"}.
    `icc_estimated` is None and `icc_assumed` set when the data cannot estimate the clustering."""
    lo, hi = float(scale[0]), float(scale[1])
    if not hi > lo:
        raise ValueError(f"scale {scale!r}: the upper end must exceed the lower")
    x = (np.asarray(values, dtype=float) - lo) / (hi - lo)
    if x.size != len(clusters):
        raise ValueError(f"{x.size} values but {len(clusters)} cluster labels")
    if x.size == 0:
        return {"value": None, "ci": None, "n": 0, "clusters": 0, "effective_n": 0.0, "method": METHOD}
    if not np.isfinite(x).all() or (x < -1e-12).any() or (x > 1 + 1e-12).any():
        raise ValueError(f"a value lies outside the scale {lo:g}–{hi:g}")
    x = np.clip(x, 0.0, 1.0)
    codes, n_clusters = cluster_codes(list(clusters))
    sizes = np.bincount(codes, minlength=n_clusters).astype(float)
    sums = np.bincount(codes, weights=x, minlength=n_clusters)
    n = float(x.size)
    p = float(x.mean())
    residuals = sums - p * sizes  # each cluster's departure from the mean, in items
    spread = float((residuals**2).sum())
    v_independent = float(x.var()) / n
    v_cluster = n_clusters / (n_clusters - 1) * spread / (n * n) if n_clusters > 1 else float("nan")
    m_w = weighted_cluster_size(sizes.astype(int).tolist())
    out: dict[str, Any] = {"n": int(n), "clusters": n_clusters, "method": METHOD}
    variance = max(v_cluster, v_independent) if math.isfinite(v_cluster) else float("nan")
    # Clusters holding any of the rarer side of the scale: one alone cannot show how the clusters spread (a
    # design cell that fails while the rest are clean), no more than none can, so both assume the clustering.
    rare = x if p <= 0.5 else 1.0 - x
    carrying = int((np.bincount(codes, weights=rare, minlength=n_clusters) > 0).sum())
    if math.isfinite(variance) and variance > 0 and 0 < p < 1 and carrying > 1:
        deff = variance / v_independent if v_independent > 0 else 1.0
        n_binomial = p * (1 - p) / variance
        out["icc_estimated"] = (deff - 1) / (m_w - 1) if m_w > 1 else None
    else:  # no spread to estimate the clustering from: assume it
        deff = design_effect(sizes.astype(int).tolist(), icc_if_undefined)
        if math.isfinite(variance) and v_independent > 0:  # the one carrying cluster's spread, when larger
            deff = max(deff, variance / v_independent)
        n_binomial = n / deff
        out["icc_estimated"] = None
        out["icc_assumed"] = float(icc_if_undefined)
    # The variance beyond the independent items' is estimated from the clusters, with Satterthwaite's
    # degrees of freedom: few clusters carrying the spread (a rare outcome in a handful of stimuli) make it
    # uncertain, so its quantile widens (Bell & McCaffrey 2002). The independent part keeps t on C − 1, or z
    # for a rate, whose independent variance p(1 − p)/n is known once p is (Clopper–Pearson's own case).
    # (one degree of freedom fewer: the residuals are from the estimated mean)
    df = min(n_clusters - 1, spread**2 / float((residuals**4).sum()) - 1) if spread > 0 else n_clusters - 1
    excess = max(0.0, variance - v_independent) if math.isfinite(variance) else 0.0
    binary = bool(np.all((x == 0.0) | (x == 1.0)))
    q_base = _t_quantile(level, math.inf if binary else n_clusters - 1)
    q_excess = _t_quantile(level, df)
    q = (math.sqrt((v_independent * q_base**2 + excess * q_excess**2) / (v_independent + excess))
         if v_independent + excess > 0 else q_base)
    out["df"] = df
    if n_clusters < MIN_CLUSTERS and n_clusters < n:
        # each cluster counted as one item: the largest design effect there is (a within-cluster correlation
        # of 1), so the variance of the mean can only be smaller than the interval allows for
        b_lo, b_hi = clopper_pearson_bounds(p, float(n_clusters), level)
        return {"value": lo + p * (hi - lo), "ci": [lo + b_lo * (hi - lo), lo + b_hi * (hi - lo)], **out,
                "effective_n": float(n_clusters), "design_effect": n / n_clusters,
                "too_few_clusters": f"{n_clusters} clusters, fewer than {MIN_CLUSTERS}: each counted as one item"}
    # Korn & Graubard's degrees-of-freedom adjustment: the effective n shrinks by (z/q)².
    b_lo, b_hi = clopper_pearson_bounds(p, n_binomial * (_t_quantile(level, math.inf) / q) ** 2, level)
    return {"value": lo + p * (hi - lo), "ci": [lo + b_lo * (hi - lo), lo + b_hi * (hi - lo)], **out,
            "effective_n": n / deff, "design_effect": deff}
