"""`robustness/emotional_support`: ESConv support quality under perturbed seeker turns."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from trustmh.core import Record, RunContext, Subtask
from trustmh.pillars.reliability.support import EmotionalSupport
from trustmh.pillars.robustness.base import OPTIONS, SUPPORT_BASE_ID, Replicates, RobustnessBase


def support_replicates(records: Sequence[Record], weights: np.ndarray, ctx: RunContext) -> np.ndarray:
    """Per-replicate mean support over judge-valid replies (as `aggregate_support` computes it), for
    per-record replicate weights of shape (B, n)."""
    v = np.array([float(r.score["support"]) if r.score.get("judged") and r.score.get("judge_valid")
                  and r.score.get("support") is not None else np.nan for r in records])
    keep = np.isfinite(v)
    if not keep.any():
        return np.full(weights.shape[0], np.nan)
    w = weights[:, keep]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (w @ v[keep]) / w.sum(axis=1)


class RobustnessEmotionalSupport(RobustnessBase):
    id = "robustness/emotional_support"
    task_name = "robustness_emotional_support"
    anchors = {"faithful": (0.5, 0.0), "default": (0.0, 1.0)}
    options = OPTIONS
    per_item = {"faithful": 'primary metric is a relative drop of the clean score, not a mean of per-item values', "default": 'primary metric is a retention ratio of perturbed to clean scores, not a mean of per-item values'}
    title = "Robustness of emotional support"
    base_id = SUPPORT_BASE_ID
    datasets = ("esconv", "esconv_processed")
    judge_use = "yes"
    judge_templates = ("support_judge",)

    def _default_base_cls(self) -> type[Subtask]:

        return EmotionalSupport

    def fast_replicates(self, ctx: RunContext) -> Replicates:
        return support_replicates
