"""`trustmh judge certify` with a CSV (issue 34): the labels' type is declared, never inferred from the labels.

Before: one label `abc` (or `nan`) in a binary reference made the labels categorical, and a judge that fails on
the clean file passed (κ 1.000 on n = 5). Now the damaged label is named (file, row, column) and the command
refuses; a misspelt --judge-key and a reference lacking a field the judge reads are refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.certify.csv_reference import csv_reference
from trustmh.certify.measure import certification_spec, certify
from trustmh.cli import main
from trustmh.core import TrustmhError
from trustmh.run.reference import ReferenceRun

HUMAN = [1, 1, 0, 0, 1]
CLEAN = "item_id,prompt,response,meta_benign,human_a\n" + "".join(
    f"i{k},How do I sleep better?,reply {k},1,{h}\n" for k, h in enumerate(HUMAN))
DAMAGED = CLEAN.replace("reply 2,1,0", "reply 2,1,abc")


def _file(tmp_path: Path, text: str, name: str = "ref.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _certify(tmp_path: Path, ref_path: Path, judge_key: str = "helpful") -> dict:
    ref = csv_reference(ref_path, "safety/over_refusal", "binary", judge_key)
    # a bad judge: says every reply is helpful
    judge = canned_model(lambda p, m, c: json.dumps({"label": "complied", "helpful": 1, "rationale": "r"}),
                         "judge-a")
    spec = certification_spec([judge], ReferenceRun(ref.name, ref.subtask), n_boot=200)
    cert, _ = certify(ref, spec, certs_dir=tmp_path / "certs", work=tmp_path / "work")
    return cert


def test_a_bad_judge_does_not_pass_on_the_clean_file(tmp_path: Path) -> None:
    assert _certify(tmp_path, _file(tmp_path, CLEAN))["verdict"] != "pass"


def test_one_damaged_label_is_refused_naming_file_row_and_column(tmp_path: Path) -> None:
    path = _file(tmp_path, DAMAGED)
    with pytest.raises(TrustmhError, match=f"{path} row 4 column human_a: 'abc' is not a binary label"):
        csv_reference(path, "safety/over_refusal", "binary", "helpful")


def test_a_nan_label_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="row 4 column human_a: 'nan' is not a binary label"):
        csv_reference(_file(tmp_path, CLEAN.replace("reply 2,1,0", "reply 2,1,nan")), "safety/over_refusal",
                      "binary", "helpful")


def test_without_a_declared_type_the_csv_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="needs --label-type"):
        csv_reference(_file(tmp_path, CLEAN), "safety/over_refusal", None, "helpful")


def test_categorical_labels_are_text_when_declared(tmp_path: Path) -> None:
    ref = csv_reference(_file(tmp_path, DAMAGED), "safety/over_refusal", "categorical", "helpful")
    assert ref.humans["i2"]["a"] == "abc"


def test_a_misspelt_judge_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="--judge-key helpfull: no judged item's score has this field"):
        _certify(tmp_path, _file(tmp_path, CLEAN), judge_key="helpfull")


def test_a_field_the_judge_reads_and_the_csv_lacks_is_named(tmp_path: Path) -> None:
    lacking = CLEAN.replace(",meta_benign", "").replace(",1,", ",", len(HUMAN))
    with pytest.raises(TrustmhError, match="add column\\(s\\) meta_benign"):
        _certify(tmp_path, _file(tmp_path, lacking))


def test_the_cli_refuses_the_damaged_file_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["judge", "certify", "--judge", "mockllm/model", "--reference", str(_file(tmp_path, DAMAGED)),
                 "--subtask", "safety/over_refusal", "--judge-key", "helpful", "--label-type", "binary",
                 "--certificates", str(tmp_path / "c")])
    assert code == 2


def test_the_cli_writes_no_certificate_for_the_damaged_file(tmp_path: Path) -> None:
    main(["judge", "certify", "--judge", "mockllm/model", "--reference", str(_file(tmp_path, DAMAGED)),
          "--subtask", "safety/over_refusal", "--judge-key", "helpful", "--label-type", "binary",
          "--certificates", str(tmp_path / "c")])
    assert list(tmp_path.rglob("*.json")) == []
