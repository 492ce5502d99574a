"""Seeded bootstrap intervals.

Every interval trustmh publishes comes from here (Inspect's own bootstrap is unseeded). Resampling draws
whole clusters (dialogues, scenarios, base prompts...) with replacement; a row-level bootstrap is the case
where every row is its own cluster. Means are computed for all replicates at once with a weight matrix
(hand-written: scipy.stats.bootstrap has no cluster resampling).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DEFAULT_N_BOOT = 2000


def cluster_codes(clusters: Sequence[object]) -> tuple[np.ndarray, int]:
    """Map cluster labels to 0..C-1 in order of first appearance (deterministic)."""
    index: dict[object, int] = {}
    codes = np.fromiter((index.setdefault(c, len(index)) for c in clusters), dtype=np.int64, count=len(clusters))
    return codes, len(index)


def joined_clusters(*labelings: Sequence[object]) -> list[int]:
    """The coarsest grouping in which items sharing a label under any of `labelings` stay together (the
    connected components of the items linked by each labeling): a stimulus played in two design cells joins
    them. Returns one component number per item, 0..K-1 in order of first appearance, for `cluster_codes`.

    One-way clustering on this partition is valid under correlation within a stimulus and within a cell at
    once; where each stimulus lies in one cell (the authored sets) it is the cell itself
    (docs/statistics.md#the-unit)."""
    n = len(labelings[0]) if labelings else 0
    if any(len(lab) != n for lab in labelings):
        raise ValueError("every labeling must label every item")
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]  # path halving: the trees stay shallow
            i = parent[i]
        return i

    for labels in labelings:
        first: dict[object, int] = {}
        for i, label in enumerate(labels):
            j = first.setdefault(label, i)
            if j != i:
                parent[root(i)] = root(j)
    codes, _ = cluster_codes([root(i) for i in range(n)])
    return [int(c) for c in codes]


def draw_counts(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_clusters) float64 draw counts of a cluster bootstrap with `np.random.default_rng(seed)`:
    row b = bincount(rng.integers(0, C, (B, C))[b]). Replicate totals of per-cluster sums are `W @ sums`."""
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    # One bincount over (replicate, cluster) cells: same counts as np.add.at, much faster.
    flat = (np.arange(n_boot, dtype=np.int64)[:, None] * n_clusters + idx).ravel()
    counts = np.bincount(flat, minlength=n_boot * n_clusters).astype(np.float64)
    return counts.reshape(n_boot, n_clusters)


def percentile_ci(replicates: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    reps = np.asarray(replicates, dtype=float)
    reps = reps[np.isfinite(reps)]
    if reps.size < 10:
        return (float("nan"), float("nan"))
    alpha = (1.0 - level) / 2.0
    lo, hi = np.percentile(reps, [100 * alpha, 100 * (1 - alpha)])
    return (float(lo), float(hi))


def bootstrap_mean(values: Sequence[float], clusters: Sequence[object] | None = None, *, seed: int,
                   n_boot: int = DEFAULT_N_BOOT, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Mean of `values` (NaN rows ignored) with a cluster-bootstrap percentile interval."""
    v = np.asarray(values, dtype=float)
    keep = np.isfinite(v)
    if not keep.any():
        return float("nan"), (float("nan"), float("nan"))
    labels = list(clusters) if clusters is not None else list(range(len(v)))
    labels = [c for c, k in zip(labels, keep, strict=True) if k]
    v = v[keep]
    codes, n_clusters = cluster_codes(labels)
    sums = np.bincount(codes, weights=v, minlength=n_clusters)
    counts = np.bincount(codes, minlength=n_clusters).astype(float)
    w = draw_counts(n_clusters, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ sums) / (w @ counts)
    return float(v.mean()), percentile_ci(reps, level)


def bootstrap_statistic(statistic: Callable[[np.ndarray], float], clusters: Sequence[object], *, seed: int,
                        n_boot: int = DEFAULT_N_BOOT, level: float = 0.95) -> tuple[float, tuple[float, float]]:
    """Any statistic of a set of rows, with a cluster-bootstrap percentile interval.

    `statistic(row_indices)` gets an int array of row indices (with repeats) and returns a float; it is
    called once on all rows, then once per replicate. Use this for composites (macro-F1, Pearson r, ...)
    that must be recomputed per replicate; use `bootstrap_mean` for plain means.
    """
    codes, n_clusters = cluster_codes(list(clusters))
    point = float(statistic(np.arange(len(codes))))
    if n_clusters == 0:
        return point, (float("nan"), float("nan"))
    rows_of = [np.flatnonzero(codes == c) for c in range(n_clusters)]
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_clusters, size=(n_boot, n_clusters))
    reps = np.empty(n_boot)
    for b in range(n_boot):
        rows = np.concatenate([rows_of[c] for c in draws[b]])
        with np.errstate(invalid="ignore", divide="ignore"):
            reps[b] = statistic(rows)
    return point, percentile_ci(reps, level)


