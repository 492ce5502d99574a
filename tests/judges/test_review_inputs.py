"""`review import` and the labelling page (issue 34): an off-scale label names file and row; a damaged
`sample.json` is one line; import holds the run directory's lock; the page's CSV export neutralises formula
cells exactly as `trustmh.data.files.safe_cell` does (the JavaScript is run with node where it is installed)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.data.files import FORMULA_STARTS, safe_cell
from trustmh.judges.labels import plain_cell, read_review_labels, read_review_sample

SID = "safety/jailbreak_resistance"
ITEM = {"key": f"{SID}::i1::1", "subtask": SID, "item_id": "i1", "epoch": 1, "judge_value": 1.0,
        "inclusion_probability": 0.5}
SAMPLE = {"items": [ITEM], "scales": {SID: [0.0, 1.0]}}


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _labels(tmp_path: Path, label: str, rater: str = "a") -> Path:
    return _write(tmp_path / "labels.csv", f"rater,subtask,item_id,epoch,label\n{rater},{SID},i1,1,{label}\n")


def test_an_off_scale_label_names_file_row_and_column(tmp_path: Path) -> None:
    path = _labels(tmp_path, "7")
    with pytest.raises(TrustmhError, match=f"{re.escape(str(path))} row 2 column label: '7' is not on {SID}'s scale"):
        read_review_labels([path], {ITEM["key"]: ITEM}, SAMPLE["scales"])


def test_a_label_on_the_scale_is_read(tmp_path: Path) -> None:
    labels = read_review_labels([_labels(tmp_path, "0")], {ITEM["key"]: ITEM}, SAMPLE["scales"])
    assert labels == {ITEM["key"]: {"a": 0.0}}


def test_a_second_label_by_the_same_rater_is_refused_naming_file_row_rater_and_item(tmp_path: Path) -> None:
    # issue 43.5 (open since an earlier audit): a rater's duplicate label was taken silently, the later one winning
    path = _write(tmp_path / "l.csv", f"rater,subtask,item_id,epoch,label\na,{SID},i1,1,1\na,{SID},i1,1,0\n")
    with pytest.raises(TrustmhError, match=f"^{re.escape(str(path))} row 3: rater 'a' labels {SID} item i1 epoch 1 "
                       f"a second time \\(first at {re.escape(str(path))} row 2\\)"):
        read_review_labels([path], {ITEM["key"]: ITEM}, SAMPLE["scales"])


def test_a_rater_labelling_an_item_in_two_files_is_refused_naming_both(tmp_path: Path) -> None:
    one, two = _labels(tmp_path, "1"), _write(tmp_path / "more.csv", f"rater,subtask,item_id,epoch,label\na,{SID},i1,1,1\n")
    with pytest.raises(TrustmhError, match=f"^{re.escape(str(two))} row 2: .*first at {re.escape(str(one))} row 2"):
        read_review_labels([one, two], {ITEM["key"]: ITEM}, SAMPLE["scales"])


def test_two_raters_labelling_one_item_are_both_read(tmp_path: Path) -> None:
    path = _write(tmp_path / "l.csv", f"rater,subtask,item_id,epoch,label\na,{SID},i1,1,1\nb,{SID},i1,1,0\n")
    assert read_review_labels([path], {ITEM["key"]: ITEM}, SAMPLE["scales"]) == {ITEM["key"]: {"a": 1.0, "b": 0.0}}


def test_a_ragged_labels_row_names_the_row(tmp_path: Path) -> None:
    path = _write(tmp_path / "l.csv", f"rater,subtask,item_id,epoch,label\na,{SID}\n")
    with pytest.raises(TrustmhError, match="row 2: 2 field\\(s\\), the header has 5"):
        read_review_labels([path], {ITEM["key"]: ITEM}, SAMPLE["scales"])


def test_a_guarded_rater_name_reads_back_as_written(tmp_path: Path) -> None:
    labels = read_review_labels([_labels(tmp_path, "1", rater="'=HYPERLINK(1)")], {ITEM["key"]: ITEM},
                                SAMPLE["scales"])
    assert list(labels[ITEM["key"]]) == ["=HYPERLINK(1)"]


@pytest.mark.parametrize("text, what", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (json.dumps({"items": [ITEM]}), "field 'scales'"),
    (json.dumps({"scales": SAMPLE["scales"]}), "field 'items'"),
    (json.dumps({**SAMPLE, "items": [{**ITEM, "epoch": "one"}]}), "items[0].epoch"),
    (json.dumps({**SAMPLE, "items": [{**ITEM, "inclusion_probability": 0}]}), "items[0].inclusion_probability"),
    (json.dumps({**SAMPLE, "items": [{**ITEM, "key": "x"}]}), "items[0].key"),
    (json.dumps({**SAMPLE, "scales": {SID: ["a"]}}), f"scales.{SID}"),
])
def test_a_damaged_sample_is_one_line_naming_the_field(text: str, what: str, tmp_path: Path) -> None:
    path = _write(tmp_path / "sample.json", text)
    with pytest.raises(TrustmhError) as info:
        read_review_sample(path)
    assert what in str(info.value) and "\n" not in str(info.value)


def test_import_refuses_while_another_process_holds_the_run_directory(tmp_path: Path) -> None:
    from trustmh.certify.review import import_review
    from trustmh.run.rundir import LOCK

    (tmp_path / "review").mkdir()
    _write(tmp_path / "review" / "sample.json", json.dumps(SAMPLE))
    fd = os.open(tmp_path / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a run continued at the same time holds it
    try:
        with pytest.raises(TrustmhError) as info:
            import_review(tmp_path, [_labels(tmp_path, "1")], seed=0, n_boot=200, certs_dir=tmp_path / "c")
    finally:
        os.close(fd)
    assert str(info.value).startswith(f"run directory {tmp_path}: another trustmh process")


def test_the_lock_message_of_review_import_never_names_an_out_option(tmp_path: Path) -> None:
    # issue 43.5: `review import` has no --out; its lock message names the run directory the user typed
    from trustmh.certify.review import import_review
    from trustmh.run.rundir import LOCK

    (tmp_path / "review").mkdir()
    _write(tmp_path / "review" / "sample.json", json.dumps(SAMPLE))
    fd = os.open(tmp_path / LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(TrustmhError) as info:
            import_review(tmp_path, [_labels(tmp_path, "1")], seed=0, n_boot=200, certs_dir=tmp_path / "c")
    finally:
        os.close(fd)
    assert "--out" not in str(info.value)


CELLS = ["=1+2", "+SUM(A1)", "-cmd", "@x", "\t=x", "\r=x", "-0.25", "+3", "plain", "12", "a=b", " =x", "'=x"]


def _page_guard() -> str:
    """The page's own `guard` function, with the starts the page is given."""
    from trustmh.report import environment

    html = environment().get_template("review.html.j2").render(items=[], rubrics={}, sample_id="s", n=0,
                                                               formula_starts=list(FORMULA_STARTS))
    starts = re.search(r"var formulaStarts = (.*?);\n", html)
    body = re.search(r"(function guard\(s\) \{.*?\n  \})", html, re.S)
    assert starts and body
    return f"var formulaStarts = {starts[1]};\n{body[1]}\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_pages_csv_export_guards_cells_as_safe_cell_does() -> None:
    script = _page_guard() + f"console.log(JSON.stringify({json.dumps(CELLS)}.map(guard)));"
    out = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30, check=True).stdout
    assert json.loads(out) == [safe_cell(c) for c in CELLS]


def test_the_page_is_given_the_one_list_of_formula_starts() -> None:
    assert json.dumps(list(FORMULA_STARTS)) in _page_guard()


def test_plain_cell_undoes_the_guard() -> None:
    # (text that itself begins with an apostrophe and a formula start reads back without the apostrophe)
    kept = [c for c in CELLS if not c.startswith("'")]
    assert [plain_cell(str(safe_cell(c))) for c in kept] == kept
