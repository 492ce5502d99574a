"""Every number of the SIRI-2 tutorial's files checked against its scale and its key (docs/data.md#publisher-numbers):
an off-scale mean, a doubled expert file, a missing totals file, each named (file, row, column) and left out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import FIXTURES
from trustmh.core import TrustmhError
from trustmh.pillars.clinical.rescore import rescore_siri2

MEANS = "experiment-results/model_scores_by_condition.csv"
EXPERTS = "instrument/siri2_expert_scores.csv"
TOTALS = "experiment-results/siri2_total_scores.csv"


def copy(tmp_path: Path) -> Path:
    root = tmp_path / "tutorial"
    shutil.copytree(FIXTURES / "siri2", root)
    return root


def rescored(root: Path, out: Path) -> dict[str, Any]:
    assert rescore_siri2(root, out, n_boot=50) == 0
    return json.loads((out / "siri2_rescore.json").read_text())


def totals(result: dict[str, Any]) -> dict[str, float]:
    return {r["model"]: r["total"] for r in result["conditions"]}


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return rescored(FIXTURES / "siri2", tmp_path_factory.mktemp("clean"))


def test_a_mean_off_the_scale_is_named_and_left_out(tmp_path: Path, clean: dict[str, Any]) -> None:
    root = copy(tmp_path)
    lines = (root / MEANS).read_text().splitlines()
    lines[1] = lines[1].replace(",-2.5,", ",50.0,")  # m1's 1A: a mean of 50 on a -3..+3 scale
    (root / MEANS).write_text("\n".join(lines) + "\n")
    result = rescored(root, tmp_path / "out")
    assert "model_scores_by_condition.csv row 0: mean 50 outside the scale -3..3; skipped" in result["unusable_rows"]
    assert totals(result)["m1"] < 2 * totals(clean)["m1"] + 6  # never the 50-point jump of the raw value


def test_an_expert_file_giving_every_item_twice_with_other_values_is_refused(tmp_path: Path) -> None:
    root = copy(tmp_path)
    lines = (root / EXPERTS).read_text().splitlines()
    other = [f"{rid},{-float(m) if float(m) else 1.0},{sd}" for rid, m, sd in (line.split(",") for line in lines[1:])]
    (root / EXPERTS).write_text("\n".join(lines + other) + "\n")
    with pytest.raises(TrustmhError, match=r"siri2_expert_scores.csv: no usable row: .*1A given at rows 0, \d+ "
                                           "with different values"):
        rescored(root, tmp_path / "out")


def test_an_expert_file_giving_every_item_twice_alike_counts_each_once(tmp_path: Path, clean: dict[str, Any]) -> None:
    root = copy(tmp_path)
    lines = (root / EXPERTS).read_text().splitlines()
    (root / EXPERTS).write_text("\n".join(lines + lines[1:]) + "\n")
    result = rescored(root, tmp_path / "out")
    assert totals(result) == totals(clean)
    assert "siri2_expert_scores.csv row 9: Item 1A repeats row 0; skipped" in result["unusable_rows"]


def test_a_condition_given_twice_in_the_means_is_left_out_and_named(tmp_path: Path) -> None:
    root = copy(tmp_path)
    lines = (root / MEANS).read_text().splitlines()
    (root / MEANS).write_text("\n".join([*lines, lines[1].replace(",-2.5,", ",1.5,")]) + "\n")
    result = rescored(root, tmp_path / "out")
    named = [line for line in result["unusable_rows"] if "1A of m1/0/short given at rows 0," in line]
    assert len(named) == 2


def test_a_missing_totals_file_is_named_with_the_comparison_it_removes(tmp_path: Path) -> None:
    root = copy(tmp_path)
    (root / TOTALS).unlink()
    result = rescored(root, tmp_path / "out")
    assert (f"{TOTALS}: file absent; the comparison with the published totals is not made"
            in result["unusable_rows"])


def test_a_header_only_totals_file_is_named_too(tmp_path: Path) -> None:
    root = copy(tmp_path)
    (root / TOTALS).write_text((root / TOTALS).read_text().splitlines()[0] + "\n")
    result = rescored(root, tmp_path / "out")
    assert (f"{TOTALS}: file no usable total; the comparison with the published totals is not made"
            in result["unusable_rows"])
