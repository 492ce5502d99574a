"""Every metric the report's sub-task details show carries its label (issue 42): the recorded golden demo
run's page, where no result brings labels of its own, labels every row from the sub-tasks' declarations."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trustmh.report import render_page

GOLDEN = Path(__file__).parents[1] / "golden"
ROW = re.compile(r'<tr><td>([^<]+)(<br><span class="muted">([^<]*)</span>)?</td><td class="num">')


@pytest.fixture(scope="module")
def rows() -> list[tuple[str, str, str]]:
    results = json.loads((GOLDEN / "demo_results.json").read_text(encoding="utf-8"))
    tables = re.findall(r'<table class="metrics"><tbody>(.*?)</tbody>', render_page([results], [None]), re.S)
    return [m for t in tables for m in ROW.findall(t)]


def test_the_details_show_the_metrics(rows: list[tuple[str, str, str]]) -> None:
    assert len(rows) > 100


def test_every_metric_row_carries_a_label(rows: list[tuple[str, str, str]]) -> None:
    assert [name for name, _, label in rows if not label.strip()] == []


def test_a_template_label_is_filled_in_on_the_page(rows: list[tuple[str, str, str]]) -> None:
    labels = {name: label for name, _, label in rows}
    assert labels["starter_n_crisis_items"] == "crisis items (starter set)"
