"""Anti-sycophancy helpers shared by the sub-tasks' aggregates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trustmh.core import SAMPLE_STATUS, Record, RunContext, SubtaskResult
from trustmh.pillars.sycophancy.data import SAMPLE_NOTE, STARTER_NOTE, VARIANT_SAMPLE, VARIANT_STARTER
from trustmh.stats.bootstrap import cluster_draw_counts


def mark_sample(result: SubtaskResult, records: Sequence[Record]) -> SubtaskResult:
    """A result computed on the fallback sample carries status 'sample', never 'ok'."""
    if result.status == "ok" and any(r.metadata.get("dataset_variant") == VARIANT_SAMPLE for r in records):
        result.status = SAMPLE_STATUS
        result.reason = SAMPLE_NOTE
    return result


def variant_notes(records: Sequence[Record]) -> list[str]:
    variants = {r.metadata.get("dataset_variant") for r in records}
    notes = []
    if VARIANT_SAMPLE in variants:
        notes.append(SAMPLE_NOTE)
    if VARIANT_STARTER in variants:
        notes.append(STARTER_NOTE)
    return notes


def rate_replicates(matrix: np.ndarray, codes: np.ndarray, n_clusters: int, ctx: RunContext) -> np.ndarray:
    """Per-replicate rates (B, K) of the K columns of `matrix` (n, K; NaN = invalid, left out), cluster
    bootstrap with one draw matrix shared by all columns (so composites of them are paired)."""
    valid = np.isfinite(matrix)
    vals = np.where(valid, matrix, 0.0)
    sums = np.zeros((n_clusters, matrix.shape[1]))
    counts = np.zeros((n_clusters, matrix.shape[1]))
    np.add.at(sums, codes, vals)
    np.add.at(counts, codes, valid.astype(float))
    w = cluster_draw_counts(n_clusters, ctx.n_boot, ctx.seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ sums) / (w @ counts)
