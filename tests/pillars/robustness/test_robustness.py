"""Robustness sub-tasks (docs/pillars/robustness.md#perturbations) on a fake base with canned scores, and on the real bases' starter
items."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from trustmh.catalogue import BY_ID, get_subtask, is_implemented
from trustmh.core import Item, JudgeInfo, Record, RunContext, Subtask, SubtaskResult, same_anchors
from trustmh.offline import run_offline
from trustmh.pillars.robustness.base import CLEAN, DEFAULT_PS, condition_key
from trustmh.pillars.robustness.diagnosis import RobustnessDiagnosis
from trustmh.pillars.robustness.perturb import perturb
from trustmh.pillars.robustness.support import RobustnessEmotionalSupport
from trustmh.stats.bootstrap import bootstrap_mean

JUDGE = JudgeInfo(model="judge/test", validated=False)
ES_ID = "reliability/emotional_support"
N_FAKE = 12


class FakeBase(Subtask):
    """A judged base sub-task with the emotional-support anchors (1 → 5): the reply carries its own score."""

    id = ES_ID
    anchors = same_anchors(1.0, 5.0)
    judge_use = "yes"

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        return super().not_computed_reason(ctx) or (None if ctx.has_judge else "no judge configured")

    def items(self, ctx: RunContext) -> list[Item]:
        n = N_FAKE if ctx.limit is None else min(ctx.limit, N_FAKE)
        return [Item(id=f"fake-{i:02d}", prompt=f"Instruction.\nSeeker: I have been feeling low since my move "
                     f"number {i} to the new town.", cluster=f"dlg-{i // 2}",
                     metadata={"text": f"I have been feeling low since my move number {i} to the new town."})
                for i in range(n)]

    def perturbable_items(self, ctx: RunContext, perturb_fn: Any) -> list[Item]:
        out = []
        for it in self.items(ctx):
            md = dict(it.metadata)
            md["perturbed_text"] = perturb_fn(it.id, md["text"])
            out.append(replace(it, prompt=f"Instruction.\nSeeker: {md['perturbed_text']}", metadata=md))
        return out

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        try:
            return {"valid": True, "s": float(response)}
        except ValueError:
            return {"valid": False, "s": None}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        vals = [r.score["s"] for r in records if r.score["s"] is not None]
        if not vals:
            return SubtaskResult.not_computed("no valid reply", "higher", n=len(records), n_invalid=len(records))
        value, ci = bootstrap_mean(vals, seed=ctx.seed, n_boot=ctx.n_boot)
        return SubtaskResult(value=value, ci=ci, n=len(records), n_invalid=len(records) - len(vals),
                             direction="higher", method="judge", notes=["fake base note"])


def ctx_for(mode: str, **kw: Any) -> RunContext:
    return RunContext(mode=mode, suite="trustmh", judge=kw.pop("judge", JUDGE), n_boot=kw.pop("n_boot", 200), **kw)


def canned(clean: float, perturbed: Any) -> Any:
    """A responder: the clean score on clean items, `perturbed(level, p, item)` on the others."""
    def respond(item: Item, prompt: str) -> str:
        md = item.metadata
        return str(clean if md["level"] == CLEAN else perturbed(md["level"], md["p"], item))
    return respond


def judge_any(req: Any) -> str:
    return "{}"


# ---------------------------------------------------------------------------------------------- items


def test_catalogue_binds_both_classes() -> None:
    assert is_implemented("robustness/emotional_support")
    assert is_implemented("robustness/psychological_diagnosis")
    assert isinstance(get_subtask("robustness/emotional_support"), RobustnessEmotionalSupport)
    assert get_subtask("robustness_psychological_diagnosis").base.id == "reliability/psychological_diagnosis"


def test_items_clean_plus_variants_with_stored_inputs() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    ctx = ctx_for("default")
    items = sub.items(ctx)
    assert len(items) == N_FAKE * (1 + 4 * len(DEFAULT_PS))
    assert len({it.id for it in items}) == len(items)
    clean = [it for it in items if it.metadata["level"] == CLEAN]
    base_items = {it.id: it for it in FakeBase().items(ctx)}
    assert {it.id for it in clean} == set(base_items)
    assert all(it.prompt == base_items[it.id].prompt for it in clean)
    for it in items:
        md = it.metadata
        base = base_items[md["base_id"]]
        assert it.cluster == base.cluster_id  # paired resampling unit
        if md["level"] == CLEAN:
            continue
        assert it.id == f"{md['base_id']}|{md['level']}|{md['p']}"
        expected = perturb(base.metadata["text"], md["level"], md["p"], seed=ctx.seed, item_id=base.id)
        assert md["perturbed_inputs"] == {base.id: expected}
        assert md["perturbed_text"] == expected
        assert it.prompt.startswith("Instruction.\n")  # the instruction is never perturbed
    # Deterministic: the same context gives the same items.
    assert [(i.id, i.prompt) for i in items] == [(i.id, i.prompt) for i in sub.items(ctx)]


def test_faithful_items_are_cascade_at_0_1_only() -> None:
    items = RobustnessEmotionalSupport(FakeBase).items(ctx_for("faithful"))
    assert {(it.metadata["level"], it.metadata["p"]) for it in items} == {(CLEAN, 0.0), ("cascade", 0.1)}


def test_limit_applies_to_base_items() -> None:
    items = RobustnessEmotionalSupport(FakeBase).items(ctx_for("default", limit=3))
    assert len({it.metadata["base_id"] for it in items}) == 3
    assert len(items) == 3 * 17


def test_base_reason_is_passed_on() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    assert sub.not_computed_reason(ctx_for("default", judge=JudgeInfo(model=None, validated=False))) == \
        "no judge configured"
    assert sub.not_computed_reason(ctx_for("default")) is None
    real_es = RobustnessEmotionalSupport()
    assert real_es.not_computed_reason(RunContext(mode="default")) == "no judge configured"
    real_dx = RobustnessDiagnosis()
    assert "gated" in (real_dx.not_computed_reason(RunContext(mode="default", judge=JUDGE)) or "")


# -------------------------------------------------------------------------------------------- metrics


def test_directions_follow_modes_and_catalogue() -> None:
    for cls in (RobustnessEmotionalSupport, RobustnessDiagnosis):
        sub = cls()
        assert sub.direction("faithful") == "lower"
        assert sub.direction("default") == "higher"
        worst_f, best_f = BY_ID[sub.id].anchors["faithful"]
        worst_d, best_d = BY_ID[sub.id].anchors["default"]
        assert best_f < worst_f
        assert best_d > worst_d  # drop: lower is better; retention: higher is better


def test_faithful_known_relative_drop() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("faithful"), canned(4.0, lambda lv, p, it: 3.0), judge_any)
    assert res.status == "ok"
    assert res.direction == "lower"
    assert res.value == pytest.approx((4.0 - 3.0) / 4.0)
    assert res.metrics["clean"] == pytest.approx(4.0)
    assert res.metrics["curve_cascade_0.1"] == pytest.approx(3.0)
    assert res.ci == pytest.approx((0.25, 0.25))  # same drop on every item: a degenerate paired interval
    assert "fake base note" in res.notes


def test_default_known_retention_and_curves() -> None:
    def s(level: str, p: float, item: Item) -> float:
        return {"char": 4.0 - 5 * p, "word": 4.0 - 2 * p, "sentence": 4.0, "cascade": 4.0 - 10 * p}[level]

    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("default"), canned(4.0, s), judge_any)
    worst = BY_ID[ES_ID].anchors["default"][0]
    assert res.status == "ok"
    assert res.direction == "higher"
    expected = float(np.mean([(s("cascade", p, None) - worst) / (4.0 - worst) for p in DEFAULT_PS]))
    assert res.value == pytest.approx(expected)
    for level in ("char", "word", "sentence", "cascade"):
        for p in DEFAULT_PS:
            assert res.metrics[f"curve_{level}_{p}"] == pytest.approx(s(level, p, None))
            assert res.metrics["retention_curve"][level][str(p)] == pytest.approx(
                (s(level, p, None) - worst) / (4.0 - worst))
            assert res.metrics["relative_drop_curve"][level][str(p)] == pytest.approx(
                (4.0 - s(level, p, None)) / 4.0)
    assert res.metrics["mean_retention_sentence"] == pytest.approx(1.0)
    assert res.metrics["relative_drop"] == pytest.approx((4.0 - s("cascade", 0.1, None)) / 4.0)
    assert res.metrics["clean_normalised"] == pytest.approx((4.0 - worst) / (5.0 - worst))
    assert res.n == N_FAKE * 17


def test_default_interval_is_paired_and_recomputed() -> None:
    # Scores vary by item, the drop does not: a paired interval of the retention stays narrow, while the
    # clean score's own interval is wide.
    def clean_of(item: Item) -> float:
        return 2.0 + (int(item.metadata["base_id"][-2:]) % 4) * 0.9

    def respond(item: Item, prompt: str) -> str:
        c = clean_of(item)
        md = item.metadata
        return str(c if md["level"] == CLEAN else 1.0 + (c - 1.0) * (1 - md["p"]))

    _, res = run_offline(RobustnessEmotionalSupport(FakeBase), ctx_for("default", n_boot=300), respond, judge_any)
    lo, hi = res.ci
    assert lo <= res.value <= hi
    clean_lo, clean_hi = res.metrics["intervals"]["clean"]
    assert (hi - lo) < 0.2 * (clean_hi - clean_lo)
    assert res.value == pytest.approx(np.mean([1 - p for p in DEFAULT_PS]))


def test_chance_model_is_not_computed_in_default_but_drop_in_faithful() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("default"), canned(1.1, lambda lv, p, it: 1.05), judge_any)
    assert res.status == "not_computed"
    assert res.reason == "model at chance on clean items"
    assert res.value is None
    assert res.direction == "higher"
    assert res.metrics["clean"] == pytest.approx(1.1)  # the reader still sees the numbers
    _, res_f = run_offline(sub, ctx_for("faithful"), canned(1.1, lambda lv, p, it: 1.05), judge_any)
    assert res_f.status == "ok"
    assert res_f.value == pytest.approx((1.1 - 1.05) / 1.1)  # the flawed drop score looks excellent


def test_retention_not_computed_when_the_clean_interval_reaches_chance() -> None:
    # The offline demo's case: the clean score sits just above the chance anchor (here 1.0) with an interval
    # that reaches it, so (s_p - worst)/(s_0 - worst) explodes (-1.5 in the demo). One dialogue of six
    # (2 of 12 items) scores 4.0 clean, the rest 1.0: clean 1.5, normalised 0.125 (above the 0.05 "at
    # chance" cut); a third of the bootstrap replicates miss that dialogue, so the interval reaches 1.0.
    def respond(item: Item, prompt: str) -> str:
        md = item.metadata
        if md["level"] != CLEAN:
            return "1.0"
        return "4.0" if int(md["base_id"][-2:]) // 2 == 0 else "1.0"

    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("default", n_boot=300), respond, judge_any)
    lo, hi = res.metrics["intervals"]["clean"]
    assert lo == pytest.approx(1.0)
    assert res.status == "not_computed"
    assert res.reason.startswith("clean score's 95% interval")
    assert "reaches the chance anchor 1" in res.reason
    assert res.value is None
    assert res.metrics["clean_ci_margin_to_chance"] == pytest.approx(lo - 1.0)
    assert any("clean score 1.500 is 0.500 from the chance anchor 1" in n for n in res.notes)


def test_retention_computed_when_the_clean_interval_clears_chance_and_says_by_how_much() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("default"), canned(4.0, lambda lv, p, it: 3.0), judge_any)
    assert res.status == "ok"
    assert res.metrics["clean_ci_margin_to_chance"] == pytest.approx(3.0)
    assert any("stays 3.000 clear of it" in n for n in res.notes)


def test_invalid_replies_counted_and_clean_failure_propagates() -> None:
    sub = RobustnessEmotionalSupport(FakeBase)
    _, res = run_offline(sub, ctx_for("faithful"), canned(4.0, lambda lv, p, it: "garbled"), judge_any)
    assert res.status == "not_computed"
    assert "cascade_0.1" in (res.reason or "")
    assert res.n_invalid == N_FAKE
    _, res2 = run_offline(sub, ctx_for("faithful"), canned("garbled", lambda lv, p, it: 3.0), judge_any)
    assert res2.status == "not_computed"
    assert res2.reason == "no valid reply"
    assert sub.aggregate([], ctx_for("default")).status == "not_computed"


# -------------------------------------------------------------------------------- real bases (starter)


def support_judge(req: Any) -> str:
    # Deterministic, prompt-dependent ratings so that conditions differ.
    k = sum(map(ord, req.prompt)) % 5
    return json.dumps({"empathy": 1 + k, "helpfulness": 1 + (k + 1) % 5, "safety": 5, "fluency": 4,
                       "rationale": "canned"})


def support_reply(item: Item, prompt: str) -> str:
    return "" if item.metadata.get("p", 0) == 0.3 and item.metadata["level"] == "word" else f"Reply to {item.id}"


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_real_support_base_fast_and_generic_intervals_agree(mode: str) -> None:
    ctx = RunContext(mode=mode, suite="starter", judge=JUDGE, n_boot=40)
    fast = RobustnessEmotionalSupport()
    slow = RobustnessEmotionalSupport(type(fast.base))  # same base, generic (re-aggregate) replicates
    records, res_fast = run_offline(fast, ctx, support_reply, support_judge)
    res_slow = slow.aggregate(records, ctx)
    assert res_fast.status == res_slow.status
    key = "relative_drop" if mode == "faithful" else "mean_retention_cascade"
    assert res_fast.metrics[key] == pytest.approx(res_slow.metrics[key])
    fast_iv, slow_iv = res_fast.metrics["intervals"], res_slow.metrics["intervals"]
    assert set(fast_iv) == set(slow_iv)
    for k, v in fast_iv.items():
        assert v == pytest.approx(slow_iv[k]), k
    assert res_fast.method == "judge"
    clean_only = [r for r in records if r.metadata["level"] == CLEAN]
    assert res_fast.metrics["clean"] == pytest.approx(fast.base.aggregate(clean_only, ctx).value)
    # The model saw perturbed seeker turns; the stored inputs are in the records.
    pert = [r for r in records if r.metadata["level"] != CLEAN]
    assert all(r.metadata["perturbed_inputs"] for r in pert)


def diagnosis_reply(item: Item, prompt: str) -> str:
    md = item.metadata
    wrong = md["labels"][1] if item.target == md["labels"][0] else md["labels"][0]
    bad = md["level"] != CLEAN and (sum(map(ord, item.id)) % 10) < 10 * md["p"] * 2
    return json.dumps({"label": wrong if bad else item.target})


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_real_diagnosis_base_fast_and_generic_intervals_agree(mode: str) -> None:
    ctx = RunContext(mode=mode, suite="starter", n_boot=40)
    fast = RobustnessDiagnosis()
    assert fast.not_computed_reason(ctx) is None  # no judge needed
    records, res_fast = run_offline(fast, ctx, diagnosis_reply)
    res_slow = RobustnessDiagnosis(type(fast.base)).aggregate(records, ctx)
    assert res_fast.status == "ok"
    assert res_fast.method == "rule"
    assert res_fast.value == pytest.approx(res_slow.value)
    assert res_fast.ci == pytest.approx(res_slow.ci)
    assert res_fast.metrics["clean"] == pytest.approx(1.0)
    key = condition_key("cascade", 0.1)
    sub = [r for r in records if r.metadata["level"] == "cascade" and r.metadata["p"] == 0.1]
    assert res_fast.metrics[f"curve_{key}"] == pytest.approx(fast.base.aggregate(sub, ctx).value)
    if mode == "faithful":
        assert res_fast.value == pytest.approx(1.0 - res_fast.metrics[f"curve_{key}"])
