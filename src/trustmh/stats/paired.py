"""Paired bootstrap on shared items: does the order of two models hold when the items are resampled?

Both models answered the same items; resampling the shared items (whole clusters) jointly and recomputing
both means keeps the pairing, so the item-to-item difficulty that both share cancels out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from trustmh.stats.bootstrap import cluster_codes, draw_counts


@dataclass(frozen=True)
class PairedOrder:
    """Share of replicates in which `a` stays ahead of `b` (direction-aware) on the shared items."""

    share: float | None  # None: not computed (see reason)
    n_shared: int
    mean_a: float | None = None
    mean_b: float | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"share": self.share, "n_shared": self.n_shared, "mean_a": self.mean_a, "mean_b": self.mean_b,
                "reason": self.reason}


def paired_order_share(a: Mapping[Any, float], b: Mapping[Any, float], clusters: Mapping[Any, object] | None = None,
                       *, direction: str = "higher", seed: int = 0, n_boot: int = 2000,
                       min_shared: int = 2) -> PairedOrder:
    """`a` and `b` map an item key to that item's primary score (NaN/None = no score). The observed order is
    a before b; the share is the fraction of seeded cluster-bootstrap replicates of the shared items in which
    a is still strictly better than b (ties count as not holding)."""
    keys = [k for k in a if k in b and _finite(a[k]) and _finite(b[k])]
    if len(keys) < min_shared:
        return PairedOrder(None, len(keys), reason=f"{len(keys)} shared scored item(s); need {min_shared}")
    va = np.array([float(a[k]) for k in keys])
    vb = np.array([float(b[k]) for k in keys])
    sign = 1.0 if direction == "higher" else -1.0
    labels: Sequence[object] = [clusters.get(k, k) if clusters else k for k in keys]
    codes, n_clusters = cluster_codes(labels)
    diff_sums = np.bincount(codes, weights=sign * (va - vb), minlength=n_clusters)
    counts = np.bincount(codes, minlength=n_clusters).astype(float)
    w = draw_counts(n_clusters, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ diff_sums) / (w @ counts)
    reps = reps[np.isfinite(reps)]
    share = float(np.mean(reps > 0)) if reps.size else None
    return PairedOrder(share, len(keys), float(va.mean()), float(vb.mean()),
                       None if share is not None else "no finite replicate")


def _finite(x: Any) -> bool:
    return x is not None and isinstance(x, int | float) and bool(np.isfinite(x))
