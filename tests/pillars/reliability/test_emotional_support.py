"""reliability/emotional_support (ESConv): the loaders on the real files, cuts, the judge parser, ROUGE-L,
offline runs and the checksum rule."""

from __future__ import annotations

import json
import zlib
from collections import Counter
from pathlib import Path

import pytest

from reliability_canned import JUDGE, ctx_
from trustmh.core import Item, JudgeRequest, TrustmhError
from trustmh.data.rows import RowReport
from trustmh.offline import run_offline
from trustmh.pillars.reliability.data import (
    ESCONV_TSV_RELPATHS,
    esconv_tsv_dialogues,
    load_esconv_json,
    load_esconv_tsv,
    parse_esconv_tsv_line,
)
from trustmh.pillars.reliability.support import EmotionalSupport, eligible_cuts, rouge_l
from trustmh.scoring.support_judge import SUPPORT_DIMENSIONS, format_transcript, parse_support_judge

STRATEGIES = {"Questions", "Restatement or Paraphrasing", "Reflection of feelings", "Self-disclosure",
              "Affirmation and Reassurance", "Providing Suggestions", "Information", "Other"}


# ================================================================================================ ESConv

@pytest.mark.parametrize("split", ["test", "dev"])
def test_esconv_tsv_parse_counts_and_segments(data_dir: Path, split: str) -> None:
    path = data_dir / ESCONV_TSV_RELPATHS[split]
    raw_lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    samples = load_esconv_tsv(path)
    assert len(samples) == len(raw_lines) == {"test": 2775, "dev": 2985}[split]
    for segs, raw in zip(samples, raw_lines, strict=True):
        assert 1 <= len(segs) <= 5
        assert len(segs) == raw.count(" EOS ") + 1
        assert segs[-1]["speaker"] == "supporter"  # the gold turn
        idx = [s["turn_idx"] for s in segs]
        assert idx == list(range(idx[0], idx[0] + len(idx)))
        for s in segs:
            assert s["flag"] in (0.0, 1.0)
            if s["speaker"] == "supporter":
                assert s["strategy"] in STRATEGIES
                assert not s["text"].startswith("[")
            else:
                assert s["strategy"] is None


def test_esconv_tsv_line_parser() -> None:
    line = "1.0 0 0 Hi there  EOS 0.0 1 1 [Questions] How are you?"
    segs = parse_esconv_tsv_line(line, "x")
    assert [(s["speaker"], s["turn_idx"], s["text"], s["strategy"]) for s in segs] == [
        ("seeker", 0, "Hi there", None), ("supporter", 1, "How are you?", "Questions")]
    with pytest.raises(TrustmhError, match="x segment 2"):
        parse_esconv_tsv_line("1.0 0 0 Hi EOS oops", "x")
    with pytest.raises(TrustmhError, match=r"\[Strategy\]"):
        parse_esconv_tsv_line("1.0 0 0 Hi EOS 1.0 1 1 no strategy", "x")
    with pytest.raises(TrustmhError, match="not a supporter turn"):
        parse_esconv_tsv_line("1.0 1 0 [Other] Hi EOS 1.0 0 1 hello", "x")


def test_esconv_dialogue_reconstruction_is_consistent(data_dir: Path) -> None:
    samples = load_esconv_tsv(data_dir / ESCONV_TSV_RELPATHS["test"])
    dialogues = esconv_tsv_dialogues(samples, "test")
    assert 150 < len(dialogues) < len(samples) / 5
    assert len({d["id"] for d in dialogues}) == len(dialogues)
    # Every window lies inside one dialogue, in file order, with identical turns.
    k = 0
    for segs in samples:
        turns = {t["turn_idx"]: t for t in dialogues[k]["turns"]}
        if not all(s["turn_idx"] in turns and turns[s["turn_idx"]]["text"] == s["text"] for s in segs):
            k += 1
            turns = {t["turn_idx"]: t for t in dialogues[k]["turns"]}
        for s in segs:
            assert turns[s["turn_idx"]]["speaker"] == s["speaker"]
            assert turns[s["turn_idx"]]["text"] == s["text"]
    assert k == len(dialogues) - 1
    for d in dialogues:
        idx = [t["turn_idx"] for t in d["turns"]]
        assert idx == sorted(set(idx))


def test_eligible_cuts_rule() -> None:
    def t(sp: str, i: int) -> dict:
        return {"speaker": sp, "text": f"{sp} {i}", "turn_idx": i}

    turns = [t("seeker", 0), t("supporter", 1), t("seeker", 2), t("supporter", 3), t("supporter", 4),
             t("seeker", 5), t("supporter", 6)]
    # supporter 3 follows the 2nd seeker turn; 4 follows a supporter turn; 6 follows a seeker turn.
    assert eligible_cuts(turns) == [3, 6]
    gap = [t("seeker", 0), t("supporter", 1), t("seeker", 2), t("seeker", 4), t("supporter", 5)]
    assert eligible_cuts(gap) == []