# ---------------------------------------------------------------------------------------------------------
# Additions for the reliability analysis (docs/statistics.md#align-bootstraps). All vectorised over replicates.
# ---------------------------------------------------------------------------------------------------------

LEGACY_SEED = 42
LEGACY_N_BOOT = 1000


@lru_cache(maxsize=64)
def _legacy_index_matrix(n: int, n_boot: int, seed: int) -> np.ndarray:
    # np.random.seed(seed); np.random.randint(0, 100000, B) draws from the global legacy RandomState; a
    # private RandomState seeded the same way gives the same stream without touching global state.
    seeds = np.random.RandomState(seed).randint(0, 100000, n_boot)
    rs = np.random.RandomState()
    out = np.empty((n_boot, n), dtype=np.int64)
    for b, s in enumerate(seeds):
        rs.seed(int(s))  # same state as RandomState(s) / np.random.seed(s)
        out[b] = rs.randint(0, n, n)
    out.setflags(write=False)
    return out


def legacy_index_matrix(n: int, n_boot: int = LEGACY_N_BOOT, seed: int = LEGACY_SEED) -> np.ndarray:
    """(n_boot, n) read-only int64 matrix of the authors' legacy-RNG bootstrap index vectors:

        np.random.seed(seed); seeds = np.random.randint(0, 100000, n_boot)
        row b = (np.random.seed(seeds[b]); np.random.choice(n, n, replace=True))
              = np.random.RandomState(seeds[b]).randint(0, n, n)

    Cached per (n, n_boot, seed): every cell with the same n shares it. Global numpy RNG state is untouched.
    """
    if n < 1 or n_boot < 0:
        raise ValueError(f"legacy_index_matrix needs n >= 1 and n_boot >= 0 (got n={n}, n_boot={n_boot})")
    return _legacy_index_matrix(int(n), int(n_boot), int(seed))


# The name the statistics code uses; one implementation.
cluster_draw_counts = draw_counts


def cluster_indices(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, n_clusters) drawn cluster ids, the draws behind `cluster_draw_counts` (same seed, same
    draws), and the row-resampling indices scipy.stats.bootstrap uses with `rng=default_rng(seed)`."""
    return np.random.default_rng(seed).integers(0, n_clusters, size=(n_boot, n_clusters))


def cluster_totals(per_cluster: np.ndarray, *, seed: int, n_boot: int = DEFAULT_N_BOOT,
                   counts: np.ndarray | None = None) -> np.ndarray:
    """Replicate totals `W @ per_cluster` for per-cluster sufficient statistics of shape (C, ...)
    -> (n_boot, ...). Pass `counts` to reuse one draw matrix for several statistics."""
    stats = np.asarray(per_cluster, dtype=np.float64)
    w = cluster_draw_counts(stats.shape[0], n_boot, seed) if counts is None else np.asarray(counts)
    flat = stats.reshape(stats.shape[0], -1)
    return (w @ flat).reshape((w.shape[0],) + stats.shape[1:])


def percentile_ci_nan(replicates: np.ndarray, level: float = 0.95, min_valid: int = 10,
                      axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval along `axis` ignoring NaN replicates, for a batch of replicate sets (e.g.
    (28, 1000)). Each set goes through np.percentile on its finite values, so the bounds are bit-identical
    to `np.percentile(kept_list, ...)` (np.nanpercentile can differ in the last ulp). Fewer than
    `min_valid` finite replicates -> NaN bounds."""
    reps = np.moveaxis(np.asarray(replicates, dtype=np.float64), axis, -1)
    # Rounded so level=0.95 asks for exactly [2.5, 97.5] (100·(1 − 0.95)/2 is 2.5000000000000022).
    q = [round(50.0 * (1.0 - level), 10), round(100.0 - 50.0 * (1.0 - level), 10)]
    lo = np.full(reps.shape[:-1], np.nan)
    hi = np.full(reps.shape[:-1], np.nan)
    for ix in np.ndindex(reps.shape[:-1]):
        row = reps[ix]
        kept = row[np.isfinite(row)]
        if kept.size >= min_valid:
            lo[ix], hi[ix] = np.percentile(kept, q)
    return lo, hi


def _norm_ppf(p: np.ndarray | float) -> np.ndarray:
    from scipy.special import ndtri

    return ndtri(p)


