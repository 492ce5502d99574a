"""Crisis pillar loaders: the publisher files, labels and the seeded stratified sample (docs/pillars/crisis.md#data)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from crisis_canned import FIX, raw
from trustmh.core import TrustmhError
from trustmh.pillars.crisis.data import (
    CRISIS_FILES,
    LABELS,
    canonical_label,
    load_crisis_split,
    load_crisis_test,
    load_crisis_validation,
    stratified_sample,
)


def test_canonical_label_spellings_and_errors():
    assert canonical_label("substance_abuse/withdrawal", "x") == "substance_abuse_or_withdrawal"
    assert canonical_label("Self Harm", "x") == "self-harm"
    assert canonical_label("", "x") is None
    assert canonical_label(None, "x") is None
    with pytest.raises(TrustmhError, match="somefile item 3"):
        canonical_label("happiness", "somefile item 3")


def test_test_split_loader_on_fixture():
    data = raw("test")
    split = load_crisis_test(FIX / CRISIS_FILES["test"])
    n_null = sum(1 for o in data if o["label"] is None)
    assert n_null == 1
    assert split.n_null == n_null
    assert len(split.rows) == len(data) - n_null
    assert [r["label"] for r in split.rows] == [o["label"] for o in data if o["label"] is not None]
    counts = Counter(r["label"] for r in split.rows)
    assert all(counts[lab] >= 2 for lab in LABELS)
    # original_label is never gold; lengths from 1 to 40 utterances survive intact
    with_orig = [i for i, o in enumerate(data) if "original_label" in o]
    assert with_orig
    assert {len(r["inputs"]) for r in split.rows} >= {1, 40}
    assert len({r["id"] for r in split.rows}) == len(split.rows)
    assert split.rows[0]["dataset_id"] == data[0]["dataset_id"]


def test_validation_loader_takes_dataset_id_by_position():
    data = raw("validation")
    ids = raw("validation_ids")
    split = load_crisis_split("validation", {"crisis_dir": str(FIX)})
    assert all(len(o["all_labels"]) == 5 and "dataset_id" not in o for o in data)
    assert split.n_null == sum(1 for o in data if o["label"] is None) >= 1
    for row in split.rows:
        assert row["dataset_id"] == ids[row["index"]]["dataset_id"]
        assert row["label"] == data[row["index"]]["label"]
    assert "hugging_11" in {r["dataset_id"] for r in split.rows}
    assert split.notes == []


def test_validation_loader_rejects_misaligned_ids(tmp_path):
    ids = raw("validation_ids")[:-1]
    p = tmp_path / "ids.json"
    p.write_text(json.dumps(ids))
    with pytest.raises(TrustmhError, match="align"):
        load_crisis_validation(FIX / CRISIS_FILES["validation"], p)


def test_loader_skips_and_names_unusable_rows(tmp_path, capsys):
    p = tmp_path / "t.json"
    p.write_text(json.dumps([{"inputs": ["a"], "label": "no_crisis"}, {"inputs": "oops", "label": "no_crisis"},
                             {"inputs": ["b"], "label": "bored"}]))
    split = load_crisis_test(p)
    assert [r["index"] for r in split.rows] == [0]
    assert "t.json row 1: row field 'inputs' must be a non-empty list of strings; skipped" in split.notes[0]
    assert "t.json row 2: row field 'label': unknown crisis label 'bored'" in capsys.readouterr().err


def test_loader_refuses_a_file_with_no_usable_row(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps([{"inputs": ["a"], "label": "bored"}]))
    with pytest.raises(TrustmhError, match=r"t\.json: no usable row: t\.json row 0: row field 'label'"):
        load_crisis_test(p)

def test_missing_crisis_dir_file_names_the_option(tmp_path):
    with pytest.raises(TrustmhError, match="crisis_dir"):
        load_crisis_split("test", {"crisis_dir": str(tmp_path)})


def test_stratified_sample_is_seeded_and_covers_strata():
    rows = [{"k": k, "i": i} for i, k in enumerate("a" * 20 + "b" * 5 + "c" * 2)]
    s1 = stratified_sample(rows, "k", 6, seed=1)
    assert s1 == stratified_sample(rows, "k", 6, seed=1)
    assert len(s1) == 6
    assert {r["k"] for r in s1} == {"a", "b", "c"}
    assert [r["i"] for r in s1] == sorted(r["i"] for r in s1)
    assert any(stratified_sample(rows, "k", 6, seed=s) != s1 for s in range(2, 8))
    assert stratified_sample(rows, "k", 100, seed=1) == rows
