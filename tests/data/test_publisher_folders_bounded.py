"""One size bound for every file trustmh reads, publishers' folders included (docs/data.md#size-bound): a file a
reader finds in a `--from` folder, a symlink to /dev/zero or a sparse 3 GiB file, is refused by its stat before a
byte is read, with one line naming the file and the bound, in under a second."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

import trustmh.cli.rescore  # noqa: F401 - imported before the clock starts: the bound is timed, not the imports
from fixture_paths import FIXTURES
from trustmh.cli import main

STIGMA_RUN = "results/stigma/model=org__model-x&steel-man-prompt=False/2025-01-01.jsonl"
CRISIS_MERGED = ("data/llm_evaluator/gpt-judge/n_200/merged/"
                 "gpt-judge-evaluation_model-x-answers-crisis_n200-20250101_000000_merged.json")

# format, its synthetic publisher folder, the file inside it that is replaced (a walked folder's file included)
CASES: dict[str, tuple[str, Path, str]] = {
    "siri2-means": ("siri2", FIXTURES / "siri2", "experiment-results/model_scores_by_condition.csv"),
    "siri2-totals": ("siri2", FIXTURES / "siri2", "experiment-results/siri2_total_scores.csv"),
    "moore-combined": ("moore-interjections", FIXTURES / "moore_interjections" / "publisher",
                       "results/interjections/all_combined.csv"),
    "stigma-combined": ("moore-stigma", FIXTURES / "moore_stigma", "results/stigma/all_combined.csv"),
    "stigma-run": ("moore-stigma", FIXTURES / "moore_stigma", STIGMA_RUN),
    "mindeval": ("mindeval", FIXTURES / "mindeval", "data/human_annotations.jsonl"),
    "crisis-merged": ("crisis-original", FIXTURES / "crisis_original" / "repo", CRISIS_MERGED),
}


def damaged_copy(tmp_path: Path, fixture: Path, rel: str, how: str) -> Path:
    root = tmp_path / "publisher"
    shutil.copytree(fixture, root)
    target = root / rel
    target.unlink()
    if how == "dev-zero":
        os.symlink("/dev/zero", target)
    else:  # a sparse 3 GiB file: no disk used, but a reader that trusts it would fill the memory
        with open(target, "wb") as fh:
            fh.truncate(3 << 30)
    return target


def rescore(fmt: str, root: Path, out: Path) -> tuple[int, float]:
    # CPU time, not wall time: on a busy shared machine the wall clock measures the neighbours; a reader that
    # started on /dev/zero or a 3 GiB file would spend many CPU seconds before any bound stopped it.
    start = time.process_time()
    code = main(["rescore", "--format", fmt, "--from", str(root), "--out", str(out)])
    return code, time.process_time() - start


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("how", ["dev-zero", "sparse"])
def test_a_hostile_file_in_a_publisher_folder_is_refused_at_once(case: str, how: str, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    fmt, fixture, rel = CASES[case]
    target = damaged_copy(tmp_path, fixture, rel, how)
    code, seconds = rescore(fmt, tmp_path / "publisher", tmp_path / "out")
    err = capsys.readouterr().err
    assert code == 2
    assert seconds < 1.0
    assert str(target) in err
    assert ("not a regular file" if how == "dev-zero" else "larger than the 2,147,483,648 bytes") in err