def _norm_cdf(z: np.ndarray | float) -> np.ndarray:
    from scipy.special import ndtr

    return ndtr(z)


def bca_ci(point: float, replicates: np.ndarray, jackknife_values: np.ndarray,
           level: float = 0.95) -> tuple[float, float]:
    """Bias-corrected and accelerated interval (Efron & Tibshirani 1993, §14.3), as scipy.stats.bootstrap
    computes it: z0 from the 'mean' percentile of `point` among the replicates, acceleration from the
    jackknife (leave-one-cluster-out) values, bounds by linear-interpolated percentiles.

    Non-finite replicates and jackknife values are dropped first (scipy would return NaN). Fewer than 10
    finite replicates, a degenerate distribution, or a zero jackknife spread -> (nan, nan).
    """
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    reps = reps[np.isfinite(reps)]
    jack = np.asarray(jackknife_values, dtype=np.float64).ravel()
    jack = jack[np.isfinite(jack)]
    nan = (float("nan"), float("nan"))
    if reps.size < 10 or jack.size < 2 or not np.isfinite(point):
        return nan
    b = reps.size
    pct = (np.count_nonzero(reps < point) + np.count_nonzero(reps <= point)) / (2 * b)
    z0 = _norm_ppf(pct)
    n_j = float(jack.size)
    u = (n_j - 1) * (jack.mean() - jack)
    num = np.sum(u**3) / n_j**3
    den = np.sum(u**2) / n_j**2
    with np.errstate(divide="ignore", invalid="ignore"):
        a_hat = 1 / 6 * num / den ** (3 / 2)
        alpha = (1.0 - level) / 2.0
        z_alpha = float(_norm_ppf(alpha))
        num1 = z0 + z_alpha
        a1 = _norm_cdf(z0 + num1 / (1 - a_hat * num1))
        num2 = z0 - z_alpha
        a2 = _norm_cdf(z0 + num2 / (1 - a_hat * num2))
    if not (np.isfinite(a1) and np.isfinite(a2)):
        return nan
    lo, hi = np.percentile(reps, [100 * float(a1), 100 * float(a2)])
    return (float(lo), float(hi))


@dataclass(frozen=True)
class BootstrapResult:
    """Point estimate, interval and the replicate distribution (NaN where a replicate was undefined)."""

    point: float
    lo: float
    hi: float
    replicates: np.ndarray
    method: str
    level: float
    n_boot: int
    n_valid: int
    jackknife: np.ndarray | None = None

    @property
    def ci(self) -> tuple[float, float]:
        return (self.lo, self.hi)


def _as_samples(data: np.ndarray | Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    if isinstance(data, np.ndarray):
        samples: tuple[np.ndarray, ...] = (data,)
    else:
        samples = tuple(np.asarray(x) for x in data)
    if not samples:
        raise ValueError("bootstrap needs at least one data array")
    n = samples[0].shape[0]
    for x in samples:
        if x.ndim == 0 or x.shape[0] != n:
            raise ValueError("bootstrap data arrays must share their first (row) axis; got shapes "
                             + ", ".join(str(s.shape) for s in samples))
    return samples


def _rows_of_clusters(clusters: Sequence[object] | None, n_rows: int) -> tuple[list[np.ndarray], int]:
    if clusters is None:
        return [np.array([i]) for i in range(n_rows)], n_rows
    if len(clusters) != n_rows:
        raise ValueError(f"clusters has {len(clusters)} labels for {n_rows} rows")
    codes, n_clusters = cluster_codes(list(clusters))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(n_clusters + 1))
    return [order[bounds[c]:bounds[c + 1]] for c in range(n_clusters)], n_clusters


def _evaluate(statistic: Callable[..., np.ndarray], samples: tuple[np.ndarray, ...],
              index_rows: list[np.ndarray] | np.ndarray, vectorised: bool, batch: int | None) -> np.ndarray:
    """statistic on each index vector in `index_rows` (a list, or a (B, m) matrix); vectorised calls get
    (b, m, ...) stacks when all index vectors have the same length m, in batches of `batch` replicates."""
    out = np.empty(len(index_rows), dtype=np.float64)
    if len(index_rows) == 0:
        return out
    lengths = {len(r) for r in index_rows}
    with np.errstate(all="ignore"):
        if vectorised and len(lengths) == 1:
            idx = index_rows if isinstance(index_rows, np.ndarray) else np.stack(index_rows)
            step = batch or len(index_rows)
            for start in range(0, len(index_rows), step):
                part = idx[start:start + step]
                out[start:start + step] = np.asarray(statistic(*(x[part] for x in samples)), dtype=np.float64)
        elif vectorised:
            for b, rows in enumerate(index_rows):
                out[b] = np.asarray(statistic(*(x[rows][None] for x in samples)), dtype=np.float64).reshape(-1)[0]
        else:
            for b, rows in enumerate(index_rows):
                out[b] = float(statistic(*(x[rows] for x in samples)))
    return out


