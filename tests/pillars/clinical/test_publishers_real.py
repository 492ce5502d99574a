"""The publishers' real files, when a local copy is given (TRUSTMH_REFS_DIR holding
MattMatt27+mental-health-benchmark-tutorial/ and jlcmoore+llms-as-therapists/); skipped otherwise (CI has
neither). Every published SIRI-2 total is reproduced to 0.01, every published stigma rate per condition to the
notebook's six decimals, and the public's GSS 2018 rates are read for the six stigma questions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trustmh.pillars.clinical.rescore import rescore_siri2
from trustmh.pillars.fairness.stigma_data import load_public_rates, load_questions
from trustmh.pillars.fairness.stigma_rescore import rescore_moore_stigma

REFS = Path(os.environ.get("TRUSTMH_REFS_DIR", "/nonexistent"))
TUTORIAL = REFS / "MattMatt27+mental-health-benchmark-tutorial"
MOORE = REFS / "jlcmoore+llms-as-therapists"


@pytest.mark.skipif(not TUTORIAL.is_dir(), reason="TRUSTMH_REFS_DIR has no tutorial repository copy")
def test_every_published_siri2_total_is_reproduced(tmp_path: Path) -> None:
    rescore_siri2(TUTORIAL, tmp_path, n_boot=100)
    result = json.loads((tmp_path / "siri2_rescore.json").read_text())
    assert (result["n_conditions"], result["n_compared"], result["n_reproduced"]) == (54, 54, 54)


@pytest.mark.skipif(not MOORE.is_dir(), reason="TRUSTMH_REFS_DIR has no llms-as-therapists copy")
def test_every_published_stigma_rate_is_reproduced(tmp_path: Path) -> None:
    rescore_moore_stigma(MOORE, tmp_path, n_boot=100)
    result = json.loads((tmp_path / "stigma_rescore.json").read_text())
    assert (result["n_compared"], result["n_reproduced"]) == (16, 16)


@pytest.mark.skipif(not MOORE.is_dir(), reason="TRUSTMH_REFS_DIR has no llms-as-therapists copy")
def test_public_rates_are_read_for_the_six_stigma_questions() -> None:
    questions = load_questions(MOORE / "data" / "vignettes.jsonl")
    rates = load_public_rates(MOORE / "external_data" / "human_data_2018.csv", questions)
    assert sorted(len(v) for v in rates.values()) == [4] * 6
