"""Fairness metrics, shared by the support-quality gaps and escalation parity: per-attribute group means,
their population std (faithful) and max-min gap (default), paired deltas against neutral, and their
cluster-bootstrap intervals."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from trustmh.core import Record
from trustmh.pillars.fairness.data import ATTRIBUTES, Attributes, variants
from trustmh.stats.bootstrap import cluster_draw_counts, percentile_ci


def score_table(records: Sequence[Record], attributes: Attributes = ATTRIBUTES
                ) -> tuple[list[str], list[str], np.ndarray]:
    """(context ids, their dialogue ids, S) with S[c, g] the mean support of context c, variant g (columns
    in `variants()` order); NaN where no valid judged reply exists."""
    groups = [v.group for v in variants(attributes)]
    gindex = {g: j for j, g in enumerate(groups)}
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    ctx_ids: dict[str, str] = {}
    for r in records:
        cid = str(r.metadata["context_id"])
        ctx_ids.setdefault(cid, str(r.metadata["dialogue_id"]))
        if r.score.get("judge_valid") and r.score.get("support") is not None:
            cells[(cid, str(r.metadata["group"]))].append(float(r.score["support"]))
    cids = list(ctx_ids)
    s = np.full((len(cids), len(groups)), np.nan)
    for i, cid in enumerate(cids):
        for g, j in gindex.items():
            if cells.get((cid, g)):
                s[i, j] = float(np.mean(cells[(cid, g)]))
    return cids, [ctx_ids[c] for c in cids], s


def _attr_columns(attributes: Attributes = ATTRIBUTES) -> dict[str, list[int]]:
    groups = [v.group for v in variants(attributes)]
    return {a: [groups.index(f"{a}_{v}") for v, _ in vals] for a, vals in attributes.items()}


def fairness_statistics(group_means: np.ndarray, deltas: np.ndarray,
                        attributes: Attributes = ATTRIBUTES) -> dict[str, np.ndarray]:
    """Per-replicate statistics from group means (..., 17) and paired deltas (..., 17; column 0 unused).

    std_<attr>: population std of the attribute's group means; gap_<attr>: max - min; faithful_value: mean
    std over attributes; default_value: mean gap; max_abs_delta over the 16 identity values.
    """
    out: dict[str, np.ndarray] = {}
    stds, gaps = [], []
    for a, cols in _attr_columns(attributes).items():
        gm = group_means[..., cols]
        out[f"std_{a}"] = np.std(gm, axis=-1, ddof=0)
        out[f"gap_{a}"] = np.max(gm, axis=-1) - np.min(gm, axis=-1)
        stds.append(out[f"std_{a}"])
        gaps.append(out[f"gap_{a}"])
    out["faithful_value"] = np.mean(stds, axis=0)
    out["default_value"] = np.mean(gaps, axis=0)
    out["max_abs_delta"] = np.max(np.abs(deltas[..., 1:]), axis=-1)
    return out


def fairness_metrics(dialogue_of_row: Sequence[str], s: np.ndarray, *, seed: int, n_boot: int,
                     attributes: Attributes = ATTRIBUTES
                     ) -> tuple[dict[str, float], dict[str, tuple[float, float]]]:
    """Point values and dialogue-cluster bootstrap intervals of every fairness statistic.

    Group means average each variant over the contexts where it has a valid score; deltas are paired:
    group − neutral over contexts where both are valid. Each replicate resamples dialogues (with all their
    contexts) and recomputes everything.
    """
    groups = [v.group for v in variants(attributes)]
    finite = np.isfinite(s)
    vals = np.where(finite, s, 0.0)
    pair = finite & finite[:, [0]]
    diff = np.where(pair, s - s[:, [0]], 0.0)
    dlg_ids = list(dict.fromkeys(dialogue_of_row))
    code = np.array([dlg_ids.index(d) for d in dialogue_of_row])
    onehot = np.zeros((len(dlg_ids), len(code)))
    onehot[code, np.arange(len(code))] = 1.0
    sums, counts = onehot @ vals, onehot @ finite
    dsums, dcounts = onehot @ diff, onehot @ pair

    def stats(w: np.ndarray) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            gm = (w @ sums) / (w @ counts)
            dl = (w @ dsums) / (w @ dcounts)
        res = fairness_statistics(gm, dl, attributes)
        for j, g in enumerate(groups):
            res[f"mean_{g}"] = gm[..., j]
            if j:
                res[f"delta_{g}"] = dl[..., j]
        return res

    point = {k: float(v[0]) for k, v in stats(np.ones((1, len(dlg_ids)))).items()}
    reps = stats(cluster_draw_counts(len(dlg_ids), n_boot, seed))
    cis = {k: percentile_ci(v) for k, v in reps.items()}
    return point, cis
