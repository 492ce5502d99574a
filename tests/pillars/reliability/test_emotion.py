"""reliability/emotion_recognition (EmoBench EU): the loader, the two-line answer parser, offline runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reliability_canned import N_BOOT
from trustmh.core import Item, RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.reliability.data import EU_RELPATH, load_eu
from trustmh.pillars.reliability.emotion import EmotionRecognition, parse_eu_answer
from trustmh.starter import load_starter


def test_eu_loader_counts(data_dir: Path) -> None:
    rows = load_eu(data_dir / EU_RELPATH)
    assert len(rows) == 400
    assert Counter(r["language"] for r in rows) == {"en": 200, "zh": 200}
    assert Counter(r["coarse_category"] for r in rows) == {
        "perspective_taking": 134, "personal_beliefs_and_experiences": 112, "complex_emotions": 98,
        "emotional_cues": 56}
    assert Counter(len(r["cause_choices"]) for r in rows) == {4: 279, 6: 120, 7: 1}
    assert {len(r["emotion_choices"]) for r in rows} == {6}
    assert {r["qid"] for r in rows if r["language"] == "en"} == {r["qid"] for r in rows if r["language"] == "zh"}


def test_eu_loader_rejects_label_not_in_choices(tmp_path: Path) -> None:
    row = load_starter("reliability/emotion_recognition")[0]
    p = tmp_path / "eu.jsonl"
    p.write_text(json.dumps({**row, "cause_label": "not a choice"}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="row 1: field 'cause_label'"):
        load_eu(p)


@pytest.mark.parametrize(("text", "expected"), [
    ("Emotion: B\nCause: C", ("B", "C")),
    ("**Emotion:** (A)\n**Cause:** D", ("A", "D")),
    ("情绪：F\n原因：A", ("F", "A")),
    ('{"emotion": "C", "cause": "B"}', ("C", "B")),
    ("Emotion: B", ("B", None)),
    ("Emotion: B\nEmotion: C\nCause: A", (None, "A")),  # conflicting emotion lines
    ("Emotion: G\nCause: A", (None, "A")),  # G is not an emotion key
    ("Cause: E", (None, None)),  # only 4 cause options
    ("I feel happy", (None, None)),
    ("<think>Emotion: A</think>Emotion: B\nCause: C", ("B", "C")),
])
def test_parse_eu_answer(text: str, expected: tuple[str | None, str | None]) -> None:
    assert parse_eu_answer(text, list("ABCDEF"), list("ABCD")) == expected


def _eu_reply(item: Item, emotion_ok: bool, cause_ok: bool, zh: bool = False) -> str:
    def pick(keys: list[str], gold: str, ok: bool) -> str:
        return gold if ok else next(k for k in keys if k != gold)

    e = pick(item.metadata["emotion_keys"], item.target["emotion"], emotion_ok)
    c = pick(item.metadata["cause_keys"], item.target["cause"], cause_ok)
    return f"情绪：{e}\n原因：{c}" if zh else f"Emotion: {e}\nCause: {c}"


def test_emotion_all_gold_and_mixed() -> None:
    ctx = RunContext(mode="default", suite="starter", n_boot=N_BOOT)
    er = EmotionRecognition()
    _, result = run_offline(er, ctx, respond=lambda it, p: _eu_reply(it, True, True,
                                                                       it.metadata["language"] == "zh"))
    assert result.value == 1.0
    assert result.metrics["joint_acc"] == 1.0
    assert result.n_invalid == 0
    assert set(result.metrics["by_language"]) == {"en", "zh"}
    # Emotion always right, cause always wrong: value 0.5, joint 0.
    _, result = run_offline(er, ctx, respond=lambda it, p: _eu_reply(it, True, False))
    assert result.value == pytest.approx(0.5)
    assert result.metrics["acc_emotion"] == 1.0
    assert result.metrics["acc_cause"] == 0.0
    assert result.metrics["joint_acc"] == 0.0
    assert result.value == pytest.approx((result.metrics["acc_emotion"] + result.metrics["acc_cause"]) / 2)
    for group in result.metrics["by_coarse_category"].values():
        assert group["acc_emotion"] == 1.0
        assert group["acc_cause"] == 0.0


def test_emotion_garbage_invalid() -> None:
    ctx = RunContext(mode="faithful", suite="starter", n_boot=N_BOOT)
    records, result = run_offline(EmotionRecognition(), ctx, respond=lambda it, p: "I am not sure.")
    assert (result.status, result.value) == ("ok", 0.0)  # every reply unusable: every answer wrong, the worst case (docs/results.md#invalid)
    assert result.n_invalid == result.n == 12
    assert result.metrics["invalid_rate"] == 1.0
    assert all(r.metadata["reasked"] for r in records)


def test_emotion_real_items_targets_match_labels(data_dir: Path) -> None:
    items = EmotionRecognition().items(RunContext(mode="faithful"))
    rows = load_eu(data_dir / EU_RELPATH)
    assert len(items) == 400
    assert len({i.id for i in items}) == 400
    for item, row in zip(items, rows, strict=True):
        e = "ABCDEFGHIJ".index(item.target["emotion"])
        c = "ABCDEFGHIJ".index(item.target["cause"])
        assert row["emotion_choices"][e] == row["emotion_label"]
        assert row["cause_choices"][c] == row["cause_label"]
        assert f"{item.target['cause']}. {row['cause_label']}" in item.prompt
