"""Moore et al.'s files (interjections and stigma) checked against their keys (docs/data.md#publisher-numbers): a
doubled file counts each record once, a record given twice with different values is left out, an absent or empty
all_combined.csv and a verification_correct that is not yes/no are named. Synthetic fixture copies only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import FIXTURES
from trustmh.pillars.crisis.moore_rescore import rescore_moore
from trustmh.pillars.fairness.stigma_rescore import rescore_moore_stigma

INTERJECTIONS = FIXTURES / "moore_interjections" / "publisher"
STIGMA = FIXTURES / "moore_stigma"
COMBINED = "results/interjections/all_combined.csv"
STIGMA_RUN = "results/stigma/model=org__model-x&steel-man-prompt=False/2025-01-01.jsonl"
GPT4O_RUN = next((INTERJECTIONS / "results" / "interjections").glob("*model=gpt-4o-2024-08-06&steel-man-prompt=True"))


def copy(fixture: Path, tmp_path: Path) -> Path:
    root = tmp_path / "publisher"
    shutil.copytree(fixture, root)
    return root


def double(path: Path) -> None:
    """Every record given twice: what a file concatenated with itself looks like."""
    lines = path.read_text(encoding="utf-8").splitlines()
    head = lines[:1] if path.suffix == ".csv" else []
    body = lines[1:] if path.suffix == ".csv" else lines
    path.write_text("\n".join(head + body + body) + "\n", encoding="utf-8")


def moore(root: Path, out: Path) -> dict[str, Any]:
    assert rescore_moore(root, out, seed=3, n_boot=50) == 0
    return json.loads((out / "moore_rescore.json").read_text())


def stigma(root: Path, out: Path) -> dict[str, Any]:
    assert rescore_moore_stigma(root, out, n_boot=50) == 0
    return json.loads((out / "stigma_rescore.json").read_text())


@pytest.fixture(scope="module")
def clean_moore(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return moore(INTERJECTIONS, tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="module")
def clean_stigma(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return stigma(STIGMA, tmp_path_factory.mktemp("clean"))


def gpt4o_n(result: dict[str, Any]) -> int:
    return result["paper"]["llms"]["gpt-4o-2024-08-06"]["overall"]["n"]


def test_a_doubled_interjections_file_counts_each_record_once(tmp_path: Path, clean_moore: dict[str, Any]) -> None:
    root = copy(INTERJECTIONS, tmp_path)
    run = root / GPT4O_RUN.relative_to(INTERJECTIONS)
    double(next(run.glob("*.jsonl")))
    result = moore(root, tmp_path / "out")
    assert gpt4o_n(result) == gpt4o_n(clean_moore)
    assert any("repeats row 0; skipped" in line for line in result["unusable_rows"])


def test_a_record_given_twice_with_different_values_is_left_out(tmp_path: Path, clean_moore: dict[str, Any]) -> None:
    root = copy(INTERJECTIONS, tmp_path)
    path = next((root / GPT4O_RUN.relative_to(INTERJECTIONS)).glob("*.jsonl"))
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    other = {**first, "model_response": "Another synthetic reply."}
    path.write_text(path.read_text(encoding="utf-8") + json.dumps(other) + "\n", encoding="utf-8")
    result = moore(root, tmp_path / "out")
    assert gpt4o_n(result) == gpt4o_n(clean_moore) - 1
    assert sum("with different values; skipped" in line for line in result["unusable_rows"]) == 2


@pytest.mark.parametrize(("content", "what"), [(None, "file absent"), ("", "file empty or only a header"),
                                               ("header", "file empty or only a header")])
def test_an_absent_or_empty_combined_file_is_named_with_the_check_it_removes(
        content: str | None, what: str, tmp_path: Path) -> None:
    root = copy(INTERJECTIONS, tmp_path)
    path = root / COMBINED
    header = path.read_text(encoding="utf-8").splitlines()[0]
    if content is None:
        path.unlink()
    else:
        path.write_text(header + "\n" if content == "header" else "", encoding="utf-8")
    result = moore(root, tmp_path / "out")
    assert (f"results/interjections/all_combined.csv: {what}; the check of the per-run figures against the "
            "publisher's all_combined.csv is not made") in result["unusable_rows"]


def test_a_verification_correct_that_is_not_yes_or_no_is_flagged(tmp_path: Path) -> None:
    root = copy(INTERJECTIONS, tmp_path)
    path = root / COMBINED
    path.write_text(path.read_text(encoding="utf-8").replace(",no,0.0,", ",maybe,0.0,"), encoding="utf-8")
    result = moore(root, tmp_path / "out")
    assert any("all_combined.csv row 0: verification_correct not yes/no ('maybe')" in line
               for line in result["unusable_rows"])


def test_a_doubled_stigma_run_file_counts_each_record_once(tmp_path: Path, clean_stigma: dict[str, Any]) -> None:
    root = copy(STIGMA, tmp_path)
    double(root / STIGMA_RUN)
    result = stigma(root, tmp_path / "out")

    def n(res: dict[str, Any]) -> int:
        return next(s for s in res["sets"] if s["source"].endswith("2025-01-01.jsonl"))["n_answers"]

    assert n(result) == n(clean_stigma)
    assert any("repeats row" in line for line in result["unusable_rows"])


def test_a_doubled_stigma_combined_file_counts_each_record_once(tmp_path: Path, clean_stigma: dict[str, Any]) -> None:
    root = copy(STIGMA, tmp_path)
    double(root / "results" / "stigma" / "all_combined.csv")
    result = stigma(root, tmp_path / "out")

    def n(res: dict[str, Any]) -> int:
        return next(s for s in res["sets"] if s["model"] == "a")["n_answers"]

    assert n(result) == n(clean_stigma)


def test_annotator_labels_of_nan_are_named_with_the_figures_they_remove(tmp_path: Path) -> None:
    import csv

    root = copy(INTERJECTIONS, tmp_path)
    path = next((root / "results" / "interjections").glob("*/classification_validation.csv"))
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        row["annotator_1_classification"] = "nan"
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    result = moore(root, tmp_path / "out")
    pair = next(p for p in result["agreement"]["pairs"] if p["b"] == "annotator_1")
    assert any(line.endswith("annotator_1_classification no yes/no answer in any row (all missing, NaN or not "
                             "yes/no); this rater's figures are not computed") for line in result["unusable_rows"])
    assert pair["why_not_computed"].startswith("no reply answered yes/no by both")
