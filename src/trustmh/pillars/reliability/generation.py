"""Reliability, generative and classification sub-tasks (docs/pillars/reliability.md#reliability):

* `reliability/psychological_diagnosis` (gated D4 / SWMH, or any CSV/JSON(L) through a generic adapter);
* `reliability/emotional_support` (ESConv; judged by the shared support-quality judge);
* `reliability/psychological_intervention` (CPsyCounE; judged on the CPsyCoun dimensions).

Plain Python. Loaders, parsers and metrics are module-level functions so that `fairness`, `robustness`,
rescoring and tests use them directly. `PsychologicalDiagnosis.perturbable_items` and
`EmotionalSupport.perturbable_items` hand the robustness pillar the same items with only the user's text
perturbed.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import (
    ChecksumError,
    GenConfig,
    Item,
    JudgeRequest,
    Option,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    same_anchors,
    truthy,
)
from trustmh.data import resolve
from trustmh.data.files import read_table
from trustmh.judges.parse import (
    extract_json_object,
    extract_judge_object,
    int_in_range,
    normalise_label,
    parse_label,
)
from trustmh.judges.schema import json_object_schema
from trustmh.prompts import render
from trustmh.sampling import apply_limit
from trustmh.scoring.support_judge import (
    SUPPORT_DIMENSIONS,
    clean_reply,
    format_transcript,
    reply_valid,
    support_judge_request,
    support_score,
)
from trustmh.starter import load_starter
from trustmh.stats.bootstrap import bootstrap_mean, cluster_draw_counts, percentile_ci

Perturb = Callable[[str, str], str]


def seeded_rng(*parts: object) -> random.Random:
    """A `random.Random` keyed by the parts (stable across runs and Python versions)."""
    key = "|".join(str(p) for p in parts).encode("utf-8")
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def _demo_judge_note(ctx: RunContext) -> list[str]:
    if ctx.judge.validated:
        return []
    return ["judge is not validated against human ratings for this task (demo or unvalidated judge): "
            "treat the scores as indicative"]


def _mean_or_none(xs: Iterable[float | None]) -> float | None:
    vals = [float(x) for x in xs if x is not None]
    return float(np.mean(vals)) if vals else None


# ==========================================================================================================
# reliability/psychological_diagnosis
# ==========================================================================================================

SWMH_LABELS: dict[str, str] = {
    "depression": "persistent low mood, loss of interest or hopelessness is the main concern",
    "suicidewatch": "the writer talks about wanting to die, ending their life or not wanting to be alive",
    "anxiety": "worry, nervousness, panic or fear that is hard to control is the main concern",
    "bipolar": "mood swings between highs (energy, little sleep, racing thoughts) and lows, or life "
               "with a bipolar diagnosis",
    "offmychest": "the writer wants to vent or share something personal, without a specific mental-health "
                  "condition being the focus",
}
D4_LABELS: dict[str, str] = {
    "none": "no sign of depression",
    "mild": "mild depressive symptoms",
    "moderate": "moderate depressive symptoms",
    "severe": "severe depressive symptoms",
}
# D4 severity scores 0-3 (unverified: see the preset).
D4_LABEL_MAP: dict[str, str] = {"0": "none", "1": "mild", "2": "moderate", "3": "severe"}
DIAGNOSIS_PER_DATASET = 500
INVALID_LABEL = "invalid"
PATIENT_SPEAKERS = ("patient", "患者", "病人", "来访者", "user", "seeker", "client")
DOCTOR_SPEAKERS = ("doctor", "医生", "sys", "system", "assistant", "supporter", "therapist", "counselor")


@dataclass(frozen=True)
class ClassificationSpec:
    """How to read one classification dataset (CSV, TSV, JSON list or JSONL) into (text|turns, label)."""

    dataset: str  # name used in item ids and per-dataset metrics
    label_field: str = "label"
    text_field: str | None = None
    turns_field: str | None = None  # a list of {speaker_key: ..., content_key: ...}
    speaker_key: str = "speaker"
    content_key: str = "content"
    strip_prefix: str | None = None  # removed from the raw label (SWMH: "self.")
    lowercase: bool = False
    label_map: Mapping[str, str] = field(default_factory=dict)  # raw (after strip/lower) -> canonical
    labels: Mapping[str, str] | None = None  # canonical label -> definition; None = read from the data
    split: str | None = None  # keep rows whose `split_field` equals this, or a file named <split>.* in a folder
    split_field: str = "split"
    verified: bool = False  # presets are unverified until checked on a real copy

    def __post_init__(self) -> None:
        if (self.text_field is None) == (self.turns_field is None):
            raise TrustmhError(f"diagnosis dataset {self.dataset}: give exactly one of text_field or turns_field")


SWMH_PRESET = ClassificationSpec(dataset="swmh", text_field="text", label_field="label", strip_prefix="self.",
                                 lowercase=True, labels=SWMH_LABELS, split="test")
# Unverified guess at D4's layout: `log` turns with `speaker`/`text`, depression severity `drisk` 0-3.
D4_PRESET = ClassificationSpec(dataset="d4", turns_field="log", speaker_key="speaker", content_key="text",
                               label_field="drisk", lowercase=True, label_map=D4_LABEL_MAP, labels=D4_LABELS,
                               split="test")


def _split_file(folder: Path, split: str | None) -> Path:
    files = sorted(p for p in folder.iterdir() if p.suffix.lower() in (".csv", ".tsv", ".json", ".jsonl"))
    if split is not None:
        hits = [p for p in files if p.stem.lower() == split.lower()]
        if len(hits) == 1:
            return hits[0]
    if len(files) == 1:
        return files[0]
    raise TrustmhError(f"{folder}: cannot tell which file to read (wanted {split or 'one'}.csv/.json/.jsonl); "
                       f"files found: {', '.join(p.name for p in files) or 'none'}")


def _canonical_label(raw: Any, spec: ClassificationSpec, where: str) -> str:
    if raw is None or isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise TrustmhError(f"{where}: field {spec.label_field!r} must be a string or a number, got {raw!r}")
    s = str(int(raw)) if isinstance(raw, float) and raw.is_integer() else str(raw)
    s = s.strip()
    if spec.strip_prefix and s.lower().startswith(spec.strip_prefix.lower()):
        s = s[len(spec.strip_prefix):]
    if spec.lowercase:
        s = s.lower()
    s = spec.label_map.get(s, s)
    if spec.labels is not None and s not in spec.labels:
        raise TrustmhError(f"{where}: field {spec.label_field!r} value {raw!r} is not one of the "
                           f"{spec.dataset} labels ({', '.join(spec.labels)})")
    if not s:
        raise TrustmhError(f"{where}: field {spec.label_field!r} is empty")
    return s


def _speaker_role(value: Any, where: str) -> str:
    v = str(value).strip().lower()
    if v in PATIENT_SPEAKERS:
        return "patient"
    if v in DOCTOR_SPEAKERS:
        return "doctor"
    raise TrustmhError(f"{where}: unknown speaker {value!r}; expected one of "
                       f"{', '.join(PATIENT_SPEAKERS)} (patient) or {', '.join(DOCTOR_SPEAKERS)} (doctor)")


def _missing(row: Mapping[str, Any], key: str, spec: ClassificationSpec, where: str, hint: str) -> TrustmhError:
    preset = "" if spec.verified else f" (the {spec.dataset} field names are an unverified preset)"
    return TrustmhError(f"{where}: no field {key!r}{preset}; keys found: {', '.join(map(str, row)) or 'none'}. "
                        f"{hint}")


def load_classification(path: str | Path, spec: ClassificationSpec) -> list[dict[str, Any]]:
    """Rows of a classification file as {"row_index", "label", and "text" or "turns"}.

    `path` may be a file or a folder (then the file named after `spec.split`, e.g. test.csv). A file with a
    `split_field` column keeps only the rows of `spec.split`. Any row lacking a field raises a
    `TrustmhError` naming the file, the row and the keys it does have.
    """
    path = Path(path)
    if not path.exists():
        raise TrustmhError(f"diagnosis dataset {spec.dataset}: {path} does not exist")
    if path.is_dir():
        path = _split_file(path, spec.split)
    rows = read_table(path)
    if not rows:
        raise TrustmhError(f"{path}: no rows")
    hint = ("Pass -O text_field=... (or turns_field=...) and -O label_field=... with -O diagnosis_path=... "
            "to name the fields.")
    if spec.split is not None and all(spec.split_field in r for r in rows):
        rows = [r for r in rows if str(r[spec.split_field]).strip().lower() == spec.split.lower()]
        if not rows:
            raise TrustmhError(f"{path}: no rows with {spec.split_field} == {spec.split!r}")
    out = []
    for i, row in enumerate(rows):
        where = f"{path} row {i + 1}"
        if spec.label_field not in row:
            raise _missing(row, spec.label_field, spec, where, hint)
        rec: dict[str, Any] = {"row_index": i, "label": _canonical_label(row[spec.label_field], spec, where)}
        if spec.text_field is not None:
            if spec.text_field not in row:
                raise _missing(row, spec.text_field, spec, where, hint)
            text = row[spec.text_field]
            if not isinstance(text, str) or not text.strip():
                raise TrustmhError(f"{where}: field {spec.text_field!r} must be a non-empty string")
            rec["text"] = text.strip()
        else:
            assert spec.turns_field is not None
            if spec.turns_field not in row:
                raise _missing(row, spec.turns_field, spec, where, hint)
            turns = row[spec.turns_field]
            if isinstance(turns, str):  # a JSON list stored in a CSV cell
                try:
                    turns = json.loads(turns)
                except json.JSONDecodeError as exc:
                    raise TrustmhError(f"{where}: field {spec.turns_field!r} is not a JSON list") from exc
            if not isinstance(turns, list) or not turns:
                raise TrustmhError(f"{where}: field {spec.turns_field!r} must be a non-empty list of turns")
            parsed = []
            for j, t in enumerate(turns):
                twhere = f"{where} field {spec.turns_field!r} turn {j}"
                if not isinstance(t, dict):
                    raise TrustmhError(f"{twhere}: expected an object with {spec.speaker_key!r} and "
                                       f"{spec.content_key!r}")
                for key in (spec.speaker_key, spec.content_key):
                    if key not in t:
                        raise _missing(t, key, spec, twhere, "Pass -O speaker_key=... / -O content_key=....")
                parsed.append({"role": _speaker_role(t[spec.speaker_key], twhere),
                               "text": str(t[spec.content_key]).strip()})
            rec["turns"] = parsed
        out.append(rec)
    return out


def diagnosis_specs(options: Mapping[str, Any]) -> list[tuple[ClassificationSpec, str]]:
    """(spec, user path) for every dataset the options name: swmh_path, d4_path, diagnosis_path."""
    out: list[tuple[ClassificationSpec, str]] = []
    if options.get("swmh_path"):
        out.append((SWMH_PRESET, str(options["swmh_path"])))
    if options.get("d4_path"):
        over = {k: options[f"d4_{k}"] for k in ("turns_field", "label_field", "speaker_key", "content_key")
                if options.get(f"d4_{k}")}
        out.append((replace(D4_PRESET, **over), str(options["d4_path"])))
    if options.get("diagnosis_path"):
        text_field, turns_field = options.get("text_field"), options.get("turns_field")
        if not text_field and not turns_field:
            raise TrustmhError("diagnosis_path needs -O text_field=... (or -O turns_field=...) and "
                               "-O label_field=...")
        spec = ClassificationSpec(
            dataset=str(options.get("diagnosis_name", "custom")), label_field=str(options.get("label_field", "label")),
            text_field=text_field or None, turns_field=None if text_field else turns_field,
            speaker_key=str(options.get("speaker_key", "speaker")),
            content_key=str(options.get("content_key", "content")),
            split=options.get("split") or None, lowercase=truthy(options.get("lowercase_labels")),
            verified=True)
        out.append((spec, str(options["diagnosis_path"])))
    return out


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


def classification_counts(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-hot (n, L) matrices: gold, prediction (all-zero row when invalid or unknown), true positives."""
    index = {lab: j for j, lab in enumerate(labels)}
    g = np.zeros((len(gold), len(labels)))
    p = np.zeros((len(gold), len(labels)))
    for i, (a, b) in enumerate(zip(gold, pred, strict=True)):
        g[i, index[a]] = 1.0
        if b is not None and b in index:
            p[i, index[b]] = 1.0
    return g, p, g * p


