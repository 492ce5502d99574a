"""Reliability loaders (docs/pillars/reliability.md#reliability): USMLE-Mental, EmoBench EU, the diagnosis
datasets (D4, SWMH or any CSV/JSON(L) through a generic adapter), ESConv and CPsyCounE; and the `-O`
options the sub-tasks share."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from trustmh.core import Option, TrustmhError, truthy
from trustmh.data.files import read_jsonl, read_table
from trustmh.data.rows import RowProblem, RowReport
from trustmh.pillars.reliability.common import LETTERS, letters_for

# `-O` options of the two MCQ sub-tasks (knowledge, emotion recognition)
MCQ_OPTIONS: dict[str, Option] = {
    'usmle_mental_path': Option('USMLE-Mental file'),
    'emobench_eu_path': Option('EmoBench EU file'),
}

# `-O` options of the diagnosis, emotional-support and intervention sub-tasks
GENERATION_OPTIONS: dict[str, Option] = {
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

# ----------------------------------------------------------------- diagnosis datasets (D4, SWMH, generic)

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


def canonical_label(raw: Any, spec: ClassificationSpec, where: str) -> str:
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


def missing_field_error(row: Mapping[str, Any], key: str, spec: ClassificationSpec, where: str, hint: str) -> TrustmhError:
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
            raise missing_field_error(row, spec.label_field, spec, where, hint)
        rec: dict[str, Any] = {"row_index": i, "label": canonical_label(row[spec.label_field], spec, where)}
        if spec.text_field is not None:
            if spec.text_field not in row:
                raise missing_field_error(row, spec.text_field, spec, where, hint)
            text = row[spec.text_field]
            if not isinstance(text, str) or not text.strip():
                raise TrustmhError(f"{where}: field {spec.text_field!r} must be a non-empty string")
            rec["text"] = text.strip()
        else:
            assert spec.turns_field is not None
            if spec.turns_field not in row:
                raise missing_field_error(row, spec.turns_field, spec, where, hint)
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
                        raise missing_field_error(t, key, spec, twhere, "Pass -O speaker_key=... / -O content_key=....")
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


# ------------------------------------------------------------------------------------------------- ESConv

ESCONV_JSON_RELPATH = "external/ESConv/ESConv.json"
ESCONV_TSV_RELPATHS = {"test": "external/ESConv/testWithStrategy_short.tsv",
                       "dev": "external/ESConv/devWithStrategy_short.tsv"}
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


def esconv_test_dialogues(path: Path) -> list[dict[str, Any]]:
    """The dialogues of the processed test split (`load_esconv_tsv`, `esconv_tsv_dialogues`)."""
    return esconv_tsv_dialogues(load_esconv_tsv(path), "test")


def load_esconv_json(path: str | Path, report: RowReport | None = None) -> list[dict[str, Any]]:
    """ESConv-schema dialogues (ESConv.json, ESConv_fair.json): a JSON list of objects with `dialog`, a list
    of {speaker: seeker|supporter, annotation: {...}, content}. Content is stripped; the supporter's
    strategy comes from `annotation.strategy`. Other fields are kept, and `row` is the dialogue's 0-based
    position in the file (ids are built from it, so they do not shift when a dialogue is skipped).

    A dialogue that does not follow the schema is skipped and named (docs/data.md#unusable-rows: on stderr,
    and in `report` when given); the file is refused only when no dialogue is usable."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    if not isinstance(data, list):
        raise TrustmhError(f"{path}: expected a JSON list of dialogues")
    here = RowReport()
    out = []
    for i, d in enumerate(data):
        try:
            out.append(validate_esconv_dialogue(d, "") | {"row": i})
        except TrustmhError as exc:
            here.add(RowProblem(Path(path).name, i, "dialogue", str(exc).lstrip(": "), "skipped"))
    here.log()
    if report is not None:
        report.extend(here.problems)
    RowReport.require_usable(len(out), str(path), here.problems)
    return out


def validate_esconv_dialogue(d: Any, where: str) -> dict[str, Any]:
    if not isinstance(d, dict) or not isinstance(d.get("dialog"), list) or not d["dialog"]:
        keys = ", ".join(d) if isinstance(d, dict) else type(d).__name__
        raise TrustmhError(f"{where}: expected an object with a non-empty 'dialog' list (keys found: {keys})")
    turns = []
    for j, t in enumerate(d["dialog"]):
        if not isinstance(t, dict) or t.get("speaker") not in ("seeker", "supporter"):
            found = t.get("speaker") if isinstance(t, dict) else type(t).__name__
            raise TrustmhError(f"{where} turn {j}: field 'speaker' must be 'seeker' or 'supporter' (found {found!r})")
        if not isinstance(t.get("content"), str):
            raise TrustmhError(f"{where} turn {j}: field 'content' must be a string")
        ann = t.get("annotation") or {}
        turns.append({"speaker": t["speaker"], "text": t["content"].strip(),
                      "strategy": ann.get("strategy") if isinstance(ann, dict) else None, "turn_idx": j})
    return {**{k: v for k, v in d.items() if k != "dialog"}, "turns": turns}


