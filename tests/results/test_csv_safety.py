"""Every CSV trustmh writes neutralises cells a spreadsheet would run as a formula (=, +, -, @): model names,
item ids, reasons and rater names are untrusted text."""

from __future__ import annotations

import csv
import io

import pytest

from trustmh.align.tables import to_csv as align_csv
from trustmh.data.files import csv_text, safe_cell
from trustmh.pillars.mentalbench.export import to_csv as long_csv
from trustmh.results import results_csv
from trustmh.results.leaderboard import leaderboard_csv

EVIL = "=HYPERLINK(\"http://x\",\"y\")"


@pytest.mark.parametrize("text", [EVIL, "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1)", "\t=1", "\r=1"])
def test_a_formula_cell_is_written_as_text(text: str) -> None:
    assert safe_cell(text) == "'" + text


@pytest.mark.parametrize("value", ["-0.25", "+3", "1e-3", "plain", "", -0.5, 3, None, True])
def test_numbers_and_plain_text_are_unchanged(value: object) -> None:
    assert safe_cell(value) == ("" if value is None else value)


def _cells(text: str) -> set[str]:
    return {cell for row in csv.reader(io.StringIO(text)) for cell in row}


def test_csv_text_neutralises_every_cell() -> None:
    assert _cells(csv_text(["a"], [[EVIL]])) == {"a", "'" + EVIL}


def test_results_csv_neutralises_the_model_name_and_reasons() -> None:
    results = {"model": EVIL, "mode": "default", "suite": "trustmh", "subtasks": {"safety/x": {
        "status": "not_computed", "reason": "@bad", "direction": "lower", "n": 0, "n_invalid": 0, "value": None}}}
    cells = _cells(results_csv(results))
    assert "'" + EVIL in cells
    assert "'@bad" in cells
    assert EVIL not in cells


def test_comparison_csv_neutralises_run_labels() -> None:
    board = {"models": [EVIL], "runs": {EVIL: {"model": "-x", "folder": "+f", "seed": 0, "created": "t"}},
             "subtasks": {"safety/x": {"direction": "lower", "values": {EVIL: -0.5}, "ranks": {EVIL: 1}}}}
    cells = _cells(leaderboard_csv(board))
    assert {"'" + EVIL, "'-x", "'+f", "-0.5"} <= cells
    assert EVIL not in cells


def test_align_csv_neutralises_cells() -> None:
    assert "'" + EVIL in _cells(align_csv([{"judge": EVIL, "value": -0.5}], ["judge", "value"]))


def test_long_table_csv_neutralises_item_and_rater() -> None:
    cells = _cells(long_csv([{"item": EVIL, "rater": "@r", "score": -1.0}]))
    assert {"'" + EVIL, "'@r", "-1"} <= cells
