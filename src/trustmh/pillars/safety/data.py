"""Safety pillar data (docs/pillars/safety.md#safety): PsyHarm, JailbreakMH, the starter rows, our
over-refusal contrast set and the `-O` options.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import Option, RunContext, TrustmhError
from trustmh.data import resolve
from trustmh.starter import load_starter, starter_file_name, starter_path

DATASET = "trustmh"
PSYHARM_RELPATH = "trustmh/dataset/PsyHarm.csv"
JAILBREAK_RELPATH = "trustmh/dataset/JailbreakMH.csv"
CONTRAST_FILE = "over_refusal_contrast.jsonl"  # in pillars/safety/starter/, written by this project

PSYHARM_COLUMNS = ("ID", "Attack Objective", "Prompt (English)")
JAILBREAK_COLUMNS = ("ID", "Attack Objective (Brief)", "method", "Prompt (English)")
# The 14 PsyHarm attack objectives, in ID order, five prompts each (docs/pillars/safety.md#safety).
OBJECTIVES: tuple[str, ...] = (
    "Generate Bias",
    "Disclose Privacy",
    "Minor Safety Risk",
    "Generate Sexual Content",
    "Cause Harm/Injury",
    "Force View/Decision",
    "Fail Self-Correct",
    "Falsely Claim Medical Pro",
    "Provide Diagnosis/Treatment",
    "Impersonate Authority",
    "Disclose Internal Info",
    "Overpromise/Exaggerate",
    "Provide False Treatment",
    "Fail to Provide Emergency Contact",
)
PROMPTS_PER_OBJECTIVE = 5
N_PSYHARM = len(OBJECTIVES) * PROMPTS_PER_OBJECTIVE  # 70
# The 8 jailbreak methods that ship, in their order inside each block of 8 rows.
METHODS: tuple[str, ...] = (
    "fixed sentence",
    "scenario",
    "bad words",
    "no punctuation",
    "Refusal sentence prohibition",
    "cot",
    "multitask",
    "no_long_word",
)
N_JAILBREAK = N_PSYHARM * len(METHODS)  # 560
REFUSAL_PROHIBITION = "Refusal sentence prohibition"


@dataclass(frozen=True)
class PsyHarmRow:
    id: int
    objective: str
    prompt: str


@dataclass(frozen=True)
class JailbreakRow:
    id: int
    objective: str
    method: str
    prompt: str
    base_id: int
    base_prompt: str


def _read_csv(path: Path, columns: Sequence[str]) -> list[tuple[int, dict[str, str]]]:
    """(first line number, row) for each data row; UTF-8 with or without BOM, multi-line cells allowed."""
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader, None)
            if header is None:
                raise TrustmhError(f"{path}: empty file, expected columns {list(columns)}")
            header = [h.strip() for h in header]
            if header != list(columns):
                raise TrustmhError(f"{path}: header {header} does not match the expected columns {list(columns)}")
            rows: list[tuple[int, dict[str, str]]] = []
            line = reader.line_num + 1
            for cells in reader:
                if not any(c.strip() for c in cells):
                    line = reader.line_num + 1
                    continue
                if len(cells) != len(columns):
                    raise TrustmhError(f"{path} line {line}: expected {len(columns)} fields, got {len(cells)}")
                rows.append((line, dict(zip(columns, cells, strict=True))))
                line = reader.line_num + 1
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{path}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from exc
    except csv.Error as exc:
        raise TrustmhError(f"{path}: malformed CSV ({exc})") from exc
    return rows


def _int_field(path: Path, line: int, field: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise TrustmhError(f"{path} line {line}: field {field!r} is not an integer: {value!r}") from None


def load_psyharm(path: Path) -> list[PsyHarmRow]:
    """PsyHarm.csv: 70 rows, IDs 1–70 in order, 14 objectives × 5 in the documented order."""
    rows = _read_csv(path, PSYHARM_COLUMNS)
    if len(rows) != N_PSYHARM:
        raise TrustmhError(f"{path}: expected {N_PSYHARM} rows, found {len(rows)}")
    out: list[PsyHarmRow] = []
    for k, (line, row) in enumerate(rows, start=1):
        rid = _int_field(path, line, "ID", row["ID"])
        if rid != k:
            raise TrustmhError(f"{path} line {line}: field 'ID' is {rid}, expected {k} (IDs run 1–{N_PSYHARM})")
        objective = row["Attack Objective"].strip()
        expected = OBJECTIVES[(k - 1) // PROMPTS_PER_OBJECTIVE]
        if objective != expected:
            raise TrustmhError(f"{path} line {line} (ID {k}): field 'Attack Objective' is {objective!r}, "
                               f"expected {expected!r}")
        prompt = row["Prompt (English)"]
        if not prompt.strip():
            raise TrustmhError(f"{path} line {line} (ID {k}): field 'Prompt (English)' is empty")
        out.append(PsyHarmRow(id=k, objective=objective, prompt=prompt))
    return out


def load_jailbreakmh(path: Path, psyharm: Sequence[PsyHarmRow]) -> list[JailbreakRow]:
    """JailbreakMH.csv: 560 rows; row k applies method k mod 8 (block order) to PsyHarm row ⌈k/8⌉ verbatim."""
    rows = _read_csv(path, JAILBREAK_COLUMNS)
    if len(rows) != N_JAILBREAK:
        raise TrustmhError(f"{path}: expected {N_JAILBREAK} rows, found {len(rows)}")
    if len(psyharm) != N_PSYHARM:
        raise TrustmhError(f"JailbreakMH needs the {N_PSYHARM} PsyHarm rows, got {len(psyharm)}")
    out: list[JailbreakRow] = []
    for k, (line, row) in enumerate(rows, start=1):
        rid = _int_field(path, line, "ID", row["ID"])
        if rid != k:
            raise TrustmhError(f"{path} line {line}: field 'ID' is {rid}, expected {k} (IDs run 1–{N_JAILBREAK})")
        base = psyharm[math.ceil(k / len(METHODS)) - 1]
        method = row["method"].strip()
        expected_method = METHODS[(k - 1) % len(METHODS)]
        if method != expected_method:
            raise TrustmhError(f"{path} line {line} (ID {k}): field 'method' is {method!r}, expected "
                               f"{expected_method!r} (8 methods per PsyHarm prompt, in a fixed order)")
        objective = row["Attack Objective (Brief)"].strip()
        if objective != base.objective:
            raise TrustmhError(f"{path} line {line} (ID {k}): field 'Attack Objective (Brief)' is {objective!r}, "
                               f"but its base PsyHarm row {base.id} has {base.objective!r}")
        prompt = row["Prompt (English)"]
        if base.prompt not in prompt:
            raise TrustmhError(f"{path} line {line} (ID {k}): field 'Prompt (English)' does not contain PsyHarm "
                               f"row {base.id}'s prompt verbatim")
        out.append(JailbreakRow(id=k, objective=objective, method=method, prompt=prompt, base_id=base.id,
                                base_prompt=base.prompt))
    return out


def psyharm_rows(ctx: RunContext) -> list[PsyHarmRow]:
    return load_psyharm(resolve(DATASET, PSYHARM_RELPATH, ctx.options.get("psyharm_path")))


def jailbreak_rows(ctx: RunContext) -> list[JailbreakRow]:
    psyharm = psyharm_rows(ctx)
    return load_jailbreakmh(resolve(DATASET, JAILBREAK_RELPATH, ctx.options.get("jailbreakmh_path")), psyharm)


def require(row: dict[str, Any], field: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = row.get(field)
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise TrustmhError(f"{where}: field {field!r} missing or of the wrong type ({value!r})")
    if isinstance(value, str) and not value.strip():
        raise TrustmhError(f"{where}: field {field!r} is empty")
    return value


def starter_jailbreak_rows(subtask_id: str) -> list[JailbreakRow]:
    """Starter rows: the JailbreakMH fields plus `base_id` / `base_prompt` (the unwrapped demo request)."""
    name = starter_file_name(subtask_id)
    out = []
    for i, row in enumerate(load_starter(subtask_id), start=1):
        where = f"{name} item {i}"
        method = require(row, "method", str, where)
        if method not in METHODS:
            raise TrustmhError(f"{where}: field 'method' is {method!r}, not one of {list(METHODS)}")
        objective = require(row, "Attack Objective (Brief)", str, where)
        if objective not in OBJECTIVES:
            raise TrustmhError(f"{where}: field 'Attack Objective (Brief)' is {objective!r}, not a PsyHarm objective")
        out.append(JailbreakRow(id=require(row, "ID", int, where), objective=objective, method=method,
                                prompt=require(row, "Prompt (English)", str, where),
                                base_id=require(row, "base_id", int, where),
                                base_prompt=require(row, "base_prompt", str, where)))
    return out


@dataclass(frozen=True)
class ContrastItem:
    id: str
    prompt: str
    kind: str  # "twin" | "sensitive"
    topic: str
    twin_of: int | None = None
    objective: str | None = None


def load_contrast_set(psyharm: Sequence[PsyHarmRow] | None = None) -> list[ContrastItem]:
    """Our over-refusal contrast set: 70 benign twins (one per PsyHarm ID) + sensitive-but-benign requests."""
    path = starter_path("safety/over_refusal", CONTRAST_FILE)
    if not path.is_file():
        raise TrustmhError(f"over-refusal contrast set missing (trustmh/pillars/safety/starter/{CONTRAST_FILE})")
    out: list[ContrastItem] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"pillars/safety/starter/{CONTRAST_FILE} line {lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise TrustmhError(f"{where}: invalid JSON ({exc.msg})") from exc
        kind = require(row, "kind", str, where)
        if kind not in ("twin", "sensitive"):
            raise TrustmhError(f"{where}: field 'kind' is {kind!r}, expected 'twin' or 'sensitive'")
        twin_of = objective = None
        if kind == "twin":
            twin_of = require(row, "twin_of", int, where)
            objective = require(row, "objective", str, where)
            if not 1 <= twin_of <= N_PSYHARM:
                raise TrustmhError(f"{where}: field 'twin_of' is {twin_of}, not a PsyHarm ID (1–{N_PSYHARM})")
            expected = (psyharm[twin_of - 1].objective if psyharm is not None
                        else OBJECTIVES[(twin_of - 1) // PROMPTS_PER_OBJECTIVE])
            if objective != expected:
                raise TrustmhError(f"{where}: field 'objective' is {objective!r}; PsyHarm {twin_of} is {expected!r}")
        out.append(ContrastItem(id=require(row, "id", str, where), prompt=require(row, "prompt", str, where),
                                kind=kind, topic=require(row, "topic", str, where), twin_of=twin_of,
                                objective=objective))
    ids = [c.id for c in out]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise TrustmhError(f"pillars/safety/starter/{CONTRAST_FILE}: duplicate ids {dup}")
    twins = sorted(c.twin_of for c in out if c.twin_of is not None)
    if twins != list(range(1, N_PSYHARM + 1)):
        raise TrustmhError(f"pillars/safety/starter/{CONTRAST_FILE}: needs exactly one twin per PsyHarm ID 1–{N_PSYHARM}")
    return out


# `-O` options of this module's sub-tasks
OPTIONS: dict[str, Option] = {
    'psyharm_path': Option('PsyHarm CSV'),
    'jailbreakmh_path': Option('JailbreakMH CSV'),
}
