"""reliability/knowledge (USMLE-Mental): the loader, the parsers, sampling, prompts and offline runs."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reliability_canned import N_BOOT
from trustmh.core import Item, RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.reliability.data import USMLE_RELPATH, load_usmle
from trustmh.pillars.reliability.emotion import EmotionRecognition
from trustmh.pillars.reliability.knowledge import Knowledge, parse_letter_faithful
from trustmh.sampling import stratified_sample
from trustmh.starter import load_starter

# ------------------------------------------------------------------------------------------- loaders

def test_usmle_loader_counts(data_dir: Path) -> None:
    rows = load_usmle(data_dir / USMLE_RELPATH)
    assert len(rows) == 727
    assert Counter(len(r["options"]) for r in rows) == {5: 567, 6: 74, 7: 57, 8: 25, 9: 3, 10: 1}
    assert Counter(r["step"] for r in rows) == {"step1": 308, "step2": 419}
    cats = Counter(r["category"] for r in rows)
    assert cats == {"depression": 269, "anxiety": 185, "schizophrenia": 87, "bipolar": 76, "eating": 58,
                    "autism": 21, "adhd": 16, "ocd": 9, "ptsd": 6}
    assert all(r["answer"] in r["options"] for r in rows)
    assert [r["row_index"] for r in rows] == list(range(727))


def test_usmle_loader_rejects_bad_rows(tmp_path: Path) -> None:
    good = {"question": "q", "options": {"A": "x", "B": "y"}, "answer": "A", "meta_info1": "step1",
            "meta_info2": ["demo"], "answer_description": "x"}
    bad = {**good, "answer": "C"}
    p = tmp_path / "u.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"row 2: field 'answer'"):
        load_usmle(p)
    p.write_text(json.dumps({**good, "options": {"A": "x", "C": "y"}}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="row 1: field 'options'"):
        load_usmle(p)
    p.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="line 1"):
        load_usmle(p)


# ------------------------------------------------------------------------------------------- parsers

KEYS5 = list("ABCDE")


@pytest.mark.parametrize(("text", "expected"), [
    ("B", "B"),
    ("B.", "B"),
    ("(C)", "C"),
    ("The answer is D", "D"),
    ("Answer: E", "E"),
    ("F", None),  # not a key of this item
    ("I think B", "B"),  # "I" is not a key of a 5-option item
    ("", None),
    ("no letter here", None),
    ("A or B", "A"),  # first valid standalone capital wins
])
def test_parse_letter_faithful(text: str, expected: str | None) -> None:
    assert parse_letter_faithful(text, KEYS5) == expected


def test_parse_letter_faithful_quirk_on_long_option_lists() -> None:
    # With 9 options "I" is a valid key: the faithful reader takes the pronoun (a kept quirk).
    assert parse_letter_faithful("I think B", list("ABCDEFGHI")) == "I"


@pytest.mark.parametrize(("text", "expected"), [
    ("Some reasoning.\nAnswer: C", "C"),
    ("Answer: (B)", "B"),
    ('{"answer": "D"}', "D"),
    ("C", "C"),
    ("The answer is C", None),  # default needs an anchored answer
    ("Answer: B\nAnswer: C", None),  # two different letters
    ("Answer: F", None),  # not a key
    ("answer: c", None),  # case-sensitive
])
def test_default_parser_is_shared_mcq(text: str, expected: str | None) -> None:
    ctx = RunContext(mode="default")
    assert Knowledge().parse(text, KEYS5, ctx) == expected


# ------------------------------------------------------------------------------------------ sampling

def test_stratified_sample_is_seeded_and_proportional() -> None:
    rows = [("a", i) for i in range(60)] + [("b", i) for i in range(30)] + [("c", i) for i in range(10)]
    s1 = stratified_sample(rows, lambda r: r[0], 20, seed=3)
    s2 = stratified_sample(rows, lambda r: r[0], 20, seed=3)
    s3 = stratified_sample(rows, lambda r: r[0], 20, seed=4)
    assert s1 == s2
    assert s1 != s3
    assert Counter(r[0] for r in s1) == {"a": 12, "b": 6, "c": 2}
    assert s1 == sorted(s1, key=rows.index)  # input order kept
    assert stratified_sample(rows, lambda r: r[0], 500, seed=0) == rows


def test_limit_faithful_head_default_stratified(data_dir: Path) -> None:
    k = Knowledge()
    head = k.items(RunContext(mode="faithful", limit=30))
    assert [i.id for i in head] == [f"usmle-{i:04d}" for i in range(30)]
    strat = k.items(RunContext(mode="default", limit=30, seed=1))
    assert len(strat) == 30
    assert [i.id for i in strat] != [i.id for i in head]
    cats = Counter(i.metadata["category"] for i in strat)
    assert cats["depression"] == round(30 * 269 / 727)
    assert [i.id for i in strat] == [i.id for i in k.items(RunContext(mode="default", limit=30, seed=1))]
    eu = EmotionRecognition().items(RunContext(mode="default", limit=40, seed=0))
    assert Counter(i.metadata["language"] for i in eu) == {"en": 20, "zh": 20}


def test_prompts_by_mode_and_language() -> None:
    ctx_f = RunContext(mode="faithful", suite="starter")
    ctx_d = RunContext(mode="default", suite="starter")
    pf = Knowledge().items(ctx_f)[0].prompt
    pd = Knowledge().items(ctx_d)[0].prompt
    assert "Answer: X" in pd
    assert "Answer: X" not in pf
    assert "\nA. " in pf
    assert "\nB. " in pd
    eu = EmotionRecognition().items(ctx_d)
    zh = [i for i in eu if i.metadata["language"] == "zh"]
    en = [i for i in eu if i.metadata["language"] == "en"]
    assert zh
    assert en
    assert "情绪：" in zh[0].prompt
    assert "Emotion:" in en[0].prompt
    assert zh[0].cluster == zh[0].id.removeprefix("eu-")


# -------------------------------------------------------------------------------------- offline runs

def _gold_knowledge(item: Item, prompt: str) -> str:
    return f"Reasoning...\nAnswer: {item.target}"


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_knowledge_all_gold(mode: str) -> None:
    ctx = RunContext(mode=mode, suite="starter", n_boot=N_BOOT)
    records, result = run_offline(Knowledge(), ctx, respond=lambda item, p: item.target)
    assert result.value == 1.0
    assert result.n == len(records) == 12
    assert result.n_invalid == 0
    assert result.metrics["invalid_rate"] == 0.0
    assert set(result.metrics["accuracy_by_category"].values()) == {1.0}
    assert result.direction == "higher"
    _, result2 = run_offline(Knowledge(), ctx, respond=_gold_knowledge)
    assert result2.value == 1.0


def test_knowledge_garbage_is_invalid_and_reasked() -> None:
    ctx = RunContext(mode="default", suite="starter", n_boot=N_BOOT)
    prompts: list[str] = []

    def respond(item: Item, prompt: str) -> str:
        prompts.append(prompt)
        return "hmm, hard to say"

    records, result = run_offline(Knowledge(), ctx, respond=respond)
    assert (result.status, result.value) == ("ok", 0.0)  # every reply unusable: every answer wrong, the worst case (docs/results.md#invalid)
    assert result.n_invalid == result.n == 12
    assert result.metrics["invalid_rate"] == 1.0
    assert all(r.metadata["reasked"] for r in records)
    assert prompts.count(Knowledge.format_reminder) == 24  # two re-asks each


def test_knowledge_wrong_letter_and_reask_recovery() -> None:
    ctx = RunContext(mode="default", suite="starter", n_boot=N_BOOT)

    def wrong(item: Item, prompt: str) -> str:
        keys = item.metadata["option_keys"]
        return "Answer: " + next(k for k in keys if k != item.target)

    _, result = run_offline(Knowledge(), ctx, respond=wrong)
    assert result.value == 0.0
    assert result.n_invalid == 0

    def late(item: Item, prompt: str) -> str:  # answers properly only after the reminder
        return f"Answer: {item.target}" if prompt == Knowledge.format_reminder else "unsure"

    records, result = run_offline(Knowledge(), ctx, respond=late)
    assert result.value == 1.0
    assert all(r.metadata["reasked"] for r in records)


def test_knowledge_half_right_has_ci(data_dir: Path) -> None:
    ctx = RunContext(mode="default", limit=40, seed=0, n_boot=N_BOOT)
    items = Knowledge().items(ctx)
    right = {i.id for i in items[::2]}
    _, result = run_offline(Knowledge(), ctx, items=items,
                            respond=lambda it, p: "Answer: " + (it.target if it.id in right else
                                                                 next(k for k in it.metadata["option_keys"]
                                                                      if k != it.target)))
    assert result.value == pytest.approx(0.5)
    assert result.ci is not None
    assert result.ci[0] < 0.5 < result.ci[1]
    assert set(result.metrics["accuracy_by_step"]) <= {"step1", "step2"}


def test_empty_records_not_computed() -> None:
    ctx = RunContext()
    assert Knowledge().aggregate([], ctx).status == "not_computed"
    assert EmotionRecognition().aggregate([], ctx).status == "not_computed"


def test_starter_files_are_demo() -> None:
    for sid, field in (("reliability/knowledge", "question"), ("reliability/emotion_recognition", "scenario")):
        rows = load_starter(sid)
        assert 10 <= len(rows) <= 15
        assert all("DEMO" in r[field] or "演示" in r[field] for r in rows)


@pytest.mark.parametrize("reasks", [0, 1])
def test_reask_count_follows_the_option(reasks: int) -> None:
    """`-O reasks=N` (the offline demo: 0) bounds the re-asks; an unparseable reply is then invalid."""
    ctx = RunContext(mode="default", suite="starter", n_boot=N_BOOT, options={"reasks": reasks})
    prompts: list[str] = []

    def late(item: Item, prompt: str) -> str:  # answers properly only after the reminder
        prompts.append(prompt)
        return f"Answer: {item.target}" if prompt == Knowledge.format_reminder else "unsure"

    records, result = run_offline(Knowledge(), ctx, respond=late)
    assert prompts.count(Knowledge.format_reminder) == reasks * len(records)
    assert all(bool(r.metadata["reasked"]) is bool(reasks) for r in records)
    assert result.value == (1.0 if reasks else 0.0)  # without a re-ask every reply is invalid: every one wrong
    assert result.n_invalid == (0 if reasks else len(records))