def f1_from_totals(tp: np.ndarray, gold: np.ndarray, pred: np.ndarray) -> dict[str, np.ndarray]:
    """accuracy, weighted F1 and macro-F1 from per-label totals (..., L), as sklearn computes them with
    `labels` = labels seen in gold or predictions and `zero_division=0` (invalid replies count as wrong)."""
    n = gold.sum(axis=-1)
    denom = gold + pred
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1), 0.0)
        present = denom > 0
        macro = (f1 * present).sum(axis=-1) / present.sum(axis=-1)
        weighted = (f1 * gold).sum(axis=-1) / n
        acc = tp.sum(axis=-1) / n
    return {"accuracy": acc, "weighted_f1": weighted, "macro_f1": macro}


def classification_metrics(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
                           ) -> dict[str, Any]:
    g, p, tp = classification_counts(gold, pred, labels)
    m = f1_from_totals(tp.sum(0), g.sum(0), p.sum(0))
    index = {lab: j for j, lab in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels) + 1), dtype=int)
    for a, b in zip(gold, pred, strict=True):
        matrix[index[a], index[b] if b in index else len(labels)] += 1
    return {"accuracy": float(m["accuracy"]), "weighted_f1": float(m["weighted_f1"]),
            "macro_f1": float(m["macro_f1"]), "n": len(gold),
            "invalid_rate": float(np.mean([b is None for b in pred])) if pred else None,
            "confusion": {"labels": list(labels), "columns": [*labels, INVALID_LABEL],
                          "matrix": matrix.tolist()}}



# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'd4_path': Option('D4 (gated) file'),
    'swmh_path': Option('SWMH (gated) file'),
    'diagnosis_path': Option('any diagnosis file'),
    'diagnosis_name': Option('name of that dataset'),
    'text_field': Option('its text column'),
    'turns_field': Option('its turns field'),
    'label_field': Option('its label column'),
    'speaker_key': Option('speaker key in turns'),
    'content_key': Option('content key'),
    'lowercase_labels': Option('1: lower-case labels'),
    'split': Option('split to read'),
    'esconv_path': Option('ESConv.json'),
    'esconv_processed_path': Option('processed ESConv split'),
    'cpsycoune_path': Option('CPsyCounE folder'),
}


def _support(rec: Mapping[str, Any], results: Mapping[str, Any]) -> float | None:
    score = rec["score"]
    if not score.get("judged") or not score.get("judge_valid") or score.get("support") is None:
        return None
    return float(score["support"])

class PsychologicalDiagnosis(Subtask):
    id = "reliability/psychological_diagnosis"
    task_name = "psychological_diagnosis"
    anchors = same_anchors(0.2, 1.0)
    options = OPTIONS
    per_item = {"faithful": 'primary metric averages per-dataset classification scores, not per-item values', "default": 'primary metric averages per-dataset classification scores, not per-item values'}
    title = "Psychological diagnosis (D4, SWMH; gated)"
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
                    raise _missing(r, "text" if "text" not in r else "label", spec, where, "")
                rows.append({"row_index": i, "text": str(r["text"]).strip(),
                             "label": _canonical_label(r["label"], spec, where)})
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


