"""`reliability/psychological_diagnosis` (gated D4 / SWMH, or any CSV/JSON(L) through a generic adapter).

`PsychologicalDiagnosis.perturbable_items` hands the robustness pillar the same items with only the user's
text perturbed."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import (
    GenConfig,
    Item,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
)
from trustmh.data import resolve
from trustmh.judges.parse import extract_json_object, normalise_label, parse_label
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.reliability.common import (
    Perturb,
    classification_counts,
    classification_metrics,
    f1_from_totals,
)
from trustmh.pillars.reliability.data import (
    GENERATION_OPTIONS,
    SWMH_PRESET,
    ClassificationSpec,
    canonical_label,
    diagnosis_specs,
    load_classification,
    missing_field_error,
)
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.starter import load_starter
from trustmh.stats.bootstrap import cluster_draw_counts, percentile_ci

DIAGNOSIS_PER_DATASET = 500


def label_block(labels: Sequence[str], definitions: Mapping[str, str] | None) -> str:
    defs = definitions or {}
    return "\n".join(f"- {lab}: {defs[lab]}" if defs.get(lab) else f"- {lab}" for lab in labels)


def dialogue_block(turns: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(f"{'Patient' if t['role'] == 'patient' else 'Doctor'}: {t['text']}" for t in turns)


def diagnosis_prompt(metadata: Mapping[str, Any], *, text: str | None = None,
                     turns: Sequence[Mapping[str, str]] | None = None) -> str:
    labels = metadata["labels"]
    if metadata["kind"] == "post":
        kind, header, content = "a post from an online mental-health forum", "Post:", text
    else:
        kind, header = "a conversation between a doctor and a patient", "Conversation:"
        content = dialogue_block(turns or [])
    return render("diagnosis", input_kind=kind, labels=label_block(labels, metadata.get("definitions")),
                  content_header=header, content=content)


def parse_diagnosis(text: str | None, labels: Sequence[str]) -> str | None:
    """JSON `label` (string or number) matched after normalisation, else the unique label string in the
    reply (lower case, `-`/space → `_`), else None (invalid)."""
    if not text:
        return None
    canon = {normalise_label(lab): lab for lab in labels}
    obj = extract_json_object(text)
    if obj is not None:
        v = obj.get("label")
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = str(int(v)) if float(v).is_integer() else str(v)
        if isinstance(v, str) and normalise_label(v) in canon:
            return canon[normalise_label(v)]
    return parse_label(text, labels)


class PsychologicalDiagnosis(Subtask):
    id = "reliability/psychological_diagnosis"
    task_name = "psychological_diagnosis"
    anchors = same_anchors(0.2, 1.0)
    options = GENERATION_OPTIONS
    per_item = {"faithful": 'primary metric averages per-dataset classification scores, not per-item values', "default": 'primary metric averages per-dataset classification scores, not per-item values'}
    title = "Psychological diagnosis (D4, SWMH; gated)"
    metric_labels = {
        "mean_accuracy": "accuracy, mean over the datasets", "mean_weighted_f1": "F1 weighted by class size, mean "
        "over the datasets", "mean_macro_f1": "macro-averaged F1, mean over the datasets",
        "accuracy_{dataset}": "share of posts given the right diagnosis ({dataset})",
        "weighted_f1_{dataset}": "F1 weighted by class size ({dataset})",
        "macro_f1_{dataset}": "macro-averaged F1 over the diagnoses ({dataset})",
        "invalid_rate": "share of replies naming no diagnosis (counted as wrong)",
    }
    datasets = ("d4", "swmh")
    judge_use = "no"
    format_reminder = ('Please answer with only a JSON object of the form {"label": "<category>"}, where '
                       '<category> is exactly one of the categories listed above.')

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0, max_tokens=1024)

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        reason = super().not_computed_reason(ctx)
        if reason is not None or ctx.suite == "starter":
            return reason
        if not diagnosis_specs(ctx.options):
            return "gated dataset not supplied (pass -O swmh_path=... or -O d4_path=...)"
        return None

    def _dataset_rows(self, ctx: RunContext) -> list[tuple[ClassificationSpec, list[dict[str, Any]]]]:
        if ctx.suite == "starter":
            # Starter rows are SWMH-shaped (`text`, `label` with "self." prefixes) and go through the preset.
            spec = replace(SWMH_PRESET, dataset="starter", split=None)
            rows = []
            for i, r in enumerate(load_starter(self.id)):
                where = f"starter {self.id} line {i + 1}"
                if "text" not in r or "label" not in r:
                    raise missing_field_error(r, "text" if "text" not in r else "label", spec, where, "")
                rows.append({"row_index": i, "text": str(r["text"]).strip(),
                             "label": canonical_label(r["label"], spec, where)})
            return [(spec, rows)]
        specs = diagnosis_specs(ctx.options)
        if not specs:
            raise TrustmhError("gated dataset not supplied (pass -O swmh_path=... or -O d4_path=...)")
        out = []
        for spec, user_path in specs:
            registry_name = spec.dataset if spec.dataset in ("swmh", "d4") else None
            path = resolve(registry_name, "", user_path) if registry_name else Path(user_path)
            out.append((spec, load_classification(path, spec)))
        return out

    def items(self, ctx: RunContext) -> list[Item]:
        out: list[Item] = []
        for spec, rows in self._dataset_rows(ctx):
            # Real datasets: a seeded stratified DIAGNOSIS_PER_DATASET per dataset; the starter uses every row.
            chosen = apply_limit(rows, ctx, "label",
                                 pool=None if ctx.suite == "starter" else DIAGNOSIS_PER_DATASET)
            labels = list(spec.labels) if spec.labels is not None else sorted({r["label"] for r in rows})
            definitions = dict(spec.labels) if spec.labels is not None else {}
            for r in chosen:
                md: dict[str, Any] = {"dataset": spec.dataset, "labels": labels, "definitions": definitions,
                                      "row_index": r["row_index"], "preset_verified": spec.verified}
                if "text" in r:
                    md.update(kind="post", text=r["text"])
                    prompt = diagnosis_prompt(md, text=r["text"])
                else:
                    md.update(kind="dialogue", turns=r["turns"])
                    prompt = diagnosis_prompt(md, turns=r["turns"])
                out.append(Item(id=f"{spec.dataset}-{r['row_index']:06d}", prompt=prompt, target=r["label"],
                                metadata=md))
        return out

    def perturbable_items(self, ctx: RunContext, perturb: Perturb) -> list[Item]:
        """The same items (same ids, targets, instructions and label set) with only the user's words
        perturbed: the post, or each patient turn of a dialogue.

        `perturb(key, text)` returns the perturbed text; `key` is the item id for a post, and
        `f"{item.id}#{k}"` for the k-th turn of a dialogue (k = turn position), so that each turn draws
        its own randomness. The perturbed text is kept in `metadata["perturbed_text"]` (post) or
        `metadata["perturbed_turns"]` (dialogue); the clean text stays in `text` / `turns`.
        """
        out = []
        for item in self.items(ctx):
            md = dict(item.metadata)
            md["perturbed"] = True
            if md["kind"] == "post":
                md["perturbed_text"] = perturb(item.id, md["text"])
                prompt = diagnosis_prompt(md, text=md["perturbed_text"])
            else:
                md["perturbed_turns"] = [
                    {**t, "text": perturb(f"{item.id}#{k}", t["text"])} if t["role"] == "patient" else dict(t)
                    for k, t in enumerate(md["turns"])]
                prompt = diagnosis_prompt(md, turns=md["perturbed_turns"])
            out.append(replace(item, prompt=prompt, metadata=md))
        return out

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        return parse_diagnosis(text, item.metadata["labels"]) is not None

    def answer_schema(self, item: Item, ctx: RunContext) -> dict[str, Any] | None:
        return json_object_schema(enums={"label": item.metadata["labels"]})  # the JSON `label` parse_diagnosis reads

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        pred = parse_diagnosis(response, item.metadata["labels"])
        return {"valid": pred is not None, "pred": pred, "correct": pred is not None and pred == item.target}

    def primary_key(self, ctx: RunContext) -> str:
        return "accuracy" if ctx.mode == "faithful" else "weighted_f1"

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        if not records:
            return SubtaskResult.not_computed("no items scored", "higher")
        by_ds: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(records):
            by_ds[str(r.metadata["dataset"])].append(i)
        key = self.primary_key(ctx)
        per_ds: dict[str, Any] = {}
        parts = []
        for ds, idx in by_ds.items():
            labels = list(records[idx[0]].metadata["labels"])
            gold = [str(records[i].metadata["target"]) for i in idx]
            pred = [records[i].score["pred"] for i in idx]
            per_ds[ds] = classification_metrics(gold, pred, labels)
            parts.append((idx, *classification_counts(gold, pred, labels)))
        value = float(np.mean([per_ds[ds][key] for ds in by_ds]))
        # Item bootstrap (items are independent posts/dialogues), composite recomputed per replicate.
        w = cluster_draw_counts(len(records), ctx.n_boot, ctx.seed)
        reps = np.zeros(ctx.n_boot)
        for idx, g, p, tp in parts:
            wd = w[:, idx]
            reps += f1_from_totals(wd @ tp, wd @ g, wd @ p)[key]
        reps /= len(parts)
        ci = percentile_ci(reps)
        n_invalid = sum(not r.score["valid"] for r in records)
        metrics: dict[str, Any] = {
            "mean_accuracy": float(np.mean([m["accuracy"] for m in per_ds.values()])),
            "mean_weighted_f1": float(np.mean([m["weighted_f1"] for m in per_ds.values()])),
            "mean_macro_f1": float(np.mean([m["macro_f1"] for m in per_ds.values()])),
            "invalid_rate": n_invalid / len(records),
            "by_dataset": per_ds,
        }
        for ds, m in per_ds.items():
            for k in ("accuracy", "weighted_f1", "macro_f1"):
                metrics[f"{k}_{ds}"] = m[k]
        notes = ["invalid (unparseable) replies count as wrong",
                 f"primary: mean {key.replace('_', ' ')} over datasets ({', '.join(by_ds)})"]
        unverified = sorted({str(r.metadata["dataset"]) for r in records
                             if not r.metadata.get("preset_verified", True) and r.metadata["dataset"] != "starter"})
        if unverified:
            notes.append(f"field presets for {', '.join(unverified)} are unverified against a real copy")
        if ctx.suite == "starter":
            notes.append("starter suite: invented demonstration posts, not SWMH or D4")
        return SubtaskResult(value=value, ci=ci, n=len(records), n_invalid=n_invalid, direction="higher",
                             metrics=metrics, method="rule", notes=notes)
