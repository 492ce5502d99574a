"""`--epochs` in a run's manifest: recorded when above one, and read back by `merge` (`options_from_manifest`)."""

from __future__ import annotations

from pathlib import Path

from canned import canned_model
from trustmh.run.config import RunOptions, options_from_manifest, resolve, run_manifest


def _manifest(epochs: int) -> dict:
    return run_manifest(resolve(RunOptions(model=canned_model(lambda p, m, c: "{}"), no_judge=True,
                                           suite="starter", subtasks=["interjections"], epochs=epochs)))


def test_a_manifest_records_the_epochs() -> None:
    assert _manifest(3)["epochs"] == 3


def test_one_administration_is_left_out_as_before_epochs_existed() -> None:
    assert "epochs" not in _manifest(1)


def test_merge_reads_the_epochs_back() -> None:
    assert options_from_manifest(_manifest(3), Path("out")).epochs == 3


def test_a_manifest_without_epochs_means_one() -> None:
    assert options_from_manifest(_manifest(1), Path("out")).epochs == 1