# ---------------------------------------------------------------------------------------------- CPsyCounE

CPSYCOUNE_RELDIR = "external/CPsyCounE"
CPSYCOUNE_TOPICS: tuple[str, ...] = ("Career", "Education", "Emotion&Stress", "Family Relationship",
                                     "Love&Marriage", "Mental Disease", "Self-growth", "Sex",
                                     "Social Relationship")
CLIENT_PREFIX = "求助者："
COUNSELLOR_PREFIX = "支持者："


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


USMLE_RELPATH = "external/USMLE-Mental/USMLE-mental.jsonl"
EU_RELPATH = "external/EmoBench-EU/EU.jsonl"


# ------------------------------------------------------------------------------------------- USMLE-Mental

def validate_usmle_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    """Check one USMLE-Mental row (or a starter row with the same fields); returns it normalised."""
    for key in ("question", "options", "answer", "meta_info1", "meta_info2"):
        if key not in row:
            raise TrustmhError(f"{where}: missing field {key!r}")
    if not isinstance(row["question"], str) or not row["question"].strip():
        raise TrustmhError(f"{where}: field 'question' must be a non-empty string")
    options = row["options"]
    if not isinstance(options, dict) or not 2 <= len(options) <= len(LETTERS):
        raise TrustmhError(f"{where}: field 'options' must be an object with 2..10 letter keys")
    if list(options) != letters_for(len(options)):
        raise TrustmhError(f"{where}: field 'options' keys must be A, B, C... in order, got {list(options)}")
    answer = row["answer"].strip() if isinstance(row["answer"], str) else row["answer"]
    if answer not in options:
        raise TrustmhError(f"{where}: field 'answer' {row['answer']!r} is not one of the option keys")
    cat = row["meta_info2"]
    if isinstance(cat, list):
        if len(cat) != 1 or not isinstance(cat[0], str):
            raise TrustmhError(f"{where}: field 'meta_info2' must be a 1-item list of strings")
        cat = cat[0]
    if not isinstance(cat, str):
        raise TrustmhError(f"{where}: field 'meta_info2' must be a string or a 1-item list")
    return {**row, "answer": answer, "category": cat, "step": str(row["meta_info1"])}


def load_usmle(path: Path) -> list[dict[str, Any]]:
    """USMLE-Mental rows, validated, each with `row_index` (0-based line order), `category`, `step`."""
    rows = read_jsonl(path)
    return [{**validate_usmle_row(r, f"{path} row {i + 1}"), "row_index": i} for i, r in enumerate(rows)]


# -------------------------------------------------------------------------------------------- EmoBench EU

EU_FIELDS = ("qid", "language", "coarse_category", "finegrained_category", "scenario", "subject",
             "emotion_choices", "emotion_label", "cause_choices", "cause_label")


def validate_eu_row(row: dict[str, Any], where: str) -> dict[str, Any]:
    for key in EU_FIELDS:
        if key not in row:
            raise TrustmhError(f"{where}: missing field {key!r}")
    if row["language"] not in ("en", "zh"):
        raise TrustmhError(f"{where}: field 'language' must be 'en' or 'zh', got {row['language']!r}")
    for kind in ("emotion", "cause"):
        choices = row[f"{kind}_choices"]
        if (not isinstance(choices, list) or not 2 <= len(choices) <= len(LETTERS)
                or not all(isinstance(c, str) for c in choices)):
            raise TrustmhError(f"{where}: field '{kind}_choices' must be a list of 2..10 strings")
        if len(set(choices)) != len(choices):
            raise TrustmhError(f"{where}: field '{kind}_choices' has duplicate choices")
        if row[f"{kind}_label"] not in choices:
            raise TrustmhError(f"{where}: field '{kind}_label' is not one of '{kind}_choices'")
    return row


def load_eu(path: Path) -> list[dict[str, Any]]:
    rows = read_jsonl(path)
    out = [validate_eu_row(r, f"{path} row {i + 1}") for i, r in enumerate(rows)]
    seen: set[tuple[str, str]] = set()
    for i, r in enumerate(out):
        key = (str(r["qid"]), r["language"])
        if key in seen:
            raise TrustmhError(f"{path} row {i + 1}: duplicate (qid, language) {key}")
        seen.add(key)
    return out
