"""results.json's blocks beside the sub-tasks' results: written where they apply, left out where not."""

from __future__ import annotations

from trustmh.core import Patient
from trustmh.results import RunResults
from trustmh.run.direct import direct_spec


def _results(**fields: object) -> dict:
    return RunResults(model="openai/m", ctx=direct_spec(suite="starter").context(), subtasks={}, **fields).to_json()


def test_blocks_that_do_not_apply_are_left_out() -> None:
    data = _results()
    assert not {"generation", "patient", "shard", "budget", "usage", "plan", "source", "judges"} & set(data)


def test_a_notice_replaces_the_starter_suites() -> None:
    assert _results(notice="a rescoring")["notice"] == "a rescoring"


def test_the_starter_suite_notice_stands_without_one() -> None:
    assert _results()["notice"].startswith("starter suite")


def test_the_patient_is_written_as_its_json_block() -> None:
    patient = Patient(models=("openai/a", "openai/b"), source="--patient")
    assert _results(patient=patient)["patient"] == patient.to_json()


def test_a_shard_is_written_as_a_list() -> None:
    assert _results(shard=(2, 3))["shard"] == [2, 3]


def test_a_rescorings_provenance_is_written() -> None:
    data = _results(source="/data/published", judges=["openai/j"])
    assert (data["source"], data["judges"]) == ("/data/published", ["openai/j"])