def test_emotional_support_items(data_dir: Path) -> None:
    ctx = ctx_(judge=JUDGE)
    items = EmotionalSupport().items(ctx)
    assert len(items) == 200
    assert len({it.id for it in items}) == 200
    assert len({it.cluster for it in items}) == 200  # one item per dialogue
    for it in items:
        md = it.metadata
        assert md["dataset_variant"] == "processed_test_split"
        assert "ESConv.json" in md["fallback_reason"] or "esconv" in md["fallback_reason"].lower()
        context = md["context"]
        assert sum(t["speaker"] == "seeker" for t in context) >= 2
        assert context[-1]["speaker"] == "seeker"
        assert format_transcript(context) in it.prompt
        assert it.target
        assert (len(it.target) < 25 or it.target not in it.prompt)
        assert not any(t["text"].startswith("[") and t["speaker"] == "supporter" for t in context)
        # The judge sees the context and the reply, never the gold turn.
        reqs = EmotionalSupport().judge_requests(it, "I hear you.", ctx)
        assert len(reqs) == 1
        assert (len(it.target) < 25 or it.target not in reqs[0].prompt)
    again = EmotionalSupport().items(ctx)
    assert [it.id for it in again] == [it.id for it in items]
    other = EmotionalSupport().items(ctx_(judge=JUDGE, seed=1))
    assert [it.id for it in other] != [it.id for it in items]
    assert len(EmotionalSupport().items(ctx_(judge=JUDGE, limit=20))) == 20
    head = EmotionalSupport().items(ctx_(judge=JUDGE, limit=20, mode="faithful"))
    assert [it.id for it in head] == [it.id for it in items[:20]]


def test_emotional_support_not_computed_without_judge() -> None:
    st = EmotionalSupport()
    assert st.not_computed_reason(ctx_()) == "no judge configured"
    assert st.not_computed_reason(ctx_(judge=JUDGE)) is None
    ctx = ctx_(suite="starter")
    records, res = run_offline(st, ctx, respond=lambda it, p: "I hear you.")
    assert res.status == "not_computed"
    assert res.reason == "no judge configured"


def _support_json(value: int, **over: int) -> str:
    scores = dict.fromkeys(SUPPORT_DIMENSIONS, value) | over
    return json.dumps({**scores, "rationale": "canned"})


def test_emotional_support_offline_known_mean() -> None:
    """A canned judge gives 5 on every dimension when the reply mentions "listen", else 2."""
    st = EmotionalSupport()
    ctx = ctx_(suite="starter", judge=JUDGE)
    items = st.items(ctx)
    warm = {it.id for it in items if zlib.crc32(it.id.encode()) % 2}
    assert 0 < len(warm) < len(items)

    def respond(item: Item, prompt: str) -> str:
        return "I'm here to listen." if item.id in warm else "Okay."

    seen: list[str] = []

    def judge(req: JudgeRequest) -> str:
        seen.append(req.prompt)
        return _support_json(5 if "listen" in req.prompt.split("<<<REPLY")[1] else 2)

    records, res = run_offline(st, ctx, respond, judge)
    expected = (5 * len(warm) + 2 * (len(items) - len(warm))) / len(items)
    assert res.status == "ok"
    assert res.method == "judge"
    assert res.value == pytest.approx(expected)
    assert res.metrics["mean_empathy"] == pytest.approx(expected)
    assert res.ci[0] <= res.value <= res.ci[1]
    assert res.n == len(items)
    assert res.n_invalid == 0
    assert len(seen) == len(items)
    assert all(it.target not in p for it, p in zip(items, seen, strict=True))
    assert res.metrics["ref_rougeL"] is not None
    assert any("not validated" in n for n in res.notes)


def test_emotional_support_invalid_judge_and_empty_reply_counted() -> None:
    st = EmotionalSupport()
    ctx = ctx_(suite="starter", judge=JUDGE)
    items = st.items(ctx)
    calls: Counter[str] = Counter()

    def respond(item: Item, prompt: str) -> str:
        return "" if item.id == items[0].id else "Tell me more."

    def judge(req: JudgeRequest) -> str:
        calls[req.prompt] += 1
        return "I think it was fine" if items[1].metadata["context"][-1]["text"] in req.prompt else _support_json(4)

    records, res = run_offline(st, ctx, respond, judge)
    assert records[0].score["valid"] is False
    assert records[0].score["support"] == 1.0
    assert records[1].score["judge_valid"] is False
    assert res.n_invalid == 2
    assert res.metrics["n_judge_invalid"] == 1
    # Empty reply scores 1; the invalid judge output is left out of the mean.
    assert res.value == pytest.approx((1 + 4 * (len(items) - 2)) / (len(items) - 1))
    assert max(calls.values()) == 3  # the invalid judge output: three attempts


