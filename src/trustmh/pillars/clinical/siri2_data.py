"""SIRI-2 files (docs/pillars/clinical.md#siri2): the inventory's items, the expert panel's means and SDs,
and the released per-item model means and totals of the mental-health-benchmark-tutorial repository.

The items are Neimeyer & Bonnelle's copyrighted instrument: they are read at run time from the publisher's
file (registry dataset `siri2`, pinned commit + sha256) or from a folder the user supplies
(`-O siri2_dir=DIR`, laid out like the repository). Nothing here holds their text.

Reply ids are the inventory's: the item number and the helper letter ("1A", "1B", ... "25B"). Item 14 is
not part of the validated score (the authors dropped it), so it is read but never asked nor scored.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import RunContext, TrustmhError
from trustmh.data.files import bounded_file
from trustmh.data.publisher import publisher_file, unavailable_reason
from trustmh.data.rows import KeyedRows, RowProblem, RowReport, number_in_scale

DATASET = "siri2"
OPTION = "siri2_dir"
BASE = "external/mental-health-benchmark-tutorial"
ITEMS_FILE = "instrument/siri2_items.json"
EXPERT_FILE = "instrument/siri2_expert_scores.csv"
MEANS_FILE = "experiment-results/model_scores_by_condition.csv"
TOTALS_FILE = "experiment-results/siri2_total_scores.csv"
EXCLUDED_ITEM = 14  # not validated by the inventory's authors: left out of the total
N_VALIDATED = 48
SCALE = (-3, 3)
SD_SCALE = (0.0, 6.0)  # an SD of ratings on a 6-point-wide scale cannot exceed its width
TOTAL_SCALE = (0.0, float((SCALE[1] - SCALE[0]) * N_VALIDATED))  # Σ |rating − expert mean| over 48 replies
HELPERS = {"helper_a": "A", "helper_b": "B"}


@dataclass(frozen=True)
class Reply:
    """One helper reply to rate: its id ("7B"), the scenario number, and the two texts (read, never shipped)."""

    reply_id: str
    scenario: int
    client: str
    helper: str


@dataclass(frozen=True)
class Expert:
    mean: float
    sd: float


def reply_id(scenario: int, letter: str) -> str:
    return f"{scenario}{letter.upper()}"


def siri2_file(rel: str, options: Mapping[str, Any]) -> Path:
    return publisher_file(rel, options, dataset=DATASET, option=OPTION, base=BASE)


def siri2_unavailable(ctx: RunContext, starter_reason: str) -> str | None:
    return unavailable_reason(ctx, (ITEMS_FILE, EXPERT_FILE), starter_reason=starter_reason, dataset=DATASET,
                              option=OPTION, base=BASE)


def _number(value: Any) -> float | None:
    try:
        f = float(str(value).strip())
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def load_replies(path: Path, report: RowReport | None = None) -> list[Reply]:
    """The items file: a JSON list of {item_id, client, helper_a, helper_b} → one Reply per helper reply,
    item 14 left out. A row without a whole-number id or with an empty text is named and skipped."""
    report = report if report is not None else RowReport()
    try:
        rows = json.loads(bounded_file(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read as JSON ({exc})") from None
    if not isinstance(rows, list):
        raise TrustmhError(f"{path}: expected a JSON list of items")
    keyed = KeyedRows(path.name, "item_id")  # an item given twice is named, as in the experts' file
    problems: list[RowProblem] = []
    for i, row in enumerate(rows):
        number = _number(row.get("item_id")) if isinstance(row, dict) else None
        if number is None or not float(number).is_integer():
            problems.append(RowProblem(path.name, i, "item_id", "missing or not a whole number", "skipped"))
            continue
        scenario = int(number)
        if scenario == EXCLUDED_ITEM:
            continue
        client = row.get("client")
        if not isinstance(client, str) or not client.strip():
            problems.append(RowProblem(path.name, i, "client", "missing or empty", "skipped"))
            continue
        for key, letter in HELPERS.items():
            text = row.get(key)
            if not isinstance(text, str) or not text.strip():
                problems.append(RowProblem(path.name, i, key, "missing or empty", "skipped"))
                continue
            keyed.add(reply_id(scenario, letter), i, Reply(reply_id(scenario, letter), scenario, client.strip(),
                                                           text.strip()))
    repeated = RowReport()
    out: list[Reply] = list(keyed.result(repeated).values())
    problems += repeated.problems
    RowReport.require_usable(len(out), str(path), problems)
    report.extend(problems)
    return out


def load_experts(path: Path, report: RowReport | None = None) -> dict[str, Expert]:
    """The expert panel's file (columns Item, M, SD; ids like "1A") → reply id → Expert, item 14 left out.
    A row whose id, mean (on the -3..+3 scale) or SD cannot be read, or whose id is given twice, is named and
    left out (docs/data.md#publisher-numbers)."""
    report = report if report is not None else RowReport()
    problems = RowReport()
    keyed = KeyedRows(path.name, "Item")
    for i, row in enumerate(_csv_rows(path, ("Item", "M", "SD"))):
        rid = str(row.get("Item") or "").strip().upper()
        mean, why_mean = number_in_scale(row.get("M"), SCALE)
        sd, why_sd = number_in_scale(row.get("SD"), SD_SCALE)
        if not rid[:-1].isdigit() or rid[-1:] not in ("A", "B"):
            problems.add(RowProblem(path.name, i, "Item", f"{rid!r} is not an id like 7A", "skipped"))
            continue
        if int(rid[:-1]) == EXCLUDED_ITEM:
            continue
        if mean is None or sd is None:
            problems.add(RowProblem(path.name, i, "M" if mean is None else "SD", str(why_mean or why_sd), "skipped"))
            continue
        keyed.add(reply_id(int(rid[:-1]), rid[-1]), i, Expert(mean, sd))
    out: dict[str, Expert] = keyed.result(problems)
    RowReport.require_usable(len(out), str(path), problems.problems)
    report.extend(problems.problems)
    return out


def _csv_rows(path: Path, required: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        with open(bounded_file(path), encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            fields = [f.strip() for f in reader.fieldnames or []]
            missing = [c for c in required if c not in fields]
            if missing:
                raise TrustmhError(f"{path}: missing column(s) {', '.join(missing)}")
            return [{(k or "").strip(): v for k, v in row.items()} for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TrustmhError(f"{path}: cannot read as CSV ({exc})") from None


Condition = tuple[str, str, str]  # (model, temperature, prompt variant)


def load_condition_means(path: Path, report: RowReport) -> dict[Condition, dict[str, float]]:
    """The released per-item means: (model, temperature, prompt variant) → reply id → mean rating.
    Item 14 is dropped (as the publisher's scoring does); a row with an unreadable id, a mean off the -3..+3
    scale, or a (condition, reply) given twice is named and left out (docs/data.md#publisher-numbers)."""
    keyed = KeyedRows(path.name, "Item")
    for i, row in enumerate(_csv_rows(path, ("model", "temperature", "prompt_variant", "Item", "mean"))):
        rid = str(row.get("Item") or "").strip().upper()
        mean, why = number_in_scale(row.get("mean"), SCALE)
        if not rid[:-1].isdigit() or rid[-1:] not in ("A", "B"):
            report.add(RowProblem(path.name, i, "Item", f"{rid!r} is not an id like 7A", "skipped"))
            continue
        if int(rid[:-1]) == EXCLUDED_ITEM:
            continue
        if mean is None:
            report.add(RowProblem(path.name, i, "mean", str(why), "skipped"))
            continue
        key = (str(row["model"]).strip(), _temperature(row["temperature"]), str(row["prompt_variant"]).strip())
        keyed.add((key, reply_id(int(rid[:-1]), rid[-1])), i, mean)
    out: dict[Condition, dict[str, float]] = {}
    for (key, rid), mean in keyed.result(report, lambda k: f"{k[1]} of {'/'.join(k[0])}").items():
        out.setdefault(key, {})[rid] = mean
    return out


def _temperature(value: Any) -> str:
    """"0", "0.0" and 0 are one condition: the temperature as its shortest number text."""
    f = _number(value)
    if f is None:
        return str(value).strip()
    return str(int(f)) if f.is_integer() else str(f)


def load_published_totals(path: Path, report: RowReport) -> dict[Condition, float]:
    """The published total per condition (0 to 6 x 48, the largest possible distance); a total off that scale or
    a condition given twice is named and left out."""
    keyed = KeyedRows(path.name, "siri2_score")
    for i, row in enumerate(_csv_rows(path, ("model", "temperature", "prompt_variant", "siri2_score"))):
        total, why = number_in_scale(row.get("siri2_score"), TOTAL_SCALE)
        if total is None:
            report.add(RowProblem(path.name, i, "siri2_score", str(why), "skipped"))
            continue
        keyed.add((str(row["model"]).strip(), _temperature(row["temperature"]), str(row["prompt_variant"]).strip()),
                  i, total)
    return keyed.result(report, lambda k: "/".join(k))
