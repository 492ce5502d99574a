"""reliability/psychological_diagnosis: the preset and generic adapters on synthetic files, the parser, the metrics
(against scikit-learn) and offline runs."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from reliability_canned import ctx_
from trustmh.core import Item, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.reliability.common import classification_metrics
from trustmh.pillars.reliability.data import D4_PRESET, SWMH_PRESET, ClassificationSpec, load_classification
from trustmh.pillars.reliability.diagnosis import PsychologicalDiagnosis, parse_diagnosis
from trustmh.sampling import stratified_sample
from trustmh.starter import load_starter

# ============================================================================================= diagnosis

def _write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


SWMH_RAW = ["self.depression", "self.Anxiety", "self.bipolar", "self.SuicideWatch", "self.offmychest"]


def _swmh_rows(n_per: int, split: str | None = None) -> list[dict]:
    rows = []
    for k in range(n_per):
        for lab in SWMH_RAW:
            row = {"text": f"demo post {k} about a bland day ({lab[5:].lower()})", "label": lab}
            if split:
                row["split"] = split
            rows.append(row)
    return rows


def test_swmh_preset_csv_and_folder(tmp_path: Path) -> None:
    path = tmp_path / "swmh.csv"
    _write_csv(path, _swmh_rows(2, "train") + _swmh_rows(3, "test"))
    rows = load_classification(path, SWMH_PRESET)
    assert len(rows) == 15  # only the test split
    assert {r["label"] for r in rows} == {"depression", "anxiety", "bipolar", "suicidewatch", "offmychest"}
    folder = tmp_path / "swmh"
    folder.mkdir()
    _write_csv(folder / "train.csv", _swmh_rows(4))
    _write_csv(folder / "test.csv", _swmh_rows(1))
    assert len(load_classification(folder, SWMH_PRESET)) == 5


def test_key_mismatch_lists_keys(tmp_path: Path) -> None:
    path = tmp_path / "posts.jsonl"
    path.write_text(json.dumps({"post": "hello", "class": "self.depression"}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"row 1: no field 'label'.*keys found: post, class") as exc:
        load_classification(path, SWMH_PRESET)
    assert "unverified" in str(exc.value)
    spec = ClassificationSpec(dataset="mine", text_field="post", label_field="class")
    assert load_classification(path, spec)[0] == {"row_index": 0, "label": "self.depression", "text": "hello"}
    bad_label = tmp_path / "bad.jsonl"
    bad_label.write_text(json.dumps({"text": "hi", "label": "self.cooking"}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"row 1: field 'label' value 'self.cooking'"):
        load_classification(bad_label, SWMH_PRESET)


def _d4_rows(n_per: int) -> list[dict]:
    rows = []
    for k in range(n_per):
        for sev in range(4):
            rows.append({"log": [{"speaker": "doctor", "text": f"医生问题{k}"},
                                 {"speaker": "patient", "text": f"患者回答{k}-{sev}"}], "drisk": sev})
    return rows


def test_d4_preset_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d4.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in _d4_rows(2)) + "\n", encoding="utf-8")
    rows = load_classification(path, D4_PRESET)
    assert Counter(r["label"] for r in rows) == {"none": 2, "mild": 2, "moderate": 2, "severe": 2}
    assert rows[0]["turns"][0] == {"role": "doctor", "text": "医生问题0"}
    path.write_text(json.dumps({"dialog": [], "drisk": 1}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"no field 'log'.*keys found: dialog, drisk"):
        load_classification(path, D4_PRESET)


def test_stratified_sample_reproducible() -> None:
    rows = [{"i": i, "label": "a" if i % 4 else "b"} for i in range(200)]
    s1 = stratified_sample(rows, lambda r: r["label"], 40, seed=3)
    s2 = stratified_sample(rows, lambda r: r["label"], 40, seed=3)
    s3 = stratified_sample(rows, lambda r: r["label"], 40, seed=4)
    assert s1 == s2
    assert s1 != s3
    assert Counter(r["label"] for r in s1) == {"a": 30, "b": 10}
    assert [r["i"] for r in s1] == sorted(r["i"] for r in s1)


def test_parse_diagnosis() -> None:
    labels = ["depression", "suicidewatch", "anxiety", "bipolar", "offmychest"]
    assert parse_diagnosis('{"label": "Anxiety"}', labels) == "anxiety"
    assert parse_diagnosis('```json\n{"label": "off my chest"}\n```', labels) is None
    assert parse_diagnosis('```json\n{"label": "offmychest"}\n```', labels) == "offmychest"
    assert parse_diagnosis("This reads like bipolar.", labels) == "bipolar"
    assert parse_diagnosis("Either depression or anxiety.", labels) is None
    assert parse_diagnosis("I cannot tell.", labels) is None
    assert parse_diagnosis('{"label": 2}', ["0", "1", "2", "3"]) == "2"
    assert parse_diagnosis('{"label": "Moderate"}', list(D4_PRESET.labels or {})) == "moderate"


def test_classification_metrics_match_sklearn() -> None:
    rng = np.random.default_rng(0)
    labels = ["a", "b", "c", "d"]
    gold = list(rng.choice(labels[:3], 80))
    pred = [None if rng.random() < 0.15 else str(x) for x in rng.choice(labels, 80)]
    m = classification_metrics(gold, pred, labels)
    pred_sk = [p if p is not None else "__invalid__" for p in pred]
    present = sorted(set(gold) | {p for p in pred if p is not None})
    assert m["accuracy"] == pytest.approx(accuracy_score(gold, pred_sk))
    assert m["weighted_f1"] == pytest.approx(f1_score(gold, pred_sk, labels=present, average="weighted",
                                                      zero_division=0))
    assert m["macro_f1"] == pytest.approx(f1_score(gold, pred_sk, labels=present, average="macro",
                                                   zero_division=0))
    assert np.asarray(m["confusion"]["matrix"]).sum() == 80
    assert np.asarray(m["confusion"]["matrix"])[:, -1].sum() == sum(p is None for p in pred)


def test_diagnosis_not_computed_without_data() -> None:
    st = PsychologicalDiagnosis()
    assert st.not_computed_reason(ctx_()) == ("gated dataset not supplied (pass -O swmh_path=... or "
                                              "-O d4_path=...)")
    assert st.not_computed_reason(ctx_(suite="starter")) is None
    assert st.not_computed_reason(ctx_(options={"swmh_path": "/x"})) is None


def _gold_json(item: Item) -> str:
    return json.dumps({"label": item.target})


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_diagnosis_starter_offline(mode: str) -> None:
    st = PsychologicalDiagnosis()
    ctx = ctx_(suite="starter", mode=mode)
    items = st.items(ctx)
    assert len(items) == len(load_starter(st.id))
    assert all(it.metadata["labels"] == list(SWMH_PRESET.labels or {}) for it in items)
    _, res = run_offline(st, ctx, lambda it, p: _gold_json(it))
    assert res.value == pytest.approx(1.0)
    assert res.n_invalid == 0
    wrong = {lab: next(x for x in items[0].metadata["labels"] if x != lab) for lab in items[0].metadata["labels"]}
    _, res = run_offline(st, ctx, lambda it, p: json.dumps({"label": wrong[it.target]}))
    assert res.value == pytest.approx(0.0)
    asked: list[str] = []

    def garbage(item: Item, prompt: str) -> str:
        asked.append(prompt)
        return "hmm"

    records, res = run_offline(st, ctx, garbage)
    assert res.n_invalid == len(items)
    assert (res.status, res.value) == ("ok", 0.0)  # every reply unusable: every diagnosis wrong, the worst case
    assert len(asked) == 3 * len(items)
    assert all(r.metadata["reasks"] == 2 for r in records)


def test_diagnosis_two_datasets_composite(tmp_path: Path) -> None:
    swmh = tmp_path / "swmh.jsonl"
    swmh.write_text("\n".join(json.dumps(r) for r in _swmh_rows(4)) + "\n", encoding="utf-8")
    d4 = tmp_path / "d4.json"
    d4.write_text(json.dumps(_d4_rows(3), ensure_ascii=False), encoding="utf-8")
    st = PsychologicalDiagnosis()
    opts = {"swmh_path": str(swmh), "d4_path": str(d4)}

    def respond(item: Item, prompt: str) -> str:
        # Right on SWMH; on D4 right only for "none"/"mild", else "none".
        if item.metadata["dataset"] == "swmh" or item.target in ("none", "mild"):
            return _gold_json(item)
        return '{"label": "none"}'

    for mode in ("faithful", "default"):
        ctx = ctx_(mode=mode, options=opts)
        items = st.items(ctx)
        assert Counter(it.metadata["dataset"] for it in items) == {"swmh": 20, "d4": 12}
        d4_item = next(it for it in items if it.metadata["dataset"] == "d4")
        assert "Patient: 患者回答" in d4_item.prompt
        assert "Doctor: 医生问题" in d4_item.prompt
        records, res = run_offline(st, ctx, respond)
        d4_gold = [r.metadata["target"] for r in records if r.metadata["dataset"] == "d4"]
        d4_pred = [r.score["pred"] for r in records if r.metadata["dataset"] == "d4"]
        acc_d4 = accuracy_score(d4_gold, d4_pred)
        wf1_d4 = f1_score(d4_gold, d4_pred, average="weighted", zero_division=0)
        assert res.metrics["accuracy_d4"] == pytest.approx(acc_d4)
        assert res.metrics["weighted_f1_d4"] == pytest.approx(wf1_d4)
        assert res.metrics["accuracy_swmh"] == pytest.approx(1.0)
        expected = (1 + acc_d4) / 2 if mode == "faithful" else (1 + wf1_d4) / 2
        assert res.value == pytest.approx(expected)
        assert res.ci[0] <= res.value <= res.ci[1]
        assert res.ci[0] < res.ci[1]
        assert any("unverified" in n for n in res.notes)
    # --limit in default mode: seeded stratified sample per dataset.
    lim = st.items(ctx_(options=opts, limit=8))
    assert Counter(it.metadata["dataset"] for it in lim) == {"swmh": 8, "d4": 8}
    assert [it.id for it in lim] == [it.id for it in st.items(ctx_(options=opts, limit=8))]


def test_diagnosis_generic_adapter(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    _write_csv(path, [{"body": f"post {i}", "y": "calm" if i % 2 else "tense"} for i in range(10)])
    st = PsychologicalDiagnosis()
    ctx = ctx_(options={"diagnosis_path": str(path), "text_field": "body", "label_field": "y"})
    items = st.items(ctx)
    assert len(items) == 10
    assert items[0].metadata["labels"] == ["calm", "tense"]
    with pytest.raises(TrustmhError, match="keys found: body, y"):
        st.items(ctx_(options={"diagnosis_path": str(path), "text_field": "text", "label_field": "y"}))


def test_diagnosis_perturbable_items(tmp_path: Path) -> None:
    swmh = tmp_path / "swmh.jsonl"
    swmh.write_text("\n".join(json.dumps(r) for r in _swmh_rows(2)) + "\n", encoding="utf-8")
    d4 = tmp_path / "d4.jsonl"
    d4.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in _d4_rows(1)) + "\n", encoding="utf-8")
    st = PsychologicalDiagnosis()
    ctx = ctx_(options={"swmh_path": str(swmh), "d4_path": str(d4)})
    clean = st.items(ctx)
    keys: list[str] = []

    def perturb(key: str, text: str) -> str:
        keys.append(key)
        return f"NOISY[{text}]"

    pert = st.perturbable_items(ctx, perturb)
    assert [it.id for it in pert] == [it.id for it in clean]
    for a, b in zip(clean, pert, strict=True):
        assert a.target == b.target
        assert a.metadata["labels"] == b.metadata["labels"]
        if a.metadata["kind"] == "post":
            assert b.metadata["perturbed_text"] == f"NOISY[{a.metadata['text']}]"
            assert b.prompt == a.prompt.replace(a.metadata["text"], b.metadata["perturbed_text"])
        else:
            for t0, t1 in zip(a.metadata["turns"], b.metadata["perturbed_turns"], strict=True):
                assert t1["text"] == (f"NOISY[{t0['text']}]" if t0["role"] == "patient" else t0["text"])
            assert "Doctor: 医生问题" in b.prompt
            assert "NOISY[患者回答" in b.prompt
    assert {k for k in keys if "#" not in k} == {it.id for it in clean if it.metadata["kind"] == "post"}
    _, res = run_offline(st, ctx, lambda it, p: _gold_json(it), items=pert)
    assert res.value == pytest.approx(1.0)


def test_starter_files_are_demo() -> None:
    for sid in ("reliability/psychological_diagnosis", "reliability/emotional_support",
                "reliability/psychological_intervention"):
        rows = load_starter(sid)
        assert 2 <= len(rows) <= 20
        assert all("synthetic demo" in r["source"] for r in rows)
    assert re.search("EOS", json.dumps(load_starter("reliability/emotional_support"))) is None


def test_diagnosis_prompt_example_is_not_a_label() -> None:
    """A model that copies the prompt's example answer must be scored invalid, not as some real label."""
    st = PsychologicalDiagnosis()
    ctx = ctx_(suite="starter", mode="default")
    items = st.items(ctx)
    example = items[0].prompt.strip().rsplit("\n", 1)[-1]
    assert example.startswith('{"label"')
    labels = items[0].metadata["labels"]
    assert parse_diagnosis(example, labels) is None
    records, res = run_offline(st, ctx, lambda it, p: example)
    assert res.n_invalid == len(items)
    assert not any(r.score.get("correct") for r in records)
