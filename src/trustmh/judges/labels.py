"""Human labels read from a user's file, checked against a label type the command or the reference declares.

A label type is never inferred from the labels themselves: one stray `abc` or `nan` in a column of 0/1
labels would otherwise turn a binary reference into a categorical one, and a judge that fails on the clean
file would pass on the damaged one. Every label that does not fit the declared type is named (file, row,
column) and the command refuses. Plain Python; no Inspect.

* `parse_label(text, label_type, where, scale)`: one cell -> the label (None for an empty cell).
* `read_reference_csv(path, label_type)`: the tidy reference CSV of `trustmh judge certify`
  (docs/judges.md#reference-csv), read as UTF-8 with every row the header's width.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import FORMULA_STARTS, MAX_SMALL_FILE_BYTES, read_text_bounded
from trustmh.stats.judge_agreement import LABEL_TYPES

REQUIRED_COLUMNS = ("item_id", "response")
RATER_PREFIX = "human_"
META_PREFIX = "meta_"


def check_label_type(label_type: str | None, what: str) -> str:
    """The declared label type; refused when missing or unknown (never guessed)."""
    if label_type is None:
        raise TrustmhError(f"{what} needs --label-type {'|'.join(LABEL_TYPES)} (the labels' type is declared, "
                           "never guessed from the labels)")
    if label_type not in LABEL_TYPES:
        raise TrustmhError(f"--label-type {label_type}: use one of {', '.join(LABEL_TYPES)}")
    return label_type


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def parse_label(text: str | None, label_type: str, where: str,
                scale: Sequence[float] | None = None) -> Any:
    """One human label: None for an empty cell; binary 0 or 1 (an int); ordinal a finite number (on `scale`,
    lo..hi, when given); categorical the text. Anything else is a TrustmhError beginning with `where`."""
    value = (text or "").strip()
    if not value:
        return None
    if label_type == "categorical":
        return value
    x = _number(value)
    if label_type == "binary":
        if x not in (0.0, 1.0):
            raise TrustmhError(f"{where}: {value!r} is not a binary label (0 or 1)")
        return int(x)  # type: ignore[arg-type]
    if x is None:
        raise TrustmhError(f"{where}: {value!r} is not a number (an ordinal label)")
    if scale is not None and not min(scale) <= x <= max(scale):
        raise TrustmhError(f"{where}: {value!r} is outside the scale {min(scale):g}-{max(scale):g}")
    return x


@dataclass
class ReferenceRows:
    """A reference CSV's content: rows by item, and each rater's label per item (None = not labelled)."""

    header: list[str]
    rows: list[dict[str, str]]  # in file order, one per item
    humans: dict[str, dict[str, Any]]  # item id -> rater -> label
    scale: tuple[float, float] | None = None  # the labels' range (binary, ordinal)
    raters: list[str] = field(default_factory=list)


def read_csv_rows(path: Path, what: str | None = None) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """(header, [(line number, row)]) of a small user CSV: UTF-8 (a BOM allowed), size-bounded, every record
    as wide as the header; blank records skipped. One line naming the file and row for anything else."""
    name = what or str(path)
    text = read_text_bounded(path, MAX_SMALL_FILE_BYTES, name, encoding="utf-8-sig")
    try:
        records = list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error as exc:
        raise TrustmhError(f"{name}: not a readable CSV ({exc})") from None
    if not records:
        raise TrustmhError(f"{name}: empty (expected a header row)")
    header = [h.strip() for h in records[0]]
    out = []
    line = 1
    for rec in records[1:]:
        line += 1
        if not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            raise TrustmhError(f"{name} row {line}: {len(rec)} field(s), the header has {len(header)}")
        out.append((line, dict(zip(header, rec, strict=True))))
    return header, out


def read_reference_csv(path: Path, label_type: str) -> ReferenceRows:
    """The reference CSV (docs/judges.md#reference-csv) with every label checked against `label_type`."""
    check_label_type(label_type, "--reference CSV")
    header, records = read_csv_rows(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    raters = [c for c in header if c.startswith(RATER_PREFIX)]
    if missing or not raters:
        raise TrustmhError(f"{path}: needs columns item_id, response and at least one human_<rater> column"
                           + (f" (missing: {', '.join(missing)})" if missing else ""))
    rows: list[dict[str, str]] = []
    humans: dict[str, dict[str, Any]] = {}
    for line, row in records:
        iid = row["item_id"].strip()
        if not iid or iid in humans:
            raise TrustmhError(f"{path} row {line}: item_id {'missing' if not iid else 'repeated: ' + iid}")
        humans[iid] = {r[len(RATER_PREFIX):]: parse_label(row[r], label_type, f"{path} row {line} column {r}")
                       for r in raters}
        rows.append(row)
    values = [v for h in humans.values() for v in h.values() if v is not None]
    if not values:
        raise TrustmhError(f"{path}: no human label in the human_* columns")
    scale = None if label_type == "categorical" else (float(min(values)), float(max(values)))
    if label_type == "binary":
        scale = (0.0, 1.0)
    return ReferenceRows(header=header, rows=rows, humans=humans, scale=scale,
                         raters=[r[len(RATER_PREFIX):] for r in raters])


# --- `trustmh review import`: the review sample and the labelling page's CSV exports ---------------------

REVIEW_LABEL_COLUMNS = ("rater", "subtask", "item_id", "epoch", "label")
_SAMPLE_ITEM_FIELDS = {"key": str, "subtask": str, "item_id": str, "epoch": int, "judge_value": float,
                       "inclusion_probability": float}


def review_key(subtask: str, item_id: str, epoch: int) -> str:
    return f"{subtask}::{item_id}::{epoch}"


def read_review_sample(path: Path) -> dict[str, Any]:
    """`review/sample.json` as `review export` wrote it, checked field by field: a damaged or hand-edited file
    is one line naming the file and the field, never a KeyError or a JSONDecodeError."""
    text = read_text_bounded(path, MAX_SMALL_FILE_BYTES, str(path))
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise TrustmhError(f"{path}: not valid JSON ({exc}); export the review sample again") from None
    if not isinstance(manifest, dict):
        raise TrustmhError(f"{path}: expected a JSON object; export the review sample again")
    items, scales = manifest.get("items"), manifest.get("scales")
    if not isinstance(items, list) or not items:
        raise TrustmhError(f"{path}: field 'items' must be a non-empty list; export the review sample again")
    team = manifest.get("raters")
    if team is not None and (not isinstance(team, list) or not all(isinstance(r, str) and r for r in team)):
        raise TrustmhError(f"{path}: field 'raters' must list the team's rater names; export the review sample again")
    if not isinstance(scales, dict):
        raise TrustmhError(f"{path}: field 'scales' must be an object (sub-task -> label values); export the "
                           "review sample again")
    for sid, scale in scales.items():
        if (not isinstance(scale, list) or not scale
                or not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in scale)):
            raise TrustmhError(f"{path}: field 'scales.{sid}' must be a non-empty list of numbers")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise TrustmhError(f"{path}: items[{i}] is not an object")
        for name, kind in _SAMPLE_ITEM_FIELDS.items():
            value = item.get(name)
            ok = (isinstance(value, kind) or (kind is float and isinstance(value, int))) and not isinstance(value, bool)
            if ok and kind is float:
                ok = math.isfinite(value) and (name != "inclusion_probability" or 0 < value <= 1)
            if not ok:
                raise TrustmhError(f"{path}: items[{i}].{name} is {value!r}; export the review sample again")
        if item["subtask"] not in scales:
            raise TrustmhError(f"{path}: items[{i}].subtask {item['subtask']!r} has no entry in 'scales'")
        if item["key"] != review_key(item["subtask"], item["item_id"], item["epoch"]):
            raise TrustmhError(f"{path}: items[{i}].key {item['key']!r} does not match its sub-task, item and epoch")
        # a conversation review's items: the raters assigned (two, a third after adjudication) and the model turns
        raters, turns = item.get("raters"), item.get("model_turns")
        if raters is not None and (not isinstance(raters, list) or len(raters) < 2
                                   or not all(isinstance(r, str) and r for r in raters)):
            raise TrustmhError(f"{path}: items[{i}].raters must list at least two rater names; export the review "
                               "sample again")
        if turns is not None and (not isinstance(turns, list)
                                  or not all(isinstance(t, int) and not isinstance(t, bool) for t in turns)):
            raise TrustmhError(f"{path}: items[{i}].model_turns must be a list of turn numbers")
    return manifest


def plain_cell(value: str) -> str:
    """A cell as it was before `trustmh.data.files.safe_cell` guarded it: the apostrophe put before a
    formula-like cell is taken off again (a CSV written by trustmh, read back)."""
    if value.startswith("'") and value[1:].startswith(FORMULA_STARTS):
        return value[1:]
    return value


# A conversation review's second label (docs/judges.md#conversation-review): the model turn at which the model
# first responded to the risk, or "never".
TURN_COLUMN = "first_response_turn"
NEVER = "never"


def parse_turn(text: str, allowed: Sequence[int], where: str) -> int | str | None:
    """A `first_response_turn` cell: empty (None), `never`, or one of the conversation's model turns."""
    value = text.strip().lower()
    if not value:
        return None
    if value == NEVER:
        return NEVER
    if value.isdigit() and int(value) in allowed:
        return int(value)
    shown = ", ".join(str(t) for t in allowed)
    raise TrustmhError(f"{where} column {TURN_COLUMN}: {text!r} is not '{NEVER}' nor a model turn of this "
                       f"conversation ({shown})")


def check_assigned(rater: str, item: Mapping[str, Any], where: str) -> None:
    """A label from a rater the sample does not assign to the item is refused (a typo in a rater's name
    would otherwise count as one more opinion)."""
    assigned = item.get("raters")
    if assigned and rater not in assigned:
        raise TrustmhError(f"{where}: rater {rater!r} is not assigned to {item['subtask']} item "
                           f"{item['item_id']} (sample.json assigns {', '.join(assigned)})")


def read_review_labels(paths: Sequence[Path], sample: dict[str, dict[str, Any]],
                       scales: dict[str, list[float]],
                       turns: dict[str, dict[str, Any]] | None = None) -> dict[str, dict[str, float]]:
    """item key -> rater -> label, from the page's CSV exports; refuses (file and row named) an item not in
    the sample, an epoch that is not a whole number, a label that is not on its sub-task's scale, a second label
    by the same rater for the same item (in any of the files: which one counts is not ours to guess) and, in a
    conversation review, a rater not assigned to the item. Given `turns`, a conversation's
    `first_response_turn` goes there (item key -> rater -> turn or "never")."""
    out: dict[str, dict[str, float]] = {}
    first: dict[tuple[str, str], str] = {}  # (item key, rater) -> where its label was read
    for path in paths:
        header, records = read_csv_rows(path)
        missing = [c for c in REVIEW_LABEL_COLUMNS if c not in header]
        if missing:
            raise TrustmhError(f"{path}: missing column(s) {', '.join(missing)}")
        for line, raw in records:
            row = {k: plain_cell(v) for k, v in raw.items()}
            try:
                key = review_key(row["subtask"], row["item_id"], int(row["epoch"]))
            except ValueError:
                raise TrustmhError(f"{path} row {line}: epoch {row['epoch']!r} is not a whole number") from None
            if key not in sample:
                raise TrustmhError(f"{path} row {line}: {row['subtask']} item {row['item_id']} is not in this "
                                   "run's review sample")
            if not row["label"].strip():
                continue
            scale = scales[row["subtask"]]
            label = _number(row["label"].strip())
            if label is None or label not in scale:
                shown = ", ".join(f"{v:g}" for v in scale)
                raise TrustmhError(f"{path} row {line} column label: {row['label']!r} is not on "
                                   f"{row['subtask']}'s scale ({shown})")
            rater = row["rater"].strip() or "rater"
            if (key, rater) in first:
                raise TrustmhError(f"{path} row {line}: rater {rater!r} labels {row['subtask']} item "
                                   f"{row['item_id']} epoch {row['epoch']} a second time (first at "
                                   f"{first[key, rater]}); keep one label per rater and item")
            first[key, rater] = f"{path} row {line}"
            check_assigned(rater, sample[key], f"{path} row {line}")
            out.setdefault(key, {})[rater] = label
            if turns is not None and "model_turns" in sample[key] and row.get(TURN_COLUMN):
                turn = parse_turn(row[TURN_COLUMN], sample[key]["model_turns"], f"{path} row {line}")
                if turn is not None:
                    turns.setdefault(key, {})[rater] = turn
    return out
