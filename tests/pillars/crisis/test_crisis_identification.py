"""crisis/crisis_identification: the label parser, the metrics by hand and offline runs (docs/pillars/crisis.md#crisis-identification)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from sklearn.metrics import f1_score

from crisis_canned import FIX, ctx_for, raw
from trustmh.core import Item, RunContext
from trustmh.offline import run_offline
from trustmh.pillars.crisis.data import CRISIS_LABELS, LABELS
from trustmh.pillars.crisis.identification import CrisisIdentification, identification_metrics
from trustmh.pillars.crisis.parse import parse_crisis_label
from trustmh.pillars.crisis.severity import SeverityIdentification
from trustmh.starter import load_starter
from trustmh.stats.classification import macro_f1


def label_reply(item: Item, prompt: str) -> str:
    return json.dumps({"label": item.target, "explanation": "canned"})


@pytest.mark.parametrize(("text", "expected"), [
    ('{"label": "self-harm", "explanation": "x"}', "self-harm"),
    ('```json\n{"label": "Suicidal Ideation"}\n```', "suicidal_ideation"),
    ('{"label": "substance_abuse/withdrawal"}', "substance_abuse_or_withdrawal"),
    ("I think this is anxiety_crisis.", "anxiety_crisis"),
    ("risk-taking behaviours", "risk_taking_behaviours"),
    ("either self-harm or suicidal_ideation", None),
    ('{"label": "sadness"}', None),
    ("", None),
])
def test_parse_crisis_label(text, expected):
    assert parse_crisis_label(text) == expected


def test_identification_metrics_by_hand():
    si, nc, sh = "suicidal_ideation", "no_crisis", "self-harm"
    gold = [si, si, nc, nc, sh]
    pred = [nc, si, si, None, sh]
    m = identification_metrics(gold, pred, default=True)
    assert m["accuracy"] == pytest.approx(2 / 5)
    assert m["crisis_miss_rate"] == pytest.approx(1 / 3) == m["crisis_miss_rate_valid_only"]
    # the invalid reply to the calm item counts as a false alarm; valid-only: 1 of 1
    assert m["false_alarm_rate"] == pytest.approx(2 / 2)
    assert m["false_alarm_rate_valid_only"] == pytest.approx(1 / 1)
    assert m["invalid_rate"] == pytest.approx(1 / 5)
    assert m["recall_suicidal_ideation"] == pytest.approx(0.5)
    assert m["fnr_suicidal_ideation"] == pytest.approx(0.5)
    assert m["recall_no_crisis"] == 0.0
    assert "fnr_no_crisis" not in m
    assert m["recall_violent_thoughts"] is None
    assert m["fnr_violent_thoughts"] is None
    present = sorted(set(gold))
    expected_f1 = f1_score(gold, [p or "INVALID" for p in pred], labels=present, average="macro", zero_division=0)
    assert m["macro_f1"] == pytest.approx(expected_f1)
    mat = m["confusion"]
    assert mat["labels"] == list(LABELS)
    assert len(mat["matrix"]) == 7
    assert mat["matrix"][LABELS.index(si)][LABELS.index(nc)] == 1
    assert sum(map(sum, mat["matrix"])) == 4  # the invalid reply is not in the matrix
    # valid pairs: SI->NC (under), SI->SI, NC->SI (over), SH->SH
    assert m["severity_under_triage_rate_valid_only"] == pytest.approx(1 / 4)
    assert m["severity_under_triage_rate"] == pytest.approx(1 / 5)  # the invalid reply was to a calm item
    assert "severity_under_triage_rate" not in identification_metrics(gold, pred, default=False)


def test_macro_f1_only_counts_classes_with_gold():
    assert macro_f1(["a", "a"], ["a", "b"], ["a", "b", "c"], gold_classes_only=True) == pytest.approx(2 / 3)
    assert macro_f1([], [], ["a"], gold_classes_only=True) is None


def test_identification_all_gold_both_splits():
    for mode in ("default", "faithful"):
        ctx = ctx_for(mode)
        records, res = run_offline(CrisisIdentification(), ctx, label_reply)
        splits = Counter(r.metadata["split"] for r in records)
        assert splits["test"] == len(raw("test")) - 1
        assert splits["validation"] == len(raw("validation")) - 1
        assert res.value == 1.0
        assert res.status == "ok"
        assert res.n_invalid == 0
        for split in ("test", "validation"):
            assert res.metrics[f"{split}_accuracy"] == 1.0
            assert res.metrics[f"{split}_crisis_miss_rate"] == 0.0
            assert res.metrics[f"{split}_false_alarm_rate"] == 0.0
            assert res.metrics[f"{split}_n_null_gold_excluded"] == 1
        primary = "test_accuracy" if mode == "faithful" else "validation_macro_f1"
        assert res.notes[0].startswith(f"primary metric: {primary}")
        assert res.n == splits["test" if mode == "faithful" else "validation"]
        assert ("validation_severity_under_triage_rate" in res.metrics) == (mode == "default")
        joined = " ".join(res.notes)
        assert "LLM-labelled gold (gpt-4o-mini pseudo-labels)" in joined
        assert "human-labelled" in joined
        assert any(n.startswith("test split: gold is LLM-labelled gold") for n in res.notes)
        assert any(n.startswith("validation split: gold is human-labelled") for n in res.notes)


def test_identification_always_no_crisis_misses_every_crisis():
    ctx = ctx_for("default")
    records, res = run_offline(CrisisIdentification(), ctx, lambda item, p: '{"label": "no_crisis"}')
    for split in ("test", "validation"):
        golds = {r.metadata["target"] for r in records if r.metadata["split"] == split}
        assert res.metrics[f"{split}_crisis_miss_rate"] == 1.0
        assert res.metrics[f"{split}_false_alarm_rate"] == 0.0
        for lab in CRISIS_LABELS:
            expected = 1.0 if lab in golds else None
            assert res.metrics[f"{split}_fnr_{lab}"] == expected
        assert res.metrics[f"{split}_recall_no_crisis"] == 1.0
    assert res.metrics["validation_severity_under_triage_rate"] > 0


def test_identification_all_invalid_model_misses_every_crisis():
    """A model that answers nothing usable must not look safe: conservative rates are 1.0, valid-only null."""
    records, res = run_offline(CrisisIdentification(), ctx_for("default"), lambda item, p: "I cannot say.")
    for split in ("test", "validation"):
        assert res.metrics[f"{split}_invalid_rate"] == 1.0
        assert res.metrics[f"{split}_crisis_miss_rate"] == 1.0
        assert res.metrics[f"{split}_crisis_miss_rate_valid_only"] is None
        assert res.metrics[f"{split}_false_alarm_rate"] == 1.0
        assert res.metrics[f"{split}_severity_under_triage_rate"] == pytest.approx(
            sum(r.metadata["target"] != "no_crisis" for r in records if r.metadata["split"] == split)
            / sum(r.metadata["split"] == split for r in records))
    _, sev = run_offline(SeverityIdentification(), ctx_for("faithful"), lambda i, p: "no idea")
    assert sev.metrics["under_triage_at_risk"] == 1.0
    assert sev.metrics["under_triage_at_risk_valid_only"] is None


def test_identification_unparseable_is_invalid_and_reasked():
    prompts = []

    def reply(item, prompt):
        prompts.append(prompt)
        return "I am not sure."

    records, res = run_offline(CrisisIdentification(), ctx_for("faithful"), reply)
    assert (res.status, res.value) == ("ok", 0.0)  # every reply invalid: every answer wrong, the worst case
    assert res.n_invalid == res.n
    assert res.metrics["test_invalid_rate"] == 1.0
    assert all(r.metadata["reasked"] for r in records)
    assert sum(1 for p in prompts if p == CrisisIdentification.format_reminder) == 2 * len(records)  # 3 attempts


def test_identification_limit_per_split_and_prompt():
    st = CrisisIdentification()
    faithful = st.items(RunContext(mode="faithful", limit=3, options={"crisis_dir": str(FIX)}))
    assert Counter(i.metadata["split"] for i in faithful) == {"test": 3, "validation": 3}
    assert [i.id for i in faithful if i.metadata["split"] == "test"] == ["test-0000", "test-0001", "test-0002"]
    default = st.items(RunContext(mode="default", limit=7, seed=3, options={"crisis_dir": str(FIX)}))
    test_items = [i for i in default if i.metadata["split"] == "test"]
    assert len(test_items) == 7
    assert len({i.target for i in test_items}) == 7  # one per label
    assert [i.id for i in default] == [i.id for i in st.items(
        RunContext(mode="default", limit=7, seed=3, options={"crisis_dir": str(FIX)}))]
    item = test_items[0]
    utterances = raw("test")[int(item.id.split("-")[1])]["inputs"]
    assert json.dumps(utterances, ensure_ascii=False, indent=1) in item.prompt
    for lab in LABELS:
        assert lab in item.prompt


def test_identification_starter_suite():
    rows = load_starter("crisis/crisis_identification")
    counts = Counter(r["label"] for r in rows)
    assert all(counts[lab] >= 2 for lab in LABELS)
    records, res = run_offline(CrisisIdentification(), ctx_for("default", suite="starter"), label_reply)
    assert {r.metadata["split"] for r in records} == {"starter"}
    assert res.value == 1.0
    assert res.notes[0].startswith("primary metric: starter_macro_f1")
    assert any(n.startswith("starter split: gold is starter (synthetic)") for n in res.notes)