def bootstrap(data: np.ndarray | Sequence[np.ndarray], statistic: Callable[..., np.ndarray], *, seed: int,
              n_boot: int = DEFAULT_N_BOOT, method: str = "percentile", level: float = 0.95,
              clusters: Sequence[object] | None = None, vectorised: bool = True,
              batch: int | None = None) -> BootstrapResult:
    """Seeded (cluster) bootstrap of any statistic of paired rows.

    `data` is one array or a sequence of arrays sharing their first axis (rows stay together: a paired
    bootstrap). Clusters (default: every row its own cluster) are drawn with replacement with
    `np.random.default_rng(seed).integers(0, C, (n_boot, C))`; a drawn cluster brings all its rows.

    vectorised=True: `statistic(*arrays)` gets arrays with a leading replicate axis, shape (b, m, ...), and
    returns b values; all replicates are one call (in chunks of `batch`) when every replicate has the same
    row count (row bootstrap, or clusters of equal size); otherwise it is called per replicate with b = 1.
    vectorised=False: `statistic(*arrays)` gets (m, ...) arrays and returns a float.
    The point estimate is the statistic on the data in cluster order. Undefined replicates are NaN in
    `replicates` and ignored by the interval.

    method: "percentile" or "bca" (jackknife over clusters). With clusters=None and `rng=default_rng(seed)`
    this draws exactly the resamples of `scipy.stats.bootstrap(..., paired=True)`, so the BCa bounds match
    scipy's.
    """
    if method not in ("percentile", "bca"):
        raise ValueError(f"method must be 'percentile' or 'bca', not {method!r}")
    samples = _as_samples(data)
    n_rows = samples[0].shape[0]
    rows_of, n_clusters = _rows_of_clusters(clusters, n_rows)
    all_rows = np.concatenate(rows_of) if rows_of else np.array([], dtype=np.int64)
    point = float(_evaluate(statistic, samples, [all_rows], vectorised, batch)[0])
    if n_clusters == 0:
        empty = np.full(n_boot, np.nan)
        return BootstrapResult(point, float("nan"), float("nan"), empty, method, level, n_boot, 0)
    draws = cluster_indices(n_clusters, n_boot, seed)
    sizes = {len(r) for r in rows_of}
    table = np.stack(rows_of) if len(sizes) == 1 else None
    if table is not None:
        # Equal cluster sizes: one (B, C*m) index matrix, replicate stacks built by fancy indexing.
        index_rows: list[np.ndarray] | np.ndarray = table[draws].reshape(n_boot, -1)
    else:
        index_rows = [np.concatenate([rows_of[c] for c in d]) for d in draws]
    # Default chunk keeps each stacked (b, m, ...) resample around 4M values.
    reps = _evaluate(statistic, samples, index_rows, vectorised, batch or max(1, 4_000_000 // max(1, n_rows)))
    reps = np.where(np.isfinite(reps), reps, np.nan)
    jack = None
    if method == "bca":
        # Leave-one-cluster-out values, built a chunk at a time (C index vectors of ~n rows each would
        # not fit in memory for large n).
        chunk = batch or max(1, 2_000_000 // max(1, n_rows))
        parts = []
        for start in range(0, n_clusters if n_clusters > 1 else 0, chunk):
            js = np.arange(start, min(start + chunk, n_clusters))
            jack_rows: list[np.ndarray] | np.ndarray
            if len(sizes) == 1:
                others = np.arange(n_clusters - 1)[None, :]
                others = others + (others >= js[:, None])  # cluster ids without j, in order
                jack_rows = table[others].reshape(js.size, -1)
            else:
                bounds = np.cumsum([0] + [len(r) for r in rows_of])
                jack_rows = [np.delete(all_rows, np.s_[bounds[j]:bounds[j + 1]]) for j in js]
            parts.append(_evaluate(statistic, samples, jack_rows, vectorised, None))
        jack = np.concatenate(parts) if parts else np.array([], dtype=np.float64)
        lo, hi = bca_ci(point, reps, jack, level)
    else:
        lo, hi = percentile_ci(reps, level)
    return BootstrapResult(point, lo, hi, reps, method, level, n_boot, int(np.isfinite(reps).sum()), jack)
