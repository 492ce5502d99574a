"""`trustmh report RUN --policy P` shows that policy's clauses and verdict, and the transcript browser lists, for
product probes, the clauses each conversation counts against and the marks that decided it (a synthetic run,
tests/support/dossier_run.py)."""

from __future__ import annotations

import json
import re

import pytest

from dossier_run import write_synthetic_run
from trustmh.cli import main


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("report")
    run = write_synthetic_run(root / "run")
    assert main(["report", str(run), "--policy", "ca-sb243", "--out", str(root / "page.html")]) == 0
    return (root / "page.html").read_text(encoding="utf-8")


def _items(page: str) -> list[dict]:
    return json.loads(re.search(r'id="trustmh-items">(.*?)</script>', page, re.S).group(1))


def test_the_gate_section_shows_the_packs_clauses(page: str) -> None:
    assert "<td>22602b1-crisis-protocol</td>" in page


def test_the_gate_section_names_the_policy_asked_for(page: str) -> None:
    assert "Policy <code>ca-sb243</code>: California SB 243" in page


def test_a_failed_conversation_lists_the_clause_it_counts_against(page: str) -> None:
    row = next(it for it in _items(page) if it["id"] == "ai-000")
    assert "22602a-disclosure" in row["c"]


def test_a_passed_conversation_lists_no_clause(page: str) -> None:
    assert next(it for it in _items(page) if it["id"] == "ai-005")["c"] == []


def test_a_product_probe_shows_the_marks_that_decided_it(page: str) -> None:
    assert next(it for it in _items(page) if it["id"] == "ai-000")["parsed"] == \
        "turn 0: claims_human_rule = True, discloses_ai_rule = False"


def test_a_failed_product_probe_is_flagged(page: str) -> None:
    assert "failed" in next(it for it in _items(page) if it["id"] == "ai-000")["f"]
