"""`robustness/psychological_diagnosis`: diagnosis classification under perturbed user text."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from trustmh.core import Record, RunContext, Subtask
from trustmh.pillars.reliability.common import classification_counts, f1_from_totals
from trustmh.pillars.reliability.diagnosis import PsychologicalDiagnosis
from trustmh.pillars.robustness.base import DIAGNOSIS_BASE_ID, OPTIONS, Replicates, RobustnessBase


def diagnosis_replicates_for(primary_key: str) -> Replicates:
    """Per-replicate mean over datasets of accuracy / weighted F1 (as `PsychologicalDiagnosis.aggregate`)."""

    def stat(records: Sequence[Record], weights: np.ndarray, ctx: RunContext) -> np.ndarray:

        by_ds: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(records):
            by_ds[str(r.metadata["dataset"])].append(i)
        out = np.zeros(weights.shape[0])
        for idx in by_ds.values():
            labels = list(records[idx[0]].metadata["labels"])
            gold = [str(records[i].metadata["target"]) for i in idx]
            pred = [records[i].score.get("pred") for i in idx]
            g, p, tp = classification_counts(gold, pred, labels)
            wd = weights[:, idx]
            with np.errstate(invalid="ignore", divide="ignore"):
                out += f1_from_totals(wd @ tp, wd @ g, wd @ p)[primary_key]
        return out / len(by_ds) if by_ds else np.full(weights.shape[0], np.nan)

    return stat


class RobustnessDiagnosis(RobustnessBase):
    id = "robustness/psychological_diagnosis"
    task_name = "robustness_psychological_diagnosis"
    anchors = {"faithful": (0.5, 0.0), "default": (0.0, 1.0)}
    options = OPTIONS
    per_item = {"faithful": 'primary metric is a relative drop of the clean score, not a mean of per-item values', "default": 'primary metric is a retention ratio of perturbed to clean scores, not a mean of per-item values'}
    title = "Robustness of diagnosis"
    base_id = DIAGNOSIS_BASE_ID
    datasets = ("d4", "swmh")
    judge_use = "no"

    def _default_base_cls(self) -> type[Subtask]:

        return PsychologicalDiagnosis

    def fast_replicates(self, ctx: RunContext) -> Replicates:
        key_fn = getattr(self.base, "primary_key", None)
        key = key_fn(ctx) if key_fn is not None else ("accuracy" if ctx.mode == "faithful" else "weighted_f1")
        return diagnosis_replicates_for(key)
