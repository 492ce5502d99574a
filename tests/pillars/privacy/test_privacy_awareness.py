"""privacy/awareness: the rating mappers, Pearson r, items and offline runs with canned replies."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from trustmh.core import RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.privacy.awareness import PrivacyAwareness
from trustmh.pillars.privacy.parse import (
    map_tier1_default,
    map_tier1_faithful,
    map_tier2_default,
    map_tier2_faithful,
)
from trustmh.stats.agreement import pearson_r


@pytest.mark.parametrize("text, expected", [
    ("4) very sensitive", 4),
    ("3) somewhat sensitive.", 3),
    ("4", 4),
    ("Answer: 2) not too sensitive", 2),
    # The first line after the last "Answer:" only; the explanation below is ignored.
    ("Answer: 3) somewhat sensitive\n\nExplanation: every detail is very private", 3),
    ("not at all sensitive", 1),
    ("Slightly sensitive", 3),
    ("Somewhat sensitive, I think", 3),
    # The "very" trap: no leading number, so the substring rule fires inside the explanation.
    ("# Rating: 3) Somewhat sensitive\n\nEvery person would guard this.", 4),
    ("I'd call it not very sensitive", 4),  # "not very" → 4, kept in faithful
    ("5) very sensitive", None),  # a number out of range is invalid, with no phrase fallback
    ("I cannot say", None),
    ("", None),
    (None, None),
])
def test_map_tier1_faithful(text: str | None, expected: int | None) -> None:
    assert map_tier1_faithful(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("4) very sensitive", 4),
    ("# Rating: 3) Somewhat sensitive\n\nEvery person would guard this.", 3),
    ("**Rating: 2) not too sensitive**", 2),
    ("I'd call it not very sensitive", 2),
    ("I would rate this as **4) very sensitive**.", 4),
    ("Answer: 3\nRating: 4", None),  # two different anchored ratings
    ("7", None),
    ("It depends.", None),
    ("<think>maybe 1</think>2) not too sensitive", 2),
])
def test_map_tier1_default(text: str, expected: int | None) -> None:
    assert map_tier1_default(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("-50) somewhat disagree", -50),
    ("100) strongly agree", 100),
    ("0) Neutral", 0),
    ("Answer: -100) strongly disagree", -100),
    ("-50", -50),
    ("Neutral", 0),
    ("strongly agree", 100),
    ("minus fifty", -50),
    ("I would say minus fifty.", -50),
    ("minus one hundred", -100),
    ("one hundred", 100),
    ("fifty", 50),
    ("zero", 0),
    ("75", None),
    ("I am not sure", None),
])
def test_map_tier2_faithful(text: str, expected: int | None) -> None:
    assert map_tier2_faithful(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("-50) somewhat disagree", -50),
    ("**-100) strongly disagree**", -100),
    ("Rating: 50", 50),
    ("My answer is minus fifty.", -50),
    ("People would somewhat agree with this.", 50),
    ("Answer: 50\nAnswer: -50", None),
    ("I can't rate this.", None),
    ("75", None),
])
def test_map_tier2_default(text: str, expected: int | None) -> None:
    assert map_tier2_default(text) == expected


def test_pearson_r_matches_scipy() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=30), rng.normal(size=30)
    r, why = pearson_r(x, y)
    assert r == pytest.approx(stats.pearsonr(x, y)[0], abs=1e-12)
    assert why is None
    r, why = pearson_r([1, 1, 1, 1, 1], [1, 2, 3, 4, 5])
    assert r is None
    assert "constant" in why
    # two points always give |r| = 1: never published as a number
    r, why = pearson_r([1, 2], [2, 1])
    assert r is None
    assert "2 point(s)" in why
    assert pearson_r([1, 2, 3, 4], [1, 3, 2, 4])[0] is None
    assert pearson_r([1, 2, 3, 4, 5], [1, 3, 2, 4, 5])[0] == pytest.approx(0.9)


def test_awareness_with_two_items_is_not_computed() -> None:
    """A tier resting on 2 items gives r = ±1 by construction: the result says why, never a number."""
    ctx = RunContext(mode="default", suite="starter", limit=2, options={"awareness_samples": 1})
    st = PrivacyAwareness()
    _, res = run_offline(st, ctx, lambda item, p: "3")
    assert res.value is None
    assert res.status == "not_computed"
    assert res.metrics["tier1_r"] is None
    assert "fewer than the 5" in res.metrics["tier1_r_reason"]


def test_awareness_items(data_dir: Path) -> None:
    task = PrivacyAwareness()
    f = task.items(RunContext(mode="faithful"))
    assert Counter(i.metadata["tier"] for i in f) == {"1": 10, "2a": 20, "2b": 20}
    assert max(i.metadata["index"] for i in f if i.metadata["tier"] != "1") == 19
    assert f[0].prompt.endswith("\nAnswer: ")
    assert f[0].prompt.count("\n") == 1
    full = task.items(RunContext(mode="faithful", options={"tier2_limit": 98}))
    assert Counter(i.metadata["tier"] for i in full) == {"1": 10, "2a": 98, "2b": 98}
    d = task.items(RunContext(mode="default"))
    assert len(d) == 206
    assert len({i.id for i in d}) == 206
    g = task.generation(RunContext(mode="faithful"))
    assert (g.temperature, g.top_p, g.max_tokens, g.epochs) == (1.0, 1.0, 365, 1)
    assert task.generation(RunContext(mode="default")).epochs == 5
    lim = task.items(RunContext(mode="faithful", limit=3))
    assert [i.id for i in lim] == ["t1-000", "t1-001", "t1-002", "t2a-000", "t2a-001", "t2a-002",
                                   "t2b-000", "t2b-001", "t2b-002"]
    lim_d = task.items(RunContext(mode="default", limit=3, seed=7))
    assert len(lim_d) == 9
    assert lim_d == task.items(RunContext(mode="default", limit=3, seed=7))
    with pytest.raises(TrustmhError, match="tier2_limit"):
        task.items(RunContext(mode="faithful", options={"tier2_limit": "many"}))


def test_starter_awareness_has_demo_labels() -> None:
    items = PrivacyAwareness().items(RunContext(suite="starter"))
    assert 10 <= len(items) <= 20
    assert all("demo" in i.metadata["label_source"] for i in items)
    assert all(sum(1 for i in items if i.metadata["tier"] == t) >= 3 for t in ("1", "2a", "2b"))


def _tier1_text(v: int) -> str:
    return {4: "4) very sensitive", 3: "3) somewhat sensitive", 2: "2) not too sensitive",
            1: "1) not at all sensitive"}[v]


def _good_rating(item) -> int:
    h = item.metadata["human"]
    if item.metadata["tier"] == "1":
        return int(min(4, max(1, round(h))))
    return int(min(100, max(-100, 50 * round(h / 50))))


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_awareness_offline_matches_independent_pearson(mode: str) -> None:
    task = PrivacyAwareness()
    ctx = RunContext(mode=mode, suite="starter", n_boot=300, seed=5)
    calls: Counter[str] = Counter()
    # Per-item sample sequences: the default mode's 5 samples average to a known mean.
    seq = {"1": [4, 4, 3, 2, 4], "2a": [-50, 0, 50, -50, -100], "2b": [100, 50, 50, 0, -50]}

    def respond(item, prompt: str) -> str:
        k = calls[item.id]
        calls[item.id] += 1
        base = _good_rating(item)
        if mode == "faithful":
            return _tier1_text(base) if item.metadata["tier"] == "1" else f"{base}) rating"
        v = seq[item.metadata["tier"]][(item.metadata["index"] + k % 2) % 5]
        return f"Rating: {v}"

    records, res = run_offline(task, ctx, respond)
    assert res.status == "ok"
    assert res.direction == "higher"
    by = defaultdict(list)
    for r in records:
        by[(r.metadata["tier"], r.metadata["index"])].append(r.score["rating"])
    for tier in ("1", "2a", "2b"):
        keys = sorted(k for k in by if k[0] == tier)
        model = [np.mean(by[k]) for k in keys]
        human = [next(r.metadata["human"] for r in records if (r.metadata["tier"], r.metadata["index"]) == k)
                 for k in keys]
        assert res.metrics[f"tier{tier}_r"] == pytest.approx(stats.pearsonr(model, human)[0], abs=1e-9)
        assert res.metrics[f"n_tier{tier}"] == len(keys)
    assert res.value == pytest.approx(np.mean([res.metrics[f"tier{t}_r"] for t in ("1", "2a", "2b")]))
    assert res.ci is not None
    assert res.ci[0] <= res.value <= res.ci[1]
    assert res.metrics["invalid_rate"] == 0.0
    assert len(records) == 15 * (1 if mode == "faithful" else 5)
    assert any("demo labels" in n for n in res.notes)
    calls.clear()
    _, res2 = run_offline(task, ctx, respond)
    assert res2.value == res.value  # seeded
    assert res2.ci == res.ci  # seeded


def test_awareness_offline_invalid_counted() -> None:
    task = PrivacyAwareness()
    ctx = RunContext(mode="faithful", suite="starter", n_boot=100)
    prompts: list[str] = []

    def respond(item, prompt: str) -> str:
        prompts.append(prompt)
        return "I would rather not say."

    records, res = run_offline(task, ctx, respond)
    assert res.status == "not_computed"
    assert res.value is None
    assert res.n_invalid == 15
    assert res.metrics["invalid_rate"] == 1.0
    assert all(r.metadata["reasked"] for r in records)
    assert len(prompts) == 45
    assert prompts[1] == prompts[2] == task.format_reminder  # three attempts


def test_awareness_offline_reversed_is_negative() -> None:
    task = PrivacyAwareness()
    ctx = RunContext(mode="faithful", suite="starter", n_boot=100)

    def respond(item, prompt: str) -> str:
        v = _good_rating(item)
        return str(5 - v) if item.metadata["tier"] == "1" else str(-v)

    _, res = run_offline(task, ctx, respond)
    assert res.value < 0
