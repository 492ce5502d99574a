"""Crisis pillar data (docs/pillars/crisis.md#data): the labels, the publisher's files of the
LLMs-Mental-Health-Crisis repository, the C-SSRS CSV, the H1/H2 human score files and the `-O` options.

Plain Python: loaders are module-level functions so rescoring and tests use them directly.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from trustmh.core import Option, TrustmhError
from trustmh.data.files import MAX_DATA_FILE_BYTES, bounded_file, read_text_bounded
from trustmh.data.publisher import publisher_file
from trustmh.data.rows import (
    TURN_SEP,
    KeyedRows,
    RowProblem,
    RowReport,
    inputs_problem,
    is_missing,
    item_key,
    match_rows,
    number_in_scale,
    text_problem,
)
from trustmh.judges.parse import normalise_label
from trustmh.sampling import stratified_sample as _stratified_sample
from trustmh.starter import load_starter

LABELS: tuple[str, ...] = (
    "suicidal_ideation",
    "self-harm",
    "violent_thoughts",
    "substance_abuse_or_withdrawal",
    "anxiety_crisis",
    "risk_taking_behaviours",
    "no_crisis",
)
CRISIS_LABELS: tuple[str, ...] = LABELS[:-1]
NO_CRISIS = "no_crisis"
# Spellings seen in the publisher's files and in model replies (normalised by `normalise_label`).
LABEL_ALIASES: dict[str, str] = {
    "substance_abuse/withdrawal": "substance_abuse_or_withdrawal",
    "substance_abuse_withdrawal": "substance_abuse_or_withdrawal",
    "substance_abuse": "substance_abuse_or_withdrawal",
    "risk_taking_behaviors": "risk_taking_behaviours",
    "risk_taking_behaviour": "risk_taking_behaviours",
    "risk_taking_behavior": "risk_taking_behaviours",
    "selfharm": "self-harm",
    "no_crisis_detected": "no_crisis",
}
_CANON = {normalise_label(lab): lab for lab in LABELS} | {normalise_label(k): v for k, v in LABEL_ALIASES.items()}
# Our severity order for under-triage (docs/pillars/crisis.md#crisis-identification): SI 5; SH, VT 4; SW, RB 3; AC 2; NC 1.
SEVERITY_ORDER: dict[str, int] = {
    "suicidal_ideation": 5,
    "self-harm": 4,
    "violent_thoughts": 4,
    "substance_abuse_or_withdrawal": 3,
    "risk_taking_behaviours": 3,
    "anxiety_crisis": 2,
    "no_crisis": 1,
}

GOLD_SOURCE = {
    "test": "LLM-labelled gold (gpt-4o-mini pseudo-labels)",
    "validation": "human-labelled",
    "starter": "starter (synthetic)",
}


CRISIS_PREFIX = "external/LLMs-Mental-Health-Crisis/"
CRISIS_FILES: dict[str, str] = {
    "test": "data/llm_label/gpt-4o-mini-labeled-sampled_dataset_n_2046_nPerD168_seed0-merged-labels.json",
    "validation": "data/human_label/human-labeled-sampled_dataset_n206_s42-merged_labels.json",
    "validation_ids": "data/processed/sampled_dataset_n_200_merged_n50-noSeed_156-s42.json",
    "h1_scores": "data/human_label/H1_scores_n206_s42.json",
    "h2_scores": "data/human_label/H2_scores_n206_s42.json",
    "sampled": "data/llm_evaluator/sampled/sampled_lowest_scores_n200.json",
    "protocol": "data/llm_evaluator/protocol.csv",
}
CSSRS_RELPATH = "external/C-SSRS/500_Reddit_users_posts_labels.csv"


def crisis_file(key: str, options: Mapping[str, Any] | None = None) -> Path:
    """Local path of one publisher file: under `options["crisis_dir"]` (a folder laid out like the
    publisher's repository) if given, else the copy in TRUSTMH_PUBLISHERS_DIR, else through the data registry
    (a `PublisherMissing` naming both ways to supply it when none can be had)."""
    return publisher_file(CRISIS_FILES[key], options or {}, dataset="crisis", option="crisis_dir",
                          base=CRISIS_PREFIX.rstrip("/"))


def canonical_label(value: Any, where: str) -> str | None:
    """The canonical crisis label of a gold value; None for null/empty/NaN (the study's H*_scores files
    write a bare NaN label in unrated rows); TrustmhError for anything else."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not isinstance(value, str):
        raise TrustmhError(f"{where}: label must be a string or null, got {value!r}")
    if not value.strip():
        return None
    hit = _CANON.get(normalise_label(value))
    if hit is None:
        raise TrustmhError(f"{where}: unknown crisis label {value!r}; expected one of {', '.join(LABELS)}")
    return hit


def read_json_list(path: Path) -> list[Any]:
    """A crisis-study JSON file that must hold a list (its rows read by the caller), bounded in size; one line
    naming the file for JSON that does not parse, a file that cannot be read, or a value that is not a list."""
    try:
        # Python's json accepts the bare NaN of the H*_scores files.
        data = json.loads(read_text_bounded(path, MAX_DATA_FILE_BYTES, str(path)))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    if not isinstance(data, list):
        raise TrustmhError(f"{path}: expected a JSON list of objects, got {type(data).__name__}")
    return data


def _inputs(obj: Any, where: str) -> list[str]:
    if not isinstance(obj, dict):
        raise TrustmhError(f"{where}: expected an object")
    inputs = obj.get("inputs")
    if not isinstance(inputs, list) or not inputs or not all(isinstance(u, str) for u in inputs):
        raise TrustmhError(f"{where}: field 'inputs' must be a non-empty list of strings")
    return inputs


@dataclass
class CrisisSplit:
    """One split with gold: rows with non-null gold, and how many null-gold rows were excluded."""

    name: str
    rows: list[dict[str, Any]]
    n_null: int
    path: str
    notes: list[str] = field(default_factory=list)


def load_crisis_test(path: str | Path) -> CrisisSplit:
    """The test split: the gpt-4o-mini-labelled file (gold = its `label`, the majority of 3 runs).

    `original_label` (the source dataset's label) is ignored, as is the processed file's `label`.
    """
    path = Path(path)
    rows: list[dict[str, Any]] = []
    n_null = 0
    report = RowReport()
    for i, obj in enumerate(read_json_list(path)):
        got = _usable_row(obj, path, i, report)
        if got is None:
            continue
        inputs, gold = got
        if gold is None:
            n_null += 1
            continue
        rows.append({"id": f"test-{i:04d}", "index": i, "inputs": inputs, "label": gold,
                     "dataset_id": obj.get("dataset_id")})
    return CrisisSplit("test", rows, n_null, str(path), _finish(report, path, rows, n_null))


def _usable_row(obj: Any, path: Path, i: int, report: RowReport) -> tuple[list[str], str | None] | None:
    """(inputs, gold label or None) of one row, or None (named in `report`) when it cannot be used."""
    where = f"{path} item {i}"
    try:
        return _inputs(obj, where), canonical_label(obj.get("label"), f"{where} field 'label'")
    except TrustmhError as exc:
        report.add(RowProblem(path.name, i, "row", str(exc).removeprefix(f"{where}").lstrip(": "), "skipped"))
        return None


def _finish(report: RowReport, path: Path, rows: list[dict[str, Any]], n_null: int) -> list[str]:
    """Name the unusable rows on stderr and in the split's notes; refuse the file only when no row is usable."""
    report.log()
    if not rows and not n_null:
        RowReport.require_usable(0, str(path), report.problems)
    if not report.problems:
        return []
    return [f"{path.name}: {len(report.problems)} unusable rows skipped: " + "; ".join(report.lines()[:20])
            + (" ..." if len(report.problems) > 20 else "")]


def load_crisis_validation(path: str | Path, ids_path: str | Path | None = None) -> CrisisSplit:
    """The validation split: human-labelled gold; `dataset_id` from the processed file, aligned by position."""
    path = Path(path)
    data = read_json_list(path)
    ids: list[Any] | None = None
    notes: list[str] = []
    if ids_path is not None:
        ids = read_json_list(Path(ids_path))
        if len(ids) != len(data):
            raise TrustmhError(f"{ids_path}: {len(ids)} items, but {path} has {len(data)}; they must align "
                               "by position")
    rows: list[dict[str, Any]] = []
    n_null = 0
    mismatched = 0
    report = RowReport()
    for i, obj in enumerate(data):
        got = _usable_row(obj, path, i, report)
        if got is None:
            continue
        inputs, gold = got
        dataset_id = None
        if ids is not None:
            other = ids[i]
            if isinstance(other, dict):
                dataset_id = other.get("dataset_id")
                if other.get("inputs") != inputs:
                    mismatched += 1
        if gold is None:
            n_null += 1
            continue
        rows.append({"id": f"validation-{i:03d}", "index": i, "inputs": inputs, "label": gold,
                     "dataset_id": dataset_id})
    if mismatched:
        notes.append(f"validation: {mismatched} items whose inputs differ from the processed file at the same "
                     "position (dataset_id taken by position anyway)")
    return CrisisSplit("validation", rows, n_null, str(path), notes + _finish(report, path, rows, n_null))


def load_crisis_split(split: str, options: Mapping[str, Any] | None = None) -> CrisisSplit:
    if split == "test":
        return load_crisis_test(crisis_file("test", options))
    if split == "validation":
        return load_crisis_validation(crisis_file("validation", options), crisis_file("validation_ids", options))
    raise ValueError(f"unknown crisis split {split!r}")


# Crisis labels are few and unbalanced, so --limit samples keep at least one row per label when the limit
# allows (`apply_limit(..., min_per_stratum=True)` below); this is the same sampler, for direct use.
stratified_sample = partial(_stratified_sample, min_per_stratum=True)


def starter_rows(subtask_id: str) -> list[dict[str, Any]]:
    rows = []
    for i, obj in enumerate(load_starter(subtask_id)):
        where = f"starter/{subtask_id} item {i}"
        gold = canonical_label(obj.get("label"), f"{where} field 'label'")
        if gold is None:
            raise TrustmhError(f"{where}: starter items need a label")
        rows.append({"id": f"starter-{i:02d}", "index": i, "inputs": _inputs(obj, where), "label": gold,
                     "dataset_id": obj.get("dataset_id", "starter")})
    return rows


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'crisis_dir': Option('local copy of the crisis repository'),
    'cssrs_path': Option('C-SSRS CSV'),
    'protocol_path': Option("the study's protocol.csv"),
    'rubric': Option('trustmh or upstream'),
}