def test_emotional_support_perturbable_items() -> None:
    st = EmotionalSupport()
    ctx = ctx_(suite="starter", judge=JUDGE)
    clean = st.items(ctx)
    keys: list[str] = []

    def perturb(key: str, text: str) -> str:
        keys.append(key)
        return text.upper() + " zz"

    pert = st.perturbable_items(ctx, perturb)
    assert [it.id for it in pert] == [it.id for it in clean]
    for a, b in zip(clean, pert, strict=True):
        assert a.target == b.target
        assert a.cluster == b.cluster
        assert b.metadata["context"] == a.metadata["context"]  # clean copy kept
        for t0, t1 in zip(a.metadata["context"], b.metadata["perturbed_context"], strict=True):
            if t0["speaker"] == "seeker":
                assert t1["text"] == t0["text"].upper() + " zz"
            else:
                assert t1 == t0
        assert format_transcript(b.metadata["perturbed_context"]) in b.prompt
        # Instructions unchanged: the prompt differs only inside the transcript.
        assert b.prompt.split("Seeker:")[0] == a.prompt.split("Seeker:")[0]
        assert b.prompt.rsplit("\n\n", 1)[1] == a.prompt.rsplit("\n\n", 1)[1]
        # The judge rates the reply against the clean context.
        assert st.judge_requests(b, "ok", ctx)[0].prompt == st.judge_requests(a, "ok", ctx)[0].prompt
    assert all(k.split("#")[0] in {it.id for it in clean} for k in keys)
    records, res = run_offline(st, ctx, lambda it, p: "Tell me more.", lambda r: _support_json(3), items=pert)
    assert res.value == pytest.approx(3.0)


def test_support_judge_parser() -> None:
    good = parse_support_judge('```json\n{"empathy": 4, "helpfulness": 3, "safety": 5, "fluency": "4",'
                               ' "rationale": "fine"}\n```')
    assert good is not None
    assert good["support"] == pytest.approx(4.0)
    assert good["rationale"] == "fine"
    assert parse_support_judge('{"empathy": 4, "helpfulness": 3, "safety": 5}') is None
    assert parse_support_judge('{"empathy": 6, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge('{"empathy": 0, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge('{"empathy": 3.5, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge("empathy 4, helpfulness 3") is None
    assert parse_support_judge(None) is None
    no_rationale = parse_support_judge('{"empathy": 1, "helpfulness": 1, "safety": 1, "fluency": 1}')
    assert no_rationale is not None
    assert no_rationale["rationale"] == ""


def test_rouge_l() -> None:
    assert rouge_l("the cat sat", "the cat sat") == pytest.approx(1.0)
    assert rouge_l("a b c d", "a c e") == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    assert rouge_l("x y", "z") == 0.0
    assert rouge_l("", "z") is None


def test_esconv_fallback_never_swallows_a_checksum_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cached ESConv.json with the wrong bytes is an error, not a reason to use the processed split."""
    from trustmh.core import ChecksumError
    from trustmh.data.download import save_pin
    from trustmh.pillars.reliability.data import ESCONV_JSON_RELPATH

    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    cached = tmp_path / ESCONV_JSON_RELPATH
    cached.parent.mkdir(parents=True)
    cached.write_text("[]", encoding="utf-8")
    save_pin(ESCONV_JSON_RELPATH, "0" * 64)
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        EmotionalSupport().items(ctx_(judge=JUDGE))


# The publisher's repository (thu-coai/Emotional-Support-Conversation @ f262d06) also holds FailedESConv.json:
# the same schema with its older role names, speaker "speaker"/"listener" in every one of its 196 dialogues,
# where ESConv.json uses "seeker"/"supporter". Run on that file, the reader names every dialogue and refuses
# the file; a file with some such dialogues keeps the rest under their own positions. Synthetic text.
def _esconv_dialogue(roles: tuple[str, str]) -> dict:
    return {"emotion_type": "anxiety", "situation": "<syn>", "dialog": [
        {"speaker": roles[0], "annotation": {}, "content": "<syn: hello>\n"},
        {"speaker": roles[1], "annotation": {"strategy": "Question"}, "content": "<syn: how are you?>"}]}


def test_esconv_json_skips_and_names_dialogues_with_other_role_names(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ESConv.json"
    path.write_text(json.dumps([_esconv_dialogue(("speaker", "listener")), _esconv_dialogue(("seeker", "supporter"))]),
                    encoding="utf-8")
    report = RowReport()
    dialogues = load_esconv_json(path, report)
    assert [d["row"] for d in dialogues] == [1]  # ids are built from the file position, not the list index
    assert dialogues[0]["turns"][1]["strategy"] == "Question"
    line = ("ESConv.json row 0: dialogue turn 0: field 'speaker' must be 'seeker' or 'supporter' (found 'speaker'); "
            "skipped")
    assert report.lines() == [line]
    assert f"trustmh: {line}" in capsys.readouterr().err


def test_esconv_json_with_no_usable_dialogue_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "FailedESConv.json"
    path.write_text(json.dumps([_esconv_dialogue(("speaker", "listener"))] * 2), encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"FailedESConv.json: no usable row: FailedESConv.json row 0: dialogue"):
        load_esconv_json(path)
