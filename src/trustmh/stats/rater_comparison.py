"""Each rater left out against the others' consensus, and a judge in the same seat (docs/references.md#the-rule).

For rater r of k, the consensus of the others is their mean rating (ratings) or their most common label
(labels; a tie leaves the item out of r's comparison). With two raters the consensus of the other is that
rater. The humans' figure H_r is the agreement of rater r with that consensus; the judge's figure J_r is the
agreement of the judge with the same consensus on the same items; D_r = J_r − H_r. A judge that copies one
rater gains nothing: in that rater's seat it is compared with what that rater was compared with, and its
noise shows there.

The agreement of two columns is ICC(A,1) (ratings) or Scott's π (labels: Fleiss' κ for two raters), computed
from per-cluster sufficient statistics so that every bootstrap replicate is one matrix product.
"""

from __future__ import annotations

import numpy as np

from trustmh.stats.icc import icc_k2_from_sum_matrix, pair_sums


def consensus(m: np.ndarray, left_out: int, kind: str, n_codes: int) -> np.ndarray:
    """(..., n) consensus of the columns other than `left_out` of (..., n, k) values; NaN where none."""
    others = np.delete(m, left_out, axis=-1)
    if kind == "ratings":
        rated = np.isfinite(others)
        n_rated = rated.sum(-1)
        total = np.where(rated, others, 0.0).sum(-1)
        return np.where(n_rated > 0, total / np.maximum(n_rated, 1), np.nan)
    counts = (others[..., None] == np.arange(n_codes)).sum(-2)
    top = counts.max(-1)
    unique = (counts == top[..., None]).sum(-1) == 1
    return np.where((top > 0) & unique, counts.argmax(-1), np.nan).astype(float)


def pair_rows(a: np.ndarray, b: np.ndarray, kind: str, n_codes: int) -> np.ndarray:
    """(..., n, f) per-row sufficient statistics of the pair (a, b); rows with a side missing contribute 0.
    ratings: [1, a, b, a², b², ab]; labels: the one-hot cell of the n_codes × n_codes table."""
    ok = np.isfinite(a) & np.isfinite(b)
    if kind == "ratings":
        return np.where(ok[..., None], pair_sums(np.where(ok, a, 0.0), np.where(ok, b, 0.0)), 0.0)
    cell = np.where(ok, np.where(ok, a, 0) * n_codes + np.where(ok, b, 0), 0).astype(np.int64)
    return (cell[..., None] == np.arange(n_codes * n_codes)).astype(float) * ok[..., None]


def pair_agreement(totals: np.ndarray, kind: str, n_codes: int) -> np.ndarray:
    """Agreement of a pair from its summed sufficient statistics (last axis f); NaN where undefined."""
    if kind == "ratings":
        return np.asarray(icc_k2_from_sum_matrix(totals)[1], dtype=float)
    table = totals.reshape(totals.shape[:-1] + (n_codes, n_codes))
    n = table.sum((-2, -1))
    with np.errstate(all="ignore"):
        observed = np.trace(table, axis1=-2, axis2=-1) / n
        shares = (table.sum(-1) + table.sum(-2)) / (2 * n[..., None])
        chance = (shares**2).sum(-1)
        return np.where(chance < 1 - 1e-12, (observed - chance) / (1 - chance), np.nan)


def specific_agreement(totals: np.ndarray, n_codes: int) -> np.ndarray:
    """(..., n_codes) specific agreement 2·n_cc / (n_c. + n_.c) per label (positive and negative agreement
    for two labels): what κ hides when one label is rare. NaN for a label neither side used."""
    table = totals.reshape(totals.shape[:-1] + (n_codes, n_codes))
    diagonal = np.diagonal(table, axis1=-2, axis2=-1)
    with np.errstate(all="ignore"):
        return 2 * diagonal / (table.sum(-1) + table.sum(-2))


def comparison_points(sims: np.ndarray, kind: str, n_codes: int) -> tuple[np.ndarray, np.ndarray]:
    """For (s, n, k + 1) simulated references whose last column is a judge: (s,) the humans' agreement
    (their mean pairwise agreement, the figure the floor is read on in simulation) and (s, k) the
    differences D_r. Used by the power simulation (`judges.reference_power`)."""
    humans, judge = sims[..., :-1], sims[..., -1]
    k = humans.shape[-1]
    diffs = np.empty(sims.shape[:1] + (k,))
    pairwise = []
    for r in range(k):
        c = consensus(humans, r, kind, n_codes)
        h = pair_agreement(pair_rows(humans[..., r], c, kind, n_codes).sum(-2), kind, n_codes)
        j = pair_agreement(pair_rows(judge, c, kind, n_codes).sum(-2), kind, n_codes)
        diffs[:, r] = j - h
        for s in range(r + 1, k):
            pairwise.append(pair_agreement(pair_rows(humans[..., r], humans[..., s], kind, n_codes).sum(-2),
                                           kind, n_codes))
    return np.mean(pairwise, axis=0), diffs