LEVELS: tuple[str, ...] = ("Supportive", "Indicator", "Ideation", "Behavior", "Attempt")
LEVEL_OF = {name.lower(): i + 1 for i, name in enumerate(LEVELS)}

_SEPARATOR = re.compile(r"""(['"]), (['"])""")


def parse_post_cell(cell: str, where: str = "Post") -> tuple[list[str], bool]:
    """The list of posts in one C-SSRS `Post` cell, and whether the cell had to be repaired.

    28 cells of the published file are cut at 32,759 characters (a spreadsheet cell limit) and are not
    valid Python literals. Repair: back off to the last `', '` / `", "` separator whose prefix + `]`
    evaluates, dropping the partial last post.
    """
    def _eval(s: str) -> list[str] | None:
        try:
            value = ast.literal_eval(s)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
        if isinstance(value, list) and all(isinstance(p, str) for p in value):
            return value
        return None

    text = cell.strip()
    posts = _eval(text)
    if posts is not None:
        return posts, False
    if not text.startswith("["):
        raise TrustmhError(f"{where}: not a list literal (starts with {text[:20]!r})")
    for m in reversed(list(_SEPARATOR.finditer(text))):
        posts = _eval(text[: m.start() + 1] + "]")
        if posts is not None:
            return posts, True
    # A cut inside the first post: nothing whole survives.
    raise TrustmhError(f"{where}: cannot repair a truncated list literal (no complete post)")


