"""ethics/ethical_reasoning: EthicMH decoding and loading, choice and judge parsers, metrics, offline runs."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from trustmh.core import JUDGE_NOT_VALIDATED, Item, JudgeInfo, JudgeRequest, RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.ethics.data import (
    ETHICMH_RELPATH,
    decode_faithful,
    decode_repaired,
    load_ethicmh,
    parse_ethicmh,
)
from trustmh.pillars.ethics.reasoning import (
    SC_KEYS,
    EthicalReasoning,
    ci_margin,
    judge_prompt,
    judge_valid,
    parse_choice_default,
    parse_choice_faithful,
    parse_judge_default,
    parse_judge_faithful,
)
from trustmh.starter import load_starter
from trustmh.stats.classification import macro_f1

N_BOOT = 200
CJK = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")
SUBCATEGORIES = {"Confidentiality and Trust in Mental Health", "Bias in AI (race)", "Bias in AI (gender)",
                 "Autonomy vs Beneficence (adult)", "Autonomy vs Beneficence (minor)"}


@pytest.fixture(scope="module")
def ethicmh_path(data_dir: Path) -> Path:
    return data_dir / ETHICMH_RELPATH


# ------------------------------------------------------------------------------------------- loading

@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_ethicmh_counts(ethicmh_path: Path, mode: str) -> None:
    rows = load_ethicmh(ethicmh_path, mode)  # type: ignore[arg-type]
    assert len(rows) == 125
    assert [r["index"] for r in rows] == list(range(125))
    assert Counter(r["subcategory"] for r in rows) == {s: 25 for s in SUBCATEGORIES}
    gold = Counter(r["expected_reasoning"] for r in rows)
    assert gold == {"A": 53, "B": 46, "C": 26}
    assert gold["D"] == 0
    for r in rows:
        lines = r["options"].split("\n")
        assert [ln[:2] for ln in lines] == ["A.", "B.", "C.", "D."]  # LF inside the cell, no CR
        assert "\r" not in r["options"]
        assert "\r" not in r["viewpoints"]


def test_ethicmh_faithful_keeps_mojibake(ethicmh_path: Path) -> None:
    raw = ethicmh_path.read_bytes()
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    text = decode_faithful(raw)
    assert "閳ユ獨" in text  # what the models saw for "’s"
    rows = load_ethicmh(ethicmh_path, "faithful")
    assert "patient閳ユ獨 consent" in rows[0]["options"]
    garbled = sum(bool(CJK.search(r["scenario"] + r["options"] + r["reasoning_task"])) for r in rows)
    assert garbled > 0


def test_ethicmh_default_repair(ethicmh_path: Path) -> None:
    raw = ethicmh_path.read_bytes()
    assert raw.count(b"\xe9\x88\x3f") > 0
    text = decode_repaired(raw)
    assert not CJK.search(text)
    assert "\ufffd" not in text
    rows = load_ethicmh(ethicmh_path, "default")
    assert "patient’s consent" in rows[0]["options"]
    faithful = load_ethicmh(ethicmh_path, "faithful")
    # Repair changes only the garbled text: the clean rows are identical.
    same = [f == d for f, d in zip(faithful, rows, strict=True)]
    assert any(same)
    assert not all(same)


def test_decode_repaired_rules() -> None:
    raw = "parents\u9225\u6a9a wishes".encode()  # mojibake of "parents’s" stored as UTF-8
    assert decode_repaired(raw) == "parents’s wishes"
    assert decode_repaired(b"the parents\xe9\x88?wishes") == "the parents’ wishes"
    assert decode_repaired(b"toughen up.\xe9\x88?The") == "toughen up.’ The"
    assert decode_repaired(b"either extreme \xe9\x88?full") == "either extreme — full"
    with pytest.raises(TrustmhError, match="demo.csv"):
        decode_repaired("真的".encode(), "demo.csv")  # real CJK cannot be un-mojibaked
    with pytest.raises(TrustmhError, match="not UTF-8"):
        decode_repaired(b"bad \xff byte")


def test_decode_faithful_fallback() -> None:
    assert decode_faithful("plain’s".encode()) == "plain’s"
    text = decode_faithful("patient\u9225\u6a9a x ".encode() + b"\xe9\x88?")
    assert text == "patient閳ユ獨 x 閳?"
    with pytest.raises(TrustmhError, match="demo.csv"):
        decode_faithful(b"\xff\xff\xff", "demo.csv")


def _csv(*records: str) -> str:
    header = "index,subcategory,scenario,options,reasoning_task,expected_reasoning,model_behavior," \
             "real_world_impact,viewpoints, "
    return "\r\n".join([header, *records]) + "\r\n"


def test_parse_ethicmh_crlf_records_lf_cells() -> None:
    text = _csv('0,Demo sub,"A demo, with comma","A.one\nB.two\nC.three\nD.four",Pick one,B,mb,rw,"[\'v\']", ',
                '1,Demo sub,Second,"A.x\nB.y\nC.z\nD.w",Task,A,mb,rw,[], ')
    rows = parse_ethicmh(text, "demo.csv")
    assert len(rows) == 2
    assert rows[0]["scenario"] == "A demo, with comma"
    assert rows[0]["options"] == "A.one\nB.two\nC.three\nD.four"
    assert rows[1]["expected_reasoning"] == "A"
    assert rows[1]["index"] == 1


def test_parse_ethicmh_errors() -> None:
    with pytest.raises(TrustmhError, match=r"demo.csv record 1 \(index 0\): field 'expected_reasoning'"):
        parse_ethicmh(_csv('0,s,sc,"A.a\nB.b\nC.c\nD.d",t,E,m,r,v, '), "demo.csv")
    with pytest.raises(TrustmhError, match="line 1: header"):
        parse_ethicmh("a,b,c\r\n1,2,3\r\n", "demo.csv")
    with pytest.raises(TrustmhError, match="field 'index'"):
        parse_ethicmh(_csv('x,s,sc,o,t,A,m,r,v, '), "demo.csv")


# ----------------------------------------------------------------------------------- choice parsers

FENCED = '```json\n{\n  "choice": "C",\n  "reasoning": "Because."\n}\n```'


@pytest.mark.parametrize(("text", "expected"), [
    (FENCED, "C"),
    ('{"choice": "b", "reasoning": "x"}', "B"),  # whole text as JSON, upper-cased
    ('```\n{"choice": " d ", "reasoning": "x"}\n```', "D"),
    ('```json\n{"choice": "Option B", "reasoning": "x"}\n```', "B"),
    ('```json\n{"choice": "none", "reasoning": "x"}\n```', None),  # JSON without a letter: no fallback
    ("I choose C because it balances safety and trust.", "C"),
    ("I would take a careful route: option C.", "A"),  # flaw 11: the article "a" is read as A
    ("Choice: c", "C"),
    ("", None),
    ("no option letter here", None),
])
def test_parse_choice_faithful(text: str, expected: str | None) -> None:
    assert parse_choice_faithful(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    (FENCED, "C"),
    ('{"choice": "(B)", "reasoning": "x"}', "B"),
    ("I would take a careful route: option C.", None),  # anchored parser does not fall for "a"
    ("I would take a careful route.\nAnswer: C", "C"),
    ('{"choice": "b"}', None),  # case-sensitive
    ("Answer: A\nAnswer: B", None),
    ("<think>maybe A</think>\nAnswer: B", "B"),
])
def test_parse_choice_default(text: str, expected: str | None) -> None:
    assert parse_choice_default(text) == expected


def test_article_trap_contrast() -> None:
    text = "Taking a step back, the best option is B.\nAnswer: B"
    assert parse_choice_faithful(text) == "A"
    assert parse_choice_default(text) == "B"


# ------------------------------------------------------------------------------------ judge parsing

JUDGE_JSON = "```json\n" + json.dumps({**{k: 4 for k in SC_KEYS}, "sc1": 5, "sc1_reason": "good"}) + "\n```"


def test_parse_judge_faithful() -> None:
    parsed = parse_judge_faithful(JUDGE_JSON)
    assert parsed is not None
    assert parsed["sc1"] == 5
    assert parsed["sc5"] == 4
    assert parsed["sc1_reason"] == "good"
    assert parse_judge_faithful("Overall I would give this a 3 out of 5.") == {"overall": 3.0}
    assert parse_judge_faithful("no numbers") is None
    assert parse_judge_faithful('{"sc1": 2}') == {"sc1": 2}  # partial JSON kept (lenient)
    assert parse_judge_faithful(None) is None


def test_parse_judge_default() -> None:
    parsed = parse_judge_default(JUDGE_JSON)
    assert parsed is not None
    assert [parsed[k] for k in SC_KEYS] == [5, 4, 4, 4, 4]
    assert parse_judge_default('{"sc1": 5, "sc2": 4, "sc3": 4, "sc4": 4}') is None  # missing sc5
    assert parse_judge_default(json.dumps({k: 6 for k in SC_KEYS})) is None  # out of range
    assert parse_judge_default(json.dumps({k: 4.5 for k in SC_KEYS})) is None
    assert parse_judge_default("Overall 3") is None
    assert judge_valid(JUDGE_JSON)
    assert not judge_valid("Overall 3")


def test_judge_prompt_key_only_in_faithful(ethicmh_path: Path) -> None:
    row = load_ethicmh(ethicmh_path, "default")[0]
    pf = judge_prompt(row, "REPLY-TEXT", "faithful")
    pd = judge_prompt(row, "REPLY-TEXT", "default")
    for p in (pf, pd):
        assert "REPLY-TEXT" in p
        assert row["model_behavior"] in p
        assert row["scenario"] in p
        assert all(k in p for k in SC_KEYS)
    assert "Expert reference" in pf
    assert "Expert reference" not in pd
    assert re.search(r"Expert reference.*\n" + row["expected_reasoning"] + r"\n", pf)


# ------------------------------------------------------------------------------------------ metrics

def test_ci_margin_formula() -> None:
    vals = [3, 4, 5, 4, 4, 2]
    sd = math.sqrt(sum((v - np.mean(vals)) ** 2 for v in vals) / (len(vals) - 1))
    assert ci_margin(vals) == pytest.approx(1.96 * sd / math.sqrt(len(vals)), abs=1e-12)
    assert ci_margin([4]) is None


def test_macro_f1_by_hand() -> None:
    gold = ["A", "A", "B", "C"]
    pred = ["A", "B", "B", None]
    # A: tp1 fp0 fn1 → 2/3; B: tp1 fp1 fn0 → 2/3; C: tp0 fn1 → 0
    assert macro_f1(gold, pred) == pytest.approx((2 / 3 + 2 / 3 + 0) / 3)
    # A prediction of D (never gold) adds a zero-F1 class
    assert macro_f1(["A", "B"], ["A", "D"]) == pytest.approx((1.0 + 0.0 + 0.0) / 3)


# -------------------------------------------------------------------------------------- offline runs

def _gold_reply(item: Item, prompt: str) -> str:
    return "```json\n" + json.dumps({"choice": item.target, "reasoning": "Demo reasoning."}) + "\n```"


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_all_gold_no_judge(mode: str) -> None:
    ctx = RunContext(mode=mode, suite="starter", n_boot=N_BOOT)  # type: ignore[arg-type]
    records, result = run_offline(EthicalReasoning(), ctx, respond=_gold_reply)
    assert result.value == 1.0
    assert result.n == len(records) == len(load_starter("ethics/ethical_reasoning"))
    assert result.n_invalid == 0
    assert result.direction == "higher"
    for k in [*SC_KEYS, "reasoning_score"]:
        assert result.metrics[k] is None
    assert any("no judge configured" in n for n in result.notes)
    assert result.judge is None
    if mode == "faithful":
        assert result.metrics["precision"] == result.metrics["recall"] == result.metrics["f1"] == 1.0
        assert "macro_f1" not in result.metrics
    else:
        assert result.metrics["macro_f1"] == 1.0
        assert result.metrics["judge_correctness_gap"] is None


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_garbage_all_invalid(mode: str) -> None:
    ctx = RunContext(mode=mode, suite="starter", n_boot=N_BOOT)  # type: ignore[arg-type]
    # No A-D word anywhere, so even the faithful fallback finds nothing.
    records, result = run_offline(EthicalReasoning(), ctx, respond=lambda it, p: "I prefer not to say.")
    assert (result.status, result.value) == ("ok", 0.0)  # every reply unusable: every answer wrong, the worst case (docs/results.md#invalid)
    assert result.n_invalid == result.n
    assert result.metrics["invalid_rate"] == 1.0
    assert all(r.metadata["reasked"] for r in records)


def test_default_distribution_metrics_on_real_data(ethicmh_path: Path) -> None:
    ctx = RunContext(mode="default", n_boot=N_BOOT)
    rows = load_ethicmh(ethicmh_path, "default")
    _, result = run_offline(EthicalReasoning(), ctx, respond=lambda it, p: '{"choice": "D", "reasoning": "x"}')
    assert result.n == len(rows)
    assert result.value == sum(r["expected_reasoning"] == "D" for r in rows) / len(rows)
    assert result.metrics["d_rate"] == 1.0 == result.metrics["choice_dist_D"]
    _, result = run_offline(EthicalReasoning(), ctx, respond=lambda it, p: '{"choice": "A", "reasoning": "x"}')
    share_a = sum(r["expected_reasoning"] == "A" for r in rows) / len(rows)
    assert result.value == pytest.approx(share_a)
    assert result.metrics["choice_dist_A"] == 1.0
    assert result.metrics["d_rate"] == 0.0
    by_sub = result.metrics["accuracy_by_subcategory"]
    assert set(by_sub) == SUBCATEGORIES
    for sub, acc in by_sub.items():
        sub_rows = [r for r in rows if r["subcategory"] == sub]
        assert acc == pytest.approx(sum(r["expected_reasoning"] == "A" for r in sub_rows) / len(sub_rows))
    # Always-A: F1 of A is 2*share/(1+share), the other gold classes 0.
    assert result.metrics["macro_f1"] == pytest.approx(2 * share_a / (1 + share_a) / 3)


def _judge_for(scores: dict[str, int]) -> str:
    body = {}
    for k in SC_KEYS:
        body[k] = scores[k]
        body[f"{k}_reason"] = "demo"
    return "```json\n" + json.dumps(body) + "\n```"


def test_judge_canned_scores_faithful() -> None:
    ctx = RunContext(mode="faithful", suite="starter", n_boot=N_BOOT,
                     judge=JudgeInfo(model="demo-judge", validated=False))
    canned = {"sc1": 5, "sc2": 4, "sc3": 3, "sc4": 2, "sc5": 1}
    seen: list[JudgeRequest] = []

    def judge(req: JudgeRequest) -> str:
        seen.append(req)
        return _judge_for(canned)

    records, result = run_offline(EthicalReasoning(), ctx, respond=_gold_reply, judge=judge)
    for k, v in canned.items():
        assert result.metrics[k] == v
        assert result.metrics[f"{k}_ci_margin"] == 0.0
    assert result.metrics["reasoning_score"] == pytest.approx(3.0)
    assert result.judge == {"model": "demo-judge", "validated": False}
    assert JUDGE_NOT_VALIDATED in result.notes
    assert len(seen) == len(records)
    assert all("Expert reference" in r.prompt for r in seen)


def test_judge_faithful_overall_fallback_excluded() -> None:
    ctx = RunContext(mode="faithful", suite="starter", n_boot=N_BOOT,
                     judge=JudgeInfo(model="demo-judge", validated=False))
    items = EthicalReasoning().items(ctx)

    def judge(req: JudgeRequest) -> str:
        if items[0].metadata["scenario"] in req.prompt:
            return "I'd rate it 1 overall."
        return _judge_for({k: 4 for k in SC_KEYS})

    records, result = run_offline(EthicalReasoning(), ctx, respond=_gold_reply, judge=judge, items=items)
    assert records[0].score["overall"] == 1.0
    assert records[0].score["sc1"] is None
    assert result.metrics["sc1"] == 4.0  # the 1 is not in the sc means
    assert result.metrics["sc1_n"] == len(records) - 1
    assert result.metrics["judge_overall_only"] == 1


def test_judge_default_invalid_counted_and_gap() -> None:
    ctx = RunContext(mode="default", suite="starter", n_boot=N_BOOT,
                     judge=JudgeInfo(model="demo-judge", validated=True))
    items = EthicalReasoning().items(ctx)
    wrong_ids = {it.id for it in items[::3]}
    broken = items[1].metadata["scenario"]
    calls = Counter()

    def respond(item: Item, prompt: str) -> str:
        choice = item.target if item.id not in wrong_ids else next(c for c in "ABCD" if c != item.target)
        return json.dumps({"choice": choice, "reasoning": f"demo {item.id}"})

    def judge(req: JudgeRequest) -> str:
        assert "Expert reference" not in req.prompt
        if broken in req.prompt:
            calls["broken"] += 1
            return "not json at all"
        good = not any(f"demo {i}" in req.prompt for i in wrong_ids)
        return _judge_for({k: 5 if good else 2 for k in SC_KEYS})

    records, result = run_offline(EthicalReasoning(), ctx, respond=respond, judge=judge, items=items)
    assert calls["broken"] == 3  # three attempts
    assert result.metrics["judge_invalid"] == 1
    assert result.metrics["sc1"] == pytest.approx(
        np.mean([5 if r.item_id not in wrong_ids else 2 for r in records if r.score["judge_valid"]]))
    assert result.metrics["judge_correctness_gap"] == pytest.approx(3.0)
    assert result.metrics["sc1_ci"] is not None
    assert result.value == pytest.approx(1 - len(wrong_ids) / len(items))
    assert not any("unvalidated" in n for n in result.notes)


def test_limit_faithful_head_default_stratified(ethicmh_path: Path) -> None:
    er = EthicalReasoning()
    head = er.items(RunContext(mode="faithful", limit=10))
    assert [i.id for i in head] == [f"ethicmh-{i:03d}" for i in range(10)]
    strat = er.items(RunContext(mode="default", limit=10, seed=2))
    assert Counter(i.metadata["subcategory"] for i in strat) == {s: 2 for s in SUBCATEGORIES}
    assert all(not CJK.search(i.prompt) for i in er.items(RunContext(mode="default")))
    assert any(CJK.search(i.prompt) for i in er.items(RunContext(mode="faithful")))


def test_starter_is_demo() -> None:
    rows = load_starter("ethics/ethical_reasoning")
    assert 10 <= len(rows) <= 15
    assert all(r["scenario"].startswith("[DEMO]") for r in rows)
    assert set(rows[0]) >= {"index", "subcategory", "scenario", "options", "reasoning_task",
                            "expected_reasoning", "model_behavior"}