# ==========================================================================================================
# reliability/emotional_support (ESConv)
# ==========================================================================================================

ESCONV_JSON_RELPATH = "external/ESConv/ESConv.json"
ESCONV_TSV_RELPATHS = {"test": "external/ESConv/testWithStrategy_short.tsv",
                       "dev": "external/ESConv/devWithStrategy_short.tsv"}
ESCONV_DIALOGUES = 200
VARIANT_FULL = "full"
VARIANT_PROCESSED = "processed_test_split"
_SEGMENT = re.compile(r"^(\d+(?:\.\d+)?) ([01]) (\d+) (.*)$", re.DOTALL)
_STRATEGY = re.compile(r"^\[([^\]]+)\]\s*")


def parse_esconv_tsv_line(line: str, where: str) -> list[dict[str, Any]]:
    """One processed-ESConv line: ≤5 segments joined by ` EOS `, each `<flag> <speaker> <turn_idx> <text>`.

    Speaker 0 = seeker, 1 = supporter; supporter text starts with `[Strategy]`, moved to `strategy`.
    """
    segments = []
    for k, seg in enumerate(line.rstrip("\n").split(" EOS ")):
        m = _SEGMENT.match(seg)
        if not m:
            raise TrustmhError(f"{where} segment {k + 1}: expected '<flag> <speaker 0|1> <turn_idx> <text>', "
                               f"got {seg[:60]!r}")
        flag, speaker, turn_idx, text = m.groups()
        strategy = None
        if speaker == "1":
            sm = _STRATEGY.match(text)
            if sm is None:
                raise TrustmhError(f"{where} segment {k + 1}: supporter text does not start with [Strategy]")
            strategy, text = sm.group(1), text[sm.end():]
        segments.append({"flag": float(flag), "speaker": "seeker" if speaker == "0" else "supporter",
                         "turn_idx": int(turn_idx), "text": text.strip(), "strategy": strategy})
    if segments[-1]["speaker"] != "supporter":
        raise TrustmhError(f"{where}: the last segment (the gold turn) is not a supporter turn")
    return segments


def load_esconv_tsv(path: str | Path) -> list[list[dict[str, Any]]]:
    """Every line of a processed ESConv split, parsed."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    return [parse_esconv_tsv_line(line, f"{path} line {i + 1}") for i, line in enumerate(lines) if line.strip()]


def esconv_tsv_dialogues(samples: Sequence[Sequence[dict[str, Any]]], prefix: str) -> list[dict[str, Any]]:
    """Rebuild dialogues from the overlapping windows: a line continues the current dialogue when its last
    turn index is larger and every turn it shares with the dialogue has the same speaker and text.

    Each dialogue: {"id", "turns": [{"speaker", "text", "strategy", "turn_idx"}] sorted by turn_idx};
    turn indices may have gaps where more than 4 turns passed between two supporter turns.
    """
    dialogues: list[dict[int, dict[str, Any]]] = []
    cur: dict[int, dict[str, Any]] | None = None
    for segs in samples:
        cont = cur is not None and segs[-1]["turn_idx"] > max(cur) and all(
            s["turn_idx"] not in cur or (cur[s["turn_idx"]]["text"] == s["text"]
                                         and cur[s["turn_idx"]]["speaker"] == s["speaker"]) for s in segs)
        if not cont:
            cur = {}
            dialogues.append(cur)
        assert cur is not None
        for s in segs:
            cur[s["turn_idx"]] = {k: s[k] for k in ("speaker", "text", "strategy", "turn_idx")}
    return [{"id": f"{prefix}-{k:03d}", "turns": [d[i] for i in sorted(d)]} for k, d in enumerate(dialogues)]


def load_esconv_json(path: str | Path) -> list[dict[str, Any]]:
    """ESConv-schema dialogues (ESConv.json, ESConv_fair.json): a JSON list of objects with `dialog`, a list
    of {speaker: seeker|supporter, annotation: {...}, content}. Content is stripped; the supporter's
    strategy comes from `annotation.strategy`. Other fields are kept."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    if not isinstance(data, list):
        raise TrustmhError(f"{path}: expected a JSON list of dialogues")
    return [validate_esconv_dialogue(d, f"{path} dialogue {i}") for i, d in enumerate(data)]