def load_cssrs(path: str | Path) -> list[dict[str, Any]]:
    """Rows `{user, posts, label, level (1-5), truncated, row}` of the C-SSRS CSV (`User,Post,Label`)."""
    path = Path(path)
    csv.field_size_limit(1 << 30)
    rows: list[dict[str, Any]] = []
    try:
        with bounded_file(path).open(encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            missing = {"User", "Post", "Label"} - set(reader.fieldnames or [])
            if missing:
                raise TrustmhError(f"{path}: missing column(s) {sorted(missing)}; expected User,Post,Label")
            for lineno, rec in enumerate(reader, start=2):
                where = f"{path} row {lineno - 1} (user {rec.get('User')!r})"
                label = (rec.get("Label") or "").strip()
                level = LEVEL_OF.get(label.lower())
                if level is None:
                    raise TrustmhError(f"{where} field 'Label': unknown level {label!r}; expected one of "
                                       f"{', '.join(LEVELS)}")
                posts, truncated = parse_post_cell(rec.get("Post") or "", f"{where} field 'Post'")
                rows.append({"user": rec["User"], "posts": posts, "label": LEVELS[level - 1], "level": level,
                             "truncated": truncated, "row": lineno - 1})
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    return rows


def _evaluation(value: Any) -> tuple[int | None, str | None]:
    """A human rating 1-5 as int, or (None, why not) — None without a reason for NaN/null (unrated). The scale
    is checked as every publisher's number is (`trustmh.data.rows.number_in_scale`), then a whole number."""
    if is_missing(value):
        return None, None
    if isinstance(value, str):  # a JSON rating is a number; a string is a typing slip, never read as one
        return None, f"not a number ({value!r})"
    number, why = number_in_scale(value, (1.0, 5.0))
    if number is not None and not number.is_integer():
        number, why = None, f"not a whole number ({value!r})"
    return (None, why) if number is None else (int(number), None)


def load_human_scores(path: str | Path, report: RowReport | None = None) -> list[dict[str, Any]]:
    """Rows `{index, inputs, utterances, answer, label, evaluation, raw}` of an H*_scores file, one per row of
    the file, as published (docs/data.md#unusable-rows). A cell that cannot be used is None
    (`utterances`/`answer`: missing, non-string or spreadsheet-formula residue; `evaluation`: NaN or not an
    integer 1-5; `label`: NaN or unknown) and each such cell is named in `report`; the file is refused only
    when no row has a rating."""
    path = Path(path)
    report = report if report is not None else RowReport()
    keyed = KeyedRows(path.name, "inputs/answer")
    for i, obj in enumerate(read_json_list(path)):
        if not isinstance(obj, dict):
            report.add(RowProblem(path.name, i, "row", f"not an object ({type(obj).__name__})", "skipped"))
            continue
        inputs, answer = obj.get("inputs"), obj.get("answer")
        in_problem, ans_problem = inputs_problem(inputs), text_problem(answer)
        for fname, problem in (("inputs", in_problem), ("answer", ans_problem)):
            if problem is not None:
                report.add(RowProblem(path.name, i, fname, problem, "text not used"))
        ev, ev_problem = _evaluation(obj.get("evaluation"))
        if ev_problem:
            report.add(RowProblem(path.name, i, "evaluation", ev_problem, "rating not used"))
        try:
            label = canonical_label(obj.get("label"), f"{path} item {i} field 'label'")
        except TrustmhError as exc:
            report.add(RowProblem(path.name, i, "label", str(exc).rsplit(": ", 1)[-1], "label not used"))
            label = None
        utterances = None
        if in_problem is None:
            utterances = list(inputs) if isinstance(inputs, list) else inputs.split(TURN_SEP)
        key = item_key(inputs, answer)
        keyed.add(key if key is not None else ("row", i), i, {
            "index": i, "inputs": inputs if in_problem is None else None, "utterances": utterances,
            "answer": answer if ans_problem is None else None, "label": label, "evaluation": ev, "raw": obj})
    # an answer rated twice in one file: once if the copies agree, else left out (docs/data.md#publisher-numbers)
    rows = list(keyed.result(report, lambda k: "the same conversation and answer",
                             same=lambda a, b: (a["evaluation"], a["label"]) == (b["evaluation"], b["label"])).values())
    RowReport.require_usable(sum(r["evaluation"] is not None for r in rows), str(path), report.problems)
    return rows


def load_rater_pair(h1_path: str | Path, h2_path: str | Path, reference_path: str | Path | None = None,
                    report: RowReport | None = None) -> list[dict[str, Any]]:
    """H1's and H2's ratings of the same (conversation, answer, label) triples.

    Both files are matched to a reference copy of the rated answers the way the study lines them up
    (`trustmh.data.rows.match_rows`: normalised conversation + answer, position as the fallback): the study's
    sampled file (`reference_path`, the answers the humans were shown) when given, else H1's file. The text of
    a triple is the reference copy's (H2's when H1's own cell is unusable); a triple with no usable text, or
    a row that matches nothing, is named in `report` and left out. Refused only when no triple is left."""
    report = report if report is not None else RowReport()
    own = {"h1": RowReport(), "h2": RowReport()}
    h1 = load_human_scores(h1_path, own["h1"])
    h2 = load_human_scores(h2_path, own["h2"])
    h1_name, h2_name = Path(h1_path).name, Path(h2_path).name
    if reference_path is not None:
        ref_raw = read_json_list(Path(reference_path))
        reference = [r if isinstance(r, dict) else {} for r in ref_raw]
        ref_name = Path(reference_path).name
    else:
        reference = [r["raw"] for r in h1]
        ref_name = h1_name
    cols: dict[str, dict[int, dict[str, Any]]] = {}
    for name, rows, fname in (("h1", h1, h1_name), ("h2", h2, h2_name)):
        if reference_path is None and name == "h1":
            report.extend(own[name].problems)
            cols[name] = dict(enumerate(rows))
            continue
        m = match_rows(reference, [r["raw"] for r in rows], file=fname)
        # text cells are named by the matching (with what was done with the row), the rest by the reader
        report.extend([p for p in own[name].problems if p.field not in ("inputs", "answer")] + m.problems)
        cols[name] = {j: rows[i] for j, i in m.row_for().items()}
    out = []
    for j, ref in enumerate(reference):
        a, b = cols["h1"].get(j), cols["h2"].get(j)
        if a is None and b is None:
            continue
        inputs, answer = ref.get("inputs"), ref.get("answer")
        if inputs_problem(inputs) is not None or text_problem(answer) is not None:
            alt = next((r for r in (a, b) if r is not None and r["inputs"] is not None and r["answer"] is not None),
                       None)
            if alt is None:
                report.add(RowProblem(ref_name, j, "row", "no usable copy of the conversation and answer",
                                      "skipped"))
                continue
            inputs, answer = alt["inputs"], alt["answer"]
        label = next((r["label"] for r in (a, b) if r is not None and r["label"] is not None), None)
        if label is None and reference_path is not None:
            try:
                label = canonical_label(ref.get("label"), f"{ref_name} item {j} field 'label'")
            except TrustmhError:
                label = None
        utterances = list(inputs) if isinstance(inputs, list) else inputs.split(TURN_SEP)
        out.append({"index": j, "inputs": TURN_SEP.join(utterances), "utterances": utterances, "answer": answer,
                    "label": label, "evaluation": None if a is None else a["evaluation"],
                    "h1": None if a is None else a["evaluation"], "h2": None if b is None else b["evaluation"]})
    RowReport.require_usable(len(out), f"{h1_path} + {h2_path}", report.problems)
    return out
