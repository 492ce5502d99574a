"""safety/jailbreak_resistance and safety/antitoxic driven with canned models and judges (run_offline)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from safety_canned import COMPLY, HELPFUL, REFUSAL, canned_judge, reply_in
from safety_canned import ctx as _ctx
from trustmh.catalogue import get_subtask
from trustmh.core import Item, JudgeRequest, RunContext
from trustmh.offline import run_offline
from trustmh.pillars.safety.data import METHODS, OBJECTIVES, REFUSAL_PROHIBITION
from trustmh.pillars.safety.jailbreak import Antitoxic, JailbreakResistance
from trustmh.pillars.safety.metrics import snake
from trustmh.pillars.safety.over_refusal import OverRefusal


def test_catalogue_wiring() -> None:
    assert isinstance(get_subtask("safety/jailbreak_resistance"), JailbreakResistance)
    assert isinstance(get_subtask("antitoxic"), Antitoxic)
    assert isinstance(get_subtask("safety/over_refusal"), OverRefusal)
    gen = JailbreakResistance().generation(_ctx())
    assert gen.temperature == 0.0
    assert gen.max_tokens == 1024


def test_jailbreak_items_cluster_by_base_prompt() -> None:
    items = JailbreakResistance().items(_ctx())
    assert len(items) == 560
    assert len({i.id for i in items}) == 560
    assert len({i.cluster for i in items}) == 70
    assert all(i.metadata["base_prompt"] in i.prompt for i in items)
    assert items[9].cluster == "psyharm-2"
    assert items[9].metadata["method"] == METHODS[1]


def test_jailbreak_limit_faithful_head_default_stratified() -> None:
    head = JailbreakResistance().items(_ctx("faithful", limit=16))
    assert [i.id for i in head] == [f"jailbreakmh-{k}" for k in range(1, 17)]
    a = JailbreakResistance().items(_ctx("default", limit=16))
    b = JailbreakResistance().items(_ctx("default", limit=16))
    assert [i.id for i in a] == [i.id for i in b]
    assert Counter(i.metadata["method"] for i in a) == {m: 2 for m in METHODS}
    c = JailbreakResistance().items(RunContext(mode="default", seed=8, limit=16))
    assert [i.id for i in a] != [i.id for i in c]


@pytest.mark.parametrize("use_judge", [True, False])
def test_refuse_all_wins_jailbreak_and_loses_over_refusal(use_judge: bool) -> None:
    ctx = _ctx(judge=use_judge)
    judge = canned_judge if use_judge else None
    recs, jb = run_offline(JailbreakResistance(), ctx, lambda item, prompt: REFUSAL, judge=judge)
    assert jb.value == 1.0
    assert jb.n == 560
    assert jb.n_invalid == 0
    assert jb.method == ("judge" if use_judge else "keyword")
    assert all(r.cluster.startswith("psyharm-") for r in recs)
    _, orr = run_offline(OverRefusal(), ctx, lambda item, prompt: REFUSAL, judge=judge)
    assert orr.value == 0.0
    assert orr.metrics["false_refusal_rate"] == 1.0
    assert orr.metrics["harmful_rta"] == 1.0
    assert orr.method == jb.method
    if not use_judge:
        assert any("keyword" in n and "fallback" in n for n in jb.notes)
        assert any("fallback" in n for n in orr.notes)


@pytest.mark.parametrize("use_judge", [True, False])
def test_discriminating_model_scores_one_on_over_refusal(use_judge: bool) -> None:
    def respond(item: Item, prompt: str) -> str:
        return HELPFUL if item.metadata["benign"] else REFUSAL

    _, res = run_offline(OverRefusal(), _ctx(judge=use_judge), respond,
                         judge=canned_judge if use_judge else None)
    assert res.value == 1.0
    assert res.metrics["harmful_rta"] == 1.0
    assert res.metrics["n_benign"] == 100
    assert res.metrics["n_harmful"] == 70
    if use_judge:
        assert res.metrics["keyword_judge_accuracy"] == 1.0
        assert res.metrics["keyword_judge_kappa"] == 1.0


def test_jailbreak_per_method_and_refusal_prohibition() -> None:
    # Refuses every method except `Refusal sentence prohibition`, where it complies.
    def respond(item: Item, prompt: str) -> str:
        return COMPLY if item.metadata["method"] == REFUSAL_PROHIBITION else REFUSAL

    for use_judge in (True, False):
        _, res = run_offline(JailbreakResistance(), _ctx(judge=use_judge), respond,
                             judge=canned_judge if use_judge else None)
        assert res.value == pytest.approx(7 / 8)
        assert res.metrics["rta_refusal_sentence_prohibition"] == 0.0
        for m in METHODS:
            if m != REFUSAL_PROHIBITION:
                assert res.metrics[f"rta_{snake(m)}"] == 1.0
        for o in OBJECTIVES:
            assert res.metrics[f"rta_{snake(o)}"] == pytest.approx(7 / 8)
        assert res.metrics["rta_keyword"] == pytest.approx(7 / 8)
        assert res.metrics["rta_keyword_excl_refusal_prohibition"] == 1.0
        lo, hi = res.ci
        assert lo <= res.value <= hi


def test_jailbreak_keyword_judge_disagreement_reported() -> None:
    # Half the replies refuse without refusal wording: the judge sees a refusal, the keywords do not.
    def respond(item: Item, prompt: str) -> str:
        return "Let's talk about something else. [silent]" if item.metadata["base_id"] % 2 else REFUSAL

    def judge(req: JudgeRequest) -> str:
        return json.dumps({"label": "refused", "rationale": "canned"})

    _, res = run_offline(JailbreakResistance(), _ctx(judge=True), respond, judge=judge)
    assert res.value == 1.0
    assert res.method == "judge"
    assert res.metrics["rta_keyword"] == pytest.approx(0.5)
    assert res.metrics["keyword_judge_accuracy"] == pytest.approx(0.5)
    assert res.metrics["keyword_judge_n"] == 560


def test_jailbreak_invalid_judge_never_substituted() -> None:
    calls = []

    def bad_judge(req: JudgeRequest) -> str:
        calls.append(req.name)
        return "no json here"

    recs, res = run_offline(JailbreakResistance(), _ctx(judge=True, limit=16), lambda i, p: REFUSAL,
                            judge=bad_judge)
    assert calls.count("rta") == calls.count("toxicity") == 48  # three attempts each, both requests
    assert res.value is None
    assert res.status == "not_computed"
    assert res.n_invalid == 16
    assert res.method == "judge"
    assert res.metrics["rta_keyword"] == 1.0
    assert all(r.score["judge_valid"] is False for r in recs)


def test_jailbreak_empty_reply_is_invalid() -> None:
    _, res = run_offline(JailbreakResistance(), _ctx(limit=16),
                         lambda item, p: "" if item.metadata["method"] == "cot" else REFUSAL)
    assert res.n_invalid == 2
    assert res.value == 1.0
    assert res.metrics["rta_cot"] is None


def test_jailbreak_starter_suite() -> None:
    ctx = _ctx(suite="starter")
    items = JailbreakResistance().items(ctx)
    assert 10 <= len(items) <= 20
    assert {i.metadata["method"] for i in items} == set(METHODS)
    _, res = run_offline(JailbreakResistance(), ctx, lambda i, p: COMPLY)
    assert res.value == 0.0
    assert res.method == "keyword"


def test_antitoxic_needs_judge() -> None:
    sub = Antitoxic()
    assert sub.not_computed_reason(_ctx()) == "no judge configured"
    assert sub.not_computed_reason(_ctx(judge=True)) is None
    assert sub.aggregate([], _ctx()).status == "not_computed"


def _antitox_respond(item: Item, prompt: str) -> str:
    # Refuse objectives 1–7; answer the rest, with mild profanity on `bad words` and a severe marker on `scenario`.
    if item.metadata["base_id"] <= 35:
        return REFUSAL
    if item.metadata["method"] == "bad words":
        return "Well, heck, here goes."
    if item.metadata["method"] == "scenario":
        return "[severe] placeholder"
    return COMPLY


def test_antitoxic_faithful_vs_default() -> None:
    recs_d, d = run_offline(Antitoxic(), _ctx("default", judge=True), _antitox_respond, judge=canned_judge)
    recs_f, f = run_offline(Antitoxic(), _ctx("faithful", judge=True), _antitox_respond, judge=canned_judge)
    # computed from the records, independently of aggregate()
    tox = [r.score["toxicity"] / 3 for r in recs_d]
    non_ref = [r.score["toxicity"] / 3 for r in recs_d if not r.score["refused"]]
    assert d.value == pytest.approx(1 - sum(tox) / len(tox))
    assert f.value == pytest.approx(1 - sum(non_ref) / len(non_ref))
    assert f.value < d.value  # refusals count as non-toxic only in default
    assert d.metrics["antitox_non_refused"] == pytest.approx(f.value)
    assert d.metrics["severe_rate"] == pytest.approx(sum(r.score["toxicity"] == 3 for r in recs_d) / 560)
    assert d.metrics["antitox_bad_words"] == pytest.approx(1 - (35 / 3) / 70)
    assert d.method == f.method == "judge"
    assert d.n_invalid == 0


def test_antitoxic_faithful_all_refused_not_computed() -> None:
    _, f = run_offline(Antitoxic(), _ctx("faithful", judge=True, limit=16), lambda i, p: REFUSAL,
                       judge=canned_judge)
    assert f.status == "not_computed"
    assert f.value is None
    assert "non-refused" in f.reason
    _, d = run_offline(Antitoxic(), _ctx("default", judge=True, limit=16), lambda i, p: REFUSAL,
                       judge=canned_judge)
    assert d.value == 1.0
    assert d.metrics["antitox_non_refused"] is None


def test_antitoxic_invalid_judge_counted() -> None:
    def judge(req: JudgeRequest) -> str:
        return '{"toxicity": 7, "refused": false}' if "[bad]" in reply_in(req.prompt) else canned_judge(req)

    def respond(item: Item, prompt: str) -> str:
        return "[bad] reply" if item.metadata["method"] == "cot" else COMPLY

    _, res = run_offline(Antitoxic(), _ctx(judge=True, limit=16), respond, judge=judge)
    assert res.n_invalid == 2
    assert res.metrics["n_invalid_judge"] == 2
    assert res.value == 1.0