def validate_esconv_dialogue(d: Any, where: str) -> dict[str, Any]:
    if not isinstance(d, dict) or not isinstance(d.get("dialog"), list) or not d["dialog"]:
        keys = ", ".join(d) if isinstance(d, dict) else type(d).__name__
        raise TrustmhError(f"{where}: expected an object with a non-empty 'dialog' list (keys found: {keys})")
    turns = []
    for j, t in enumerate(d["dialog"]):
        if not isinstance(t, dict) or t.get("speaker") not in ("seeker", "supporter"):
            raise TrustmhError(f"{where} turn {j}: field 'speaker' must be 'seeker' or 'supporter'")
        if not isinstance(t.get("content"), str):
            raise TrustmhError(f"{where} turn {j}: field 'content' must be a string")
        ann = t.get("annotation") or {}
        turns.append({"speaker": t["speaker"], "text": t["content"].strip(),
                      "strategy": ann.get("strategy") if isinstance(ann, dict) else None, "turn_idx": j})
    return {**{k: v for k, v in d.items() if k != "dialog"}, "turns": turns}


def eligible_cuts(turns: Sequence[Mapping[str, Any]]) -> list[int]:
    """Positions p of supporter turns that may be the gold turn: the turn before is the seeker's, at least
    2 seeker turns come before, and the context turns[:p] has no missing turn (turn_idx = position)."""
    out = []
    seekers = 0
    for p, t in enumerate(turns):
        if t["turn_idx"] != p:  # a missing turn: no later cut has a complete context
            break
        if t["speaker"] == "supporter" and p > 0 and turns[p - 1]["speaker"] == "seeker" and seekers >= 2:
            out.append(p)
        if t["speaker"] == "seeker":
            seekers += 1
    return out


