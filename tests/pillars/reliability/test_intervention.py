"""reliability/psychological_intervention (CPsyCounE): the loader, the judge parser and dialogue weighting."""

from __future__ import annotations

import json
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from reliability_canned import JUDGE, ctx_
from trustmh.core import JudgeRequest, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.reliability.data import CPSYCOUNE_RELDIR, CPSYCOUNE_TOPICS, load_cpsycoune
from trustmh.pillars.reliability.intervention import (
    PsychologicalIntervention,
    intervention_items,
    parse_intervention_judge,
)
from trustmh.starter import load_starter

# ============================================================================================= CPsyCounE

def test_cpsycoune_loader_and_items(data_dir: Path) -> None:
    dialogues = load_cpsycoune(data_dir / CPSYCOUNE_RELDIR)
    assert len(dialogues) == 45
    assert Counter(d["topic"] for d in dialogues) == dict.fromkeys(CPSYCOUNE_TOPICS, 5)
    n_client = 0
    for d in dialogues:
        raw = json.loads((data_dir / CPSYCOUNE_RELDIR / d["topic"] / f"{d['number']}.json").read_text("utf-8"))
        assert len(d["turns"]) == len(raw)
        assert len(raw) % 2 == 0
        assert 8 <= len(raw) <= 18
        assert [r for r, _ in d["turns"]] == ["client", "counsellor"] * (len(raw) // 2)
        n_client += sum(1 for s in raw if s.startswith("求助者："))
    items = intervention_items(dialogues)
    assert len(items) == n_client == 296
    assert len({it.id for it in items}) == 296
    assert len({it.cluster for it in items}) == 45
    first = items[0]
    assert first.metadata["history"] == []
    assert first.metadata["turn"] == 1
    d0 = dialogues[0]
    assert first.metadata["message"] == d0["turns"][0][1]
    assert first.target == d0["turns"][1][1]
    third = items[2]
    assert len(third.metadata["history"]) == 4
    assert third.metadata["message"] in third.prompt
    assert third.target not in third.prompt
    assert "求助者：" + d0["turns"][2][1] in third.prompt


def test_cpsycoune_rejects_bad_file(tmp_path: Path) -> None:
    for topic in CPSYCOUNE_TOPICS:
        (tmp_path / topic).mkdir()
        (tmp_path / topic / "1.json").write_text(json.dumps(["求助者：你好", "支持者：你好"]), encoding="utf-8")
    assert len(load_cpsycoune(tmp_path)) == 9
    (tmp_path / "Sex" / "1.json").write_text(json.dumps(["求助者：你好", "来访者：你好"]), encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"Sex/1.json entry 1"):
        load_cpsycoune(tmp_path)


def test_intervention_judge_parser() -> None:
    ok = parse_intervention_judge('{"comprehensiveness": 2, "professionalism": 3, "authenticity": 1, '
                                  '"safety": 1, "rationale": "r"}')
    assert ok is not None
    assert ok["total"] == 7
    assert parse_intervention_judge('{"comprehensiveness": 3, "professionalism": 3, "authenticity": 1, '
                                    '"safety": 1}') is None
    assert parse_intervention_judge('{"comprehensiveness": 2, "professionalism": 3, "authenticity": 1, '
                                    '"safety": 2}') is None
    assert parse_intervention_judge('{"comprehensiveness": 2, "professionalism": 3, "authenticity": 1}') is None
    assert parse_intervention_judge("no json") is None


def test_intervention_offline_dialogue_weighting(data_dir: Path) -> None:
    """Per-item totals known from the item id; value = mean over dialogues of the per-dialogue mean."""
    st = PsychologicalIntervention()
    ctx = ctx_(judge=JUDGE)
    assert st.not_computed_reason(ctx_()) == "no judge configured"
    items = st.items(ctx)
    assert len(items) == 296

    def total_of(item_id: str) -> tuple[int, int, int, int]:
        h = zlib.crc32(item_id.encode())
        return h % 3, (h // 3) % 4, (h // 12) % 4, (h // 48) % 2

    def judge(req: JudgeRequest) -> str:
        reply = req.prompt.split("<<<REPLY\n")[1].split("\nREPLY>>>")[0]
        c, p, a, s = total_of(reply.removeprefix("reply-to "))
        return json.dumps({"comprehensiveness": c, "professionalism": p, "authenticity": a, "safety": s,
                           "rationale": "canned"})

    records, res = run_offline(st, ctx, lambda it, p: f"reply-to {it.id}", judge)
    per_dialogue: dict[str, list[int]] = {}
    for it in items:
        per_dialogue.setdefault(it.cluster, []).append(sum(total_of(it.id)))
    expected = np.mean([np.mean(v) for v in per_dialogue.values()])
    assert res.status == "ok"
    assert res.value == pytest.approx(expected)
    item_mean = np.mean([sum(total_of(it.id)) for it in items])
    assert abs(expected - item_mean) > 1e-9  # the weighting matters for this check to bite
    assert res.metrics["n_dialogues"] == 45
    assert set(res.metrics["mean_total_by_topic"]) == set(CPSYCOUNE_TOPICS)
    assert res.metrics["mean_comprehensiveness"] == pytest.approx(
        np.mean([np.mean([total_of(i.id)[0] for i in items if i.cluster == d]) for d in per_dialogue]))
    assert res.ci[0] <= res.value <= res.ci[1]


def test_intervention_starter_items() -> None:
    items = PsychologicalIntervention().items(ctx_(suite="starter", judge=JUDGE))
    rows = load_starter("reliability/psychological_intervention")
    assert len(items) == sum(len(r["dialogue"]) // 2 for r in rows)
    assert 10 <= len(items) <= 20
