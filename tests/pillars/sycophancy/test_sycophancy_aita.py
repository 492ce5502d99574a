"""sycophancy/aita_yta: offline runs with canned judges and the binary verdict mode."""

from __future__ import annotations

from pathlib import Path

import pytest

from sycophancy_canned import NO_JUDGE, aita_judge, ctx_for, raw_rows, reply
from trustmh.core import Item, JudgeRequest
from trustmh.offline import run_offline
from trustmh.pillars.sycophancy.aita import AitaYta


def test_aita_items_yta_only_in_faithful_balanced_in_default(elephant: Path) -> None:
    raw = raw_rows(elephant / "AITA_sample.csv")
    n_yta = sum(x["ytanta"] == "YTA" for x in raw)
    sub = AitaYta()
    faithful = sub.items(ctx_for(mode="faithful"))
    assert len(faithful) == n_yta
    assert {i.target for i in faithful} == {"YTA"}
    default = sub.items(ctx_for())
    assert sum(i.target == "YTA" for i in default) == sum(i.target == "NTA" for i in default) == n_yta
    by_id = {f"aita-{x['']}": x["prompt"].strip() for x in raw}
    assert all(it.prompt == by_id[it.id] for it in default)  # the post as written, no framing
    assert len(sub.items(ctx_for(limit=4))) == 4


def test_aita_always_sides_with_asker() -> None:
    sub = AitaYta()
    _, res = run_offline(sub, ctx_for(mode="faithful"), reply, aita_judge(0))
    assert res.value == 1.0
    assert res.metrics["false_nta_rate"] == 1.0
    assert res.method == "judge"
    _, res_d = run_offline(sub, ctx_for(), reply, aita_judge(0))
    assert res_d.metrics["false_nta_rate"] == 1.0
    assert res_d.metrics["false_yta_rate"] == 0.0
    assert res_d.value == pytest.approx(0.5)
    # Blaming everyone wins faithful mode but not default mode.
    _, blame_f = run_offline(sub, ctx_for(mode="faithful"), reply, aita_judge(1))
    _, blame_d = run_offline(sub, ctx_for(), reply, aita_judge(1))
    assert blame_f.value == 0.0
    assert blame_d.value == pytest.approx(0.5)


def test_aita_perfect_judge_and_invalid_counts_as_error() -> None:
    sub = AitaYta()
    items = {it.id: it for it in sub.items(ctx_for())}

    def truthful(req: JudgeRequest) -> int:
        return int(next(it.target for it in items.values() if it.prompt in req.prompt) == "YTA")

    _, res = run_offline(sub, ctx_for(), reply, aita_judge(truthful))
    assert res.value == 0.0
    assert res.n_invalid == 0
    _, bad = run_offline(sub, ctx_for(), reply, lambda req: "no json here")
    assert bad.n_invalid == bad.n == len(items)
    assert (bad.status, bad.value) == ("not_computed", None)  # every judge output invalid: never a pass
    assert bad.metrics["false_nta_rate_valid_only"] is None


def test_aita_binary_mode_without_judge() -> None:
    sub = AitaYta()
    ctx = ctx_for(judge=NO_JUDGE, options={"allow_sample": "1"})
    assert sub.not_computed_reason(ctx) is None
    items = sub.items(ctx)
    assert all("YTA" in it.prompt and it.metadata["post"] in it.prompt for it in items)

    def right(item: Item, prompt: str) -> str:
        return f"{item.target}. Here is why."

    _, res = run_offline(sub, ctx, right)
    assert res.method == "rule"
    assert res.value == 0.0
    assert res.judge is None
    assert res.metrics["verdict_mode"] == "binary"

    calls: list[str] = []

    def evasive(item: Item, prompt: str) -> str:
        calls.append(prompt)
        return "Hard to say, there are two sides."

    records, res2 = run_offline(sub, ctx, evasive)
    assert all(r.metadata["reasked"] for r in records)
    assert sub.format_reminder in calls
    assert res2.n_invalid == len(records)
    assert (res2.status, res2.value) == ("sample", 1.0)  # every verdict unusable: each a false NTA, the worst case
    # Forcing judge mode without a judge is not computed.
    forced = ctx_for(judge=NO_JUDGE, options={"verdict_mode": "judge"})
    assert sub.not_computed_reason(forced) == "no judge configured"
