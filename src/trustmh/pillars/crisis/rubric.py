"""The crisis-escalation rubric: ours (`prompts/crisis_escalation_rubric.txt`) or the study's protocol.csv."""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import bounded_file
from trustmh.pillars.crisis.data import LABELS, canonical_label, crisis_file
from trustmh.prompts import load_template

Rubric = dict[str, dict[int, str]]


def parse_rubric_text(text: str, where: str = "crisis_escalation_rubric") -> Rubric:
    """Our rubric file: `## <label>` sections, each with lines `<level>: <text>` for levels 1-5."""
    rubric: Rubric = {}
    current: str | None = None
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("# "):
            continue
        if s.startswith("## "):
            current = canonical_label(s[3:], f"{where} line {lineno}")
            if current is None:
                raise TrustmhError(f"{where} line {lineno}: empty section name")
            rubric[current] = {}
            continue
        m = re.match(r"^([1-5]):\s*(.+)$", s)
        if m is None or current is None:
            raise TrustmhError(f"{where} line {lineno}: expected '## <label>' or '<1-5>: <text>'")
        rubric[current][int(m.group(1))] = m.group(2)
    _check_rubric(rubric, where)
    return rubric


def _check_rubric(rubric: Rubric, where: str) -> None:
    missing = [lab for lab in LABELS if lab not in rubric]
    if missing:
        raise TrustmhError(f"{where}: no rubric for label(s) {missing}")
    for lab, levels in rubric.items():
        if sorted(levels) != [1, 2, 3, 4, 5]:
            raise TrustmhError(f"{where}: label {lab} needs levels 1-5, has {sorted(levels)}")


def load_own_rubric() -> Rubric:
    return parse_rubric_text(load_template("crisis_escalation_rubric"))


_LEVEL_COLUMN = re.compile(r"^\s*\(([1-5])\)")


def load_protocol_csv(path: str | Path) -> Rubric:
    """The upstream rubric (`protocol.csv`, opt-in with `--rubric upstream`): a `label` column and five
    columns headed `(1) …` to `(5) …`; one row per label. Read at run time, never bundled."""
    path = Path(path)
    try:
        with bounded_file(path).open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            fields = reader.fieldnames or []
            label_col = next((f for f in fields if f.strip().lower() == "label"), None)
            if label_col is None:
                raise TrustmhError(f"{path}: no 'label' column (columns: {fields})")
            level_cols: dict[int, str] = {}
            for f in fields:
                m = _LEVEL_COLUMN.match(f or "")
                if m:
                    level_cols[int(m.group(1))] = f
            if sorted(level_cols) != [1, 2, 3, 4, 5]:
                raise TrustmhError(f"{path}: expected columns '(1) …' to '(5) …', found {fields}")
            rubric: Rubric = {}
            for lineno, rec in enumerate(reader, start=2):
                lab = canonical_label(rec.get(label_col), f"{path} line {lineno} field '{label_col}'")
                if lab is None:
                    continue
                levels = {}
                for k, col in level_cols.items():
                    cell = (rec.get(col) or "").strip()
                    if not cell:
                        raise TrustmhError(f"{path} line {lineno} field {col!r}: empty rubric text")
                    levels[k] = " ".join(cell.split())
                rubric[lab] = levels
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from exc
    _check_rubric(rubric, str(path))
    return rubric


def escalation_rubric(options: Mapping[str, Any] | None) -> tuple[Rubric, str]:
    """(rubric, source) for the run: ours, or protocol.csv with `rubric == "upstream"`."""
    options = options or {}
    choice = options.get("rubric") or "trustmh"
    if choice == "upstream":
        user = options.get("protocol_path")
        path = Path(user) if user else crisis_file("protocol", options)
        if not path.is_file():
            raise TrustmhError(f"crisis: protocol.csv not found at {path}")
        return load_protocol_csv(path), "upstream protocol.csv"
    if choice not in ("trustmh", "own", "default"):
        raise TrustmhError(f"crisis_escalation: unknown rubric {choice!r}; use 'upstream' or leave unset")
    return load_own_rubric(), "trustmh"


def rubric_lines(rubric: Rubric, label: str) -> str:
    return "\n".join(f"{k}: {rubric[label][k]}" for k in range(1, 6))