def context_turns(turns: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    return [{"speaker": t["speaker"], "text": t["text"]} for t in turns]


def rouge_l(candidate: str, reference: str) -> float | None:
    """ROUGE-L F1 over lower-cased word tokens (LCS-based); None when either side has no tokens."""
    a = re.findall(r"\w+", candidate.lower())
    b = re.findall(r"\w+", reference.lower())
    if not a or not b:
        return None
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            cur[j] = prev[j - 1] + 1 if x == y else max(prev[j], cur[j - 1])
        prev = cur
    lcs = prev[-1]
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def support_generation_prompt(context: Sequence[Mapping[str, str]]) -> str:
    return render("emotional_support", transcript=format_transcript(context))


def aggregate_support(records: Sequence[Record], ctx: RunContext, *, what: str) -> SubtaskResult:
    """Mean support quality (mean of the 4 judge dimensions per reply), dialogue-cluster bootstrap.

    Shared by `reliability/emotional_support` and `robustness/emotional_support` (on perturbed items).
    """
    direction = "higher"
    if not records:
        return SubtaskResult.not_computed("no items scored", direction)
    judged = [r for r in records if r.score.get("judged")]
    n_bad_reply = sum(1 for r in records if not r.score["valid"])
    metrics: dict[str, Any] = {"n_replies": len(records), "n_invalid_replies": n_bad_reply}
    if not judged:
        return SubtaskResult.not_computed("no judge configured", direction, n=len(records), metrics=metrics)
    valid = [r for r in judged if r.score.get("judge_valid")]
    n_judge_invalid = len(judged) - len(valid)
    metrics["n_judge_invalid"] = n_judge_invalid
    metrics["judge_invalid_rate"] = n_judge_invalid / len(judged)
    n_invalid = sum(1 for r in judged if not r.score["valid"] or not r.score.get("judge_valid"))
    if not valid:
        return SubtaskResult.not_computed("no valid judge output", direction, n=len(judged), n_invalid=n_invalid,
                                          metrics=metrics)
    value, ci = bootstrap_mean([float(r.score["support"]) for r in valid], [r.cluster for r in valid],
                               seed=ctx.seed, n_boot=ctx.n_boot)
    metrics["mean_support"] = value
    for d in SUPPORT_DIMENSIONS:
        metrics[f"mean_{d}"] = _mean_or_none(r.score.get(d) for r in valid)
    metrics["share_support_le_2"] = float(np.mean([r.score["support"] <= 2 for r in valid]))
    metrics["n_dialogues"] = len({r.cluster for r in records})
    rouge = [r.score.get("ref_rougeL") for r in records]
    metrics["ref_rougeL"] = _mean_or_none(rouge)
    variants = sorted({str(r.metadata.get("dataset_variant")) for r in records if r.metadata.get("dataset_variant")})
    if variants:
        metrics["dataset_variant"] = variants[0] if len(variants) == 1 else variants
    notes = [f"{what}: mean of empathy, helpfulness, safety and fluency (1-5) per reply; unit of resampling: "
             "dialogue; invalid judge outputs are counted in n_invalid and left out of the mean; empty "
             "replies score 1",
             "ref_rougeL (word-level ROUGE-L F1 against the gold supporter turn) is secondary; the judge "
             "never sees the gold turn"]
    if VARIANT_PROCESSED in variants:
        why = next((r.metadata["fallback_reason"] for r in records if r.metadata.get("fallback_reason")), None)
        metrics["fallback_reason"] = why
        notes.append("dataset_variant: processed_test_split - ESConv.json was not available"
                     + (f" ({why})" if why else "") + "; dialogues were rebuilt from the processed test split "
                     "(testWithStrategy_short.tsv); supply it with -O esconv_path=FILE")
    if ctx.suite == "starter":
        notes.append("starter suite: invented demonstration dialogues, not ESConv")
    notes += _demo_judge_note(ctx)
    res = SubtaskResult(value=value, ci=ci, n=len(judged), n_invalid=n_invalid, direction=direction,
                        metrics=metrics, method="judge", notes=notes)
    res.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
    return res


class EmotionalSupport(Subtask):
    id = "reliability/emotional_support"
    task_name = "emotional_support"
    anchors = same_anchors(1.0, 5.0)
    options = OPTIONS
    per_item = {"faithful": _support, "default": _support}
    title = "Emotional support (ESConv)"
    datasets = ("esconv", "esconv_processed")
    judge_use = "yes"
    format_reminder = None  # a free reply: nothing to parse

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0, max_tokens=1024)

    requires_judge = True  # no rule fallback: without a judge the sub-task is not computed

    def dialogues(self, ctx: RunContext) -> tuple[list[dict[str, Any]], str, str | None]:
        """(dialogues, dataset_variant, why ESConv.json was not used): the full ESConv.json when it can be had,
        else the processed test split (docs/pillars/reliability.md#reliability). A checksum mismatch is raised, never fallen back from."""
        if ctx.suite == "starter":
            return [validate_esconv_dialogue(d, f"starter {self.id} line {i + 1}") | {"id": d.get("id", f"s{i}")}
                    for i, d in enumerate(load_starter(self.id))], "starter", None
        user_path = ctx.options.get("esconv_path")
        try:
            path = resolve("esconv", ESCONV_JSON_RELPATH, user_path)
        except ChecksumError:
            raise  # a wrong ESConv.json is bad data, never a reason to use other data
        except TrustmhError as exc:
            if user_path:
                raise
            why = str(exc)
        else:
            return ([d | {"id": f"esconv-{i:04d}"} for i, d in enumerate(load_esconv_json(path))], VARIANT_FULL,
                    None)
        path = resolve("esconv_processed", ESCONV_TSV_RELPATHS["test"], ctx.options.get("esconv_processed_path"))
        return esconv_tsv_dialogues(load_esconv_tsv(path), "test"), VARIANT_PROCESSED, why

    def items(self, ctx: RunContext) -> list[Item]:
        dialogues, variant, why = self.dialogues(ctx)
        eligible = [(d, cuts) for d in dialogues if (cuts := eligible_cuts(d["turns"]))]
        if ctx.suite == "starter":
            chosen = eligible if ctx.limit is None else eligible[: ctx.limit]
        else:
            # A seeded stratified 200 by emotion; faithful --limit keeps the head of the 200.
            chosen = apply_limit(eligible, ctx, lambda dc: dc[0].get("emotion_type", ""), pool=ESCONV_DIALOGUES)
        out = []
        for d, cuts in chosen:
            p = seeded_rng(ctx.seed, d["id"], "cut").choice(cuts)
            context = context_turns(d["turns"][:p])
            gold = d["turns"][p]
            md = {"context": context, "dialogue_id": d["id"], "cut_turn": p, "gold_strategy": gold.get("strategy"),
                  "dataset_variant": variant, "fallback_reason": why, "emotion_type": d.get("emotion_type"),
                  "problem_type": d.get("problem_type")}
            out.append(Item(id=f"{d['id']}-t{p:02d}", prompt=support_generation_prompt(context), target=gold["text"],
                            cluster=d["id"], metadata=md))
        return out

    def perturbable_items(self, ctx: RunContext, perturb: Perturb) -> list[Item]:
        """The same items (same ids, clusters, targets) with only the seeker's turns perturbed.

        `perturb(key, text)` is called once per seeker turn with `key = f"{item.id}#{k}"` (k = the turn's
        position in the context), so every turn draws its own randomness. The model's prompt is rebuilt
        from `metadata["perturbed_context"]`; `metadata["context"]` stays clean and is what the judge sees
        (the judge rates the reply against what the seeker meant, not against the noise).
        """
        out = []
        for item in self.items(ctx):
            md = dict(item.metadata)
            md["perturbed_context"] = [
                {**t, "text": perturb(f"{item.id}#{k}", t["text"])} if t["speaker"] == "seeker" else dict(t)
                for k, t in enumerate(md["context"])]
            md["perturbed"] = True
            out.append(replace(item, prompt=support_generation_prompt(md["perturbed_context"]), metadata=md))
        return out

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        if not reply_valid(response):
            return []  # an empty reply is scored 1 without asking the judge
        return [support_judge_request(item.metadata.get("judge_context", item.metadata["context"]), response)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        out = support_score(response, judge_outputs)
        out["ref_rougeL"] = rouge_l(clean_reply(response), item.target) if isinstance(item.target, str) else None
        return out

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        return aggregate_support(records, ctx, what="support quality")


# ==========================================================================================================
# reliability/psychological_intervention (CPsyCounE)
# ==========================================================================================================

CPSYCOUNE_RELDIR = "external/CPsyCounE"
CPSYCOUNE_TOPICS: tuple[str, ...] = ("Career", "Education", "Emotion&Stress", "Family Relationship",
                                     "Love&Marriage", "Mental Disease", "Self-growth", "Sex",
                                     "Social Relationship")
CLIENT_PREFIX = "求助者："
COUNSELLOR_PREFIX = "支持者："
INTERVENTION_RANGES: dict[str, tuple[int, int]] = {"comprehensiveness": (0, 2), "professionalism": (0, 3),
                                                   "authenticity": (0, 3), "safety": (0, 1)}
INTERVENTION_MAX = sum(hi for _, hi in INTERVENTION_RANGES.values())  # 9
INTERVENTION_REQUEST = "cpsycoun"
# What `parse_intervention_judge` accepts; the rationale is optional (recorded as "" when absent).
INTERVENTION_JUDGE_SCHEMA = json_object_schema(integers=INTERVENTION_RANGES, strings=("rationale",),
                                               optional=("rationale",))


def validate_cpsycoune_dialogue(data: Any, where: str) -> list[tuple[str, str]]:
    """[(role, text)] from a list alternating `求助者：…` (client, even index) / `支持者：…` (counsellor)."""
    if not isinstance(data, list) or not data or len(data) % 2:
        raise TrustmhError(f"{where}: expected a non-empty JSON list of strings of even length")
    out = []
    for i, s in enumerate(data):
        prefix, role = (CLIENT_PREFIX, "client") if i % 2 == 0 else (COUNSELLOR_PREFIX, "counsellor")
        if not isinstance(s, str) or not s.startswith(prefix):
            raise TrustmhError(f"{where} entry {i}: expected a string starting with {prefix!r}")
        out.append((role, s[len(prefix):].strip()))
    return out


def load_cpsycoune(folder: str | Path) -> list[dict[str, Any]]:
    """The 45 dialogues: {"id": "<Topic>/<n>", "topic", "number", "turns": [(role, text)]}."""
    folder = Path(folder)
    out = []
    for topic in CPSYCOUNE_TOPICS:
        files = sorted((folder / topic).glob("*.json"), key=lambda p: (len(p.stem), p.stem))
        if not files:
            raise TrustmhError(f"CPsyCounE: no dialogue files in {folder / topic}")
        for f in files:
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise TrustmhError(f"{f}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
            out.append({"id": f"{topic}/{f.stem}", "topic": topic, "number": f.stem,
                        "turns": validate_cpsycoune_dialogue(data, str(f))})
    return out


def cpsycoune_history(turns: Sequence[Sequence[str]]) -> str:
    if not turns:
        return "（这是对话的开始，此前没有对话。）"
    return "\n".join(f"{CLIENT_PREFIX if role == 'client' else COUNSELLOR_PREFIX}{text}" for role, text in turns)


def intervention_items(dialogues: Sequence[dict[str, Any]]) -> list[Item]:
    """One item per client turn: gold history + that turn → the counsellor's next reply."""
    out = []
    for d in dialogues:
        turns = d["turns"]
        for i in range(0, len(turns), 2):
            history = [list(t) for t in turns[:i]]
            message = turns[i][1]
            md = {"dialogue_id": d["id"], "topic": d["topic"], "turn": i // 2 + 1, "history": history,
                  "message": message}
            slug = re.sub(r"[^A-Za-z0-9]+", "-", d["id"]).strip("-").lower()
            out.append(Item(id=f"cpsycoune-{slug}-c{i // 2 + 1:02d}",
                            prompt=render("intervention_zh", history=cpsycoune_history(history), message=message),
                            target=turns[i + 1][1], cluster=d["id"], metadata=md))
    return out


def parse_intervention_judge(text: str | None) -> dict[str, Any] | None:
    """The 4 CPsyCoun scores (each in its own range) + rationale + total 0-9; None if any is invalid."""
    obj = extract_judge_object(text)
    if obj is None:
        return None
    out: dict[str, Any] = {}
    for key, (lo, hi) in INTERVENTION_RANGES.items():
        v = int_in_range(obj.get(key), lo, hi)
        if v is None:
            return None
        out[key] = v
    out["total"] = sum(out[k] for k in INTERVENTION_RANGES)
    out["rationale"] = obj["rationale"] if isinstance(obj.get("rationale"), str) else ""
    return out


class PsychologicalIntervention(Subtask):
    id = "reliability/psychological_intervention"
    task_name = "psychological_intervention"
    anchors = same_anchors(0.0, 9.0)
    options = OPTIONS
    per_item = {"faithful": 'primary metric is a mean over dialogues of per-dialogue means (dialogues have different numbers of items), not a mean of per-item values', "default": 'primary metric is a mean over dialogues of per-dialogue means (dialogues have different numbers of items), not a mean of per-item values'}
    title = "Psychological intervention (CPsyCounE)"
    datasets = ("cpsycoune",)
    judge_use = "yes"
    format_reminder = None

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(temperature=0.0, max_tokens=1024)

    requires_judge = True  # no rule fallback: without a judge the sub-task is not computed

    def items(self, ctx: RunContext) -> list[Item]:
        if ctx.suite == "starter":
            dialogues = []
            for i, row in enumerate(load_starter(self.id)):
                where = f"starter {self.id} line {i + 1}"
                if not isinstance(row, dict) or "dialogue" not in row or "topic" not in row:
                    raise TrustmhError(f"{where}: expected fields 'topic' and 'dialogue'")
                dialogues.append({"id": f"{row['topic']}/{row.get('id', i)}", "topic": row["topic"],
                                  "turns": validate_cpsycoune_dialogue(row["dialogue"], where)})
        else:
            dialogues = load_cpsycoune(resolve("cpsycoune", CPSYCOUNE_RELDIR, ctx.options.get("cpsycoune_path")))
        items = intervention_items(dialogues)
        return apply_limit(items, ctx, lambda it: it.metadata["topic"])

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        if not reply_valid(response):
            return []
        prompt = render("intervention_judge", history=cpsycoune_history(item.metadata["history"]),
                        message=item.metadata["message"], reply=clean_reply(response))
        return [JudgeRequest(name=INTERVENTION_REQUEST, prompt=prompt,
                             validate=lambda t: parse_intervention_judge(t) is not None,
                             schema=INTERVENTION_JUDGE_SCHEMA)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        valid = reply_valid(response)
        out: dict[str, Any] = {"valid": valid, "judged": judge_outputs is not None}
        if judge_outputs is None:
            return out
        if not valid:  # an empty reply gets the minimum on every dimension, never dropped
            out.update({k: lo for k, (lo, _) in INTERVENTION_RANGES.items()})
            out.update({"total": 0, "judge_valid": True, "rationale": "empty reply", "empty_reply": True})
            return out
        parsed = parse_intervention_judge(judge_outputs.get(INTERVENTION_REQUEST))
        if parsed is None:
            out.update({k: None for k in INTERVENTION_RANGES})
            out.update({"total": None, "judge_valid": False})
            return out
        out.update(parsed)
        out["judge_valid"] = True
        return out

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        direction = "higher"
        if not records:
            return SubtaskResult.not_computed("no items scored", direction)
        judged = [r for r in records if r.score.get("judged")]
        metrics: dict[str, Any] = {"n_replies": len(records),
                                   "n_invalid_replies": sum(1 for r in records if not r.score["valid"])}
        if not judged:
            return SubtaskResult.not_computed("no judge configured", direction, n=len(records), metrics=metrics)
        valid = [r for r in judged if r.score.get("judge_valid")]
        n_invalid = sum(1 for r in judged if not r.score["valid"] or not r.score.get("judge_valid"))
        metrics["n_judge_invalid"] = len(judged) - len(valid)
        metrics["judge_invalid_rate"] = (len(judged) - len(valid)) / len(judged)
        if not valid:
            return SubtaskResult.not_computed("no valid judge output", direction, n=len(judged),
                                              n_invalid=n_invalid, metrics=metrics)
        # Items → dialogue means → mean over dialogues: bootstrap over dialogue means = dialogue-cluster bootstrap.
        by_dialogue: dict[str, list[Record]] = defaultdict(list)
        for r in valid:
            by_dialogue[r.cluster].append(r)
        dlg_ids = list(by_dialogue)

        def dialogue_means(key: str) -> list[float]:
            return [float(np.mean([r.score[key] for r in by_dialogue[d]])) for d in dlg_ids]

        totals = dialogue_means("total")
        value, ci = bootstrap_mean(totals, dlg_ids, seed=ctx.seed, n_boot=ctx.n_boot)
        metrics["mean_total"] = value
        for key in INTERVENTION_RANGES:
            metrics[f"mean_{key}"] = float(np.mean(dialogue_means(key)))
        topic_of = {d: by_dialogue[d][0].metadata["topic"] for d in dlg_ids}
        by_topic: dict[str, list[float]] = defaultdict(list)
        for d, t in zip(dlg_ids, totals, strict=True):
            by_topic[topic_of[d]].append(t)
        metrics["mean_total_by_topic"] = {t: float(np.mean(v)) for t, v in sorted(by_topic.items())}
        metrics["n_dialogues"] = len(dlg_ids)
        notes = ["CPsyCoun total 0-9 (comprehensiveness 0-2, professionalism 0-3, authenticity 0-3, safety 0-1) "
                 "per reply, averaged per dialogue, then over dialogues; unit of resampling: dialogue",
                 "invalid judge outputs are counted in n_invalid and left out of the means; empty replies score 0"]
        if ctx.suite == "starter":
            notes.append("starter suite: invented demonstration dialogues, not CPsyCounE")
        notes += _demo_judge_note(ctx)
        res = SubtaskResult(value=value, ci=ci, n=len(judged), n_invalid=n_invalid, direction=direction,
                            metrics=metrics, method="judge", notes=notes)
        res.judge = {"model": ctx.judge.model, "validated": ctx.judge.validated}
        return res


