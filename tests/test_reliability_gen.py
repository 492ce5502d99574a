"""reliability/psychological_diagnosis, reliability/emotional_support, reliability/psychological_intervention:
loaders on the real files, the diagnosis adapter on synthetic files, parsers, metrics and offline runs."""

from __future__ import annotations

import csv
import json
import re
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from trustmh.core import Item, JudgeInfo, JudgeRequest, RunContext, TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.reliability.common import classification_metrics
from trustmh.pillars.reliability.data import (
    CPSYCOUNE_RELDIR,
    CPSYCOUNE_TOPICS,
    D4_PRESET,
    ESCONV_TSV_RELPATHS,
    SWMH_PRESET,
    ClassificationSpec,
    esconv_tsv_dialogues,
    load_classification,
    load_cpsycoune,
    load_esconv_tsv,
    parse_esconv_tsv_line,
)
from trustmh.pillars.reliability.diagnosis import PsychologicalDiagnosis, parse_diagnosis
from trustmh.pillars.reliability.intervention import (
    PsychologicalIntervention,
    intervention_items,
    parse_intervention_judge,
)
from trustmh.pillars.reliability.support import EmotionalSupport, eligible_cuts, rouge_l
from trustmh.sampling import stratified_sample
from trustmh.scoring.support_judge import SUPPORT_DIMENSIONS, format_transcript, parse_support_judge
from trustmh.starter import load_starter

N_BOOT = 200
JUDGE = JudgeInfo(model="canned/judge", validated=False)
STRATEGIES = {"Questions", "Restatement or Paraphrasing", "Reflection of feelings", "Self-disclosure",
              "Affirmation and Reassurance", "Providing Suggestions", "Information", "Other"}


def ctx_(**kw) -> RunContext:
    kw.setdefault("n_boot", N_BOOT)
    return RunContext(**kw)


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
        assert it.target and (len(it.target) < 25 or it.target not in it.prompt)
        assert not any(t["text"].startswith("[") and t["speaker"] == "supporter" for t in context)
        # The judge sees the context and the reply, never the gold turn.
        reqs = EmotionalSupport().judge_requests(it, "I hear you.", ctx)
        assert len(reqs) == 1 and (len(it.target) < 25 or it.target not in reqs[0].prompt)
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
    assert res.status == "not_computed" and res.reason == "no judge configured"


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
    assert res.status == "ok" and res.method == "judge"
    assert res.value == pytest.approx(expected)
    assert res.metrics["mean_empathy"] == pytest.approx(expected)
    assert res.ci[0] <= res.value <= res.ci[1]
    assert res.n == len(items) and res.n_invalid == 0
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
    assert records[0].score["valid"] is False and records[0].score["support"] == 1.0
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
        assert a.target == b.target and a.cluster == b.cluster
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
    assert good is not None and good["support"] == pytest.approx(4.0) and good["rationale"] == "fine"
    assert parse_support_judge('{"empathy": 4, "helpfulness": 3, "safety": 5}') is None
    assert parse_support_judge('{"empathy": 6, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge('{"empathy": 0, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge('{"empathy": 3.5, "helpfulness": 3, "safety": 5, "fluency": 4}') is None
    assert parse_support_judge("empathy 4, helpfulness 3") is None
    assert parse_support_judge(None) is None
    no_rationale = parse_support_judge('{"empathy": 1, "helpfulness": 1, "safety": 1, "fluency": 1}')
    assert no_rationale is not None and no_rationale["rationale"] == ""


def test_rouge_l() -> None:
    assert rouge_l("the cat sat", "the cat sat") == pytest.approx(1.0)
    assert rouge_l("a b c d", "a c e") == pytest.approx(2 * (2 / 4) * (2 / 3) / (2 / 4 + 2 / 3))
    assert rouge_l("x y", "z") == 0.0
    assert rouge_l("", "z") is None


# ============================================================================================= CPsyCounE

def test_cpsycoune_loader_and_items(data_dir: Path) -> None:
    dialogues = load_cpsycoune(data_dir / CPSYCOUNE_RELDIR)
    assert len(dialogues) == 45
    assert Counter(d["topic"] for d in dialogues) == dict.fromkeys(CPSYCOUNE_TOPICS, 5)
    n_client = 0
    for d in dialogues:
        raw = json.loads((data_dir / CPSYCOUNE_RELDIR / d["topic"] / f"{d['number']}.json").read_text("utf-8"))
        assert len(d["turns"]) == len(raw) and len(raw) % 2 == 0 and 8 <= len(raw) <= 18
        assert [r for r, _ in d["turns"]] == ["client", "counsellor"] * (len(raw) // 2)
        n_client += sum(1 for s in raw if s.startswith("求助者："))
    items = intervention_items(dialogues)
    assert len(items) == n_client == 296
    assert len({it.id for it in items}) == 296
    assert len({it.cluster for it in items}) == 45
    first = items[0]
    assert first.metadata["history"] == [] and first.metadata["turn"] == 1
    d0 = dialogues[0]
    assert first.metadata["message"] == d0["turns"][0][1] and first.target == d0["turns"][1][1]
    third = items[2]
    assert len(third.metadata["history"]) == 4 and third.metadata["message"] in third.prompt
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
    assert ok is not None and ok["total"] == 7
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
    assert res.status == "ok" and res.value == pytest.approx(expected)
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


# ============================================================================================= diagnosis

def _write_csv(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


SWMH_RAW = ["self.depression", "self.Anxiety", "self.bipolar", "self.SuicideWatch", "self.offmychest"]


def _swmh_rows(n_per: int, split: str | None = None) -> list[dict]:
    rows = []
    for k in range(n_per):
        for lab in SWMH_RAW:
            row = {"text": f"demo post {k} about a bland day ({lab[5:].lower()})", "label": lab}
            if split:
                row["split"] = split
            rows.append(row)
    return rows


def test_swmh_preset_csv_and_folder(tmp_path: Path) -> None:
    path = tmp_path / "swmh.csv"
    _write_csv(path, _swmh_rows(2, "train") + _swmh_rows(3, "test"))
    rows = load_classification(path, SWMH_PRESET)
    assert len(rows) == 15  # only the test split
    assert {r["label"] for r in rows} == {"depression", "anxiety", "bipolar", "suicidewatch", "offmychest"}
    folder = tmp_path / "swmh"
    folder.mkdir()
    _write_csv(folder / "train.csv", _swmh_rows(4))
    _write_csv(folder / "test.csv", _swmh_rows(1))
    assert len(load_classification(folder, SWMH_PRESET)) == 5


def test_key_mismatch_lists_keys(tmp_path: Path) -> None:
    path = tmp_path / "posts.jsonl"
    path.write_text(json.dumps({"post": "hello", "class": "self.depression"}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"row 1: no field 'label'.*keys found: post, class") as exc:
        load_classification(path, SWMH_PRESET)
    assert "unverified" in str(exc.value)
    spec = ClassificationSpec(dataset="mine", text_field="post", label_field="class")
    assert load_classification(path, spec)[0] == {"row_index": 0, "label": "self.depression", "text": "hello"}
    bad_label = tmp_path / "bad.jsonl"
    bad_label.write_text(json.dumps({"text": "hi", "label": "self.cooking"}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"row 1: field 'label' value 'self.cooking'"):
        load_classification(bad_label, SWMH_PRESET)


def _d4_rows(n_per: int) -> list[dict]:
    rows = []
    for k in range(n_per):
        for sev in range(4):
            rows.append({"log": [{"speaker": "doctor", "text": f"医生问题{k}"},
                                 {"speaker": "patient", "text": f"患者回答{k}-{sev}"}], "drisk": sev})
    return rows


def test_d4_preset_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "d4.jsonl"
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in _d4_rows(2)) + "\n", encoding="utf-8")
    rows = load_classification(path, D4_PRESET)
    assert Counter(r["label"] for r in rows) == {"none": 2, "mild": 2, "moderate": 2, "severe": 2}
    assert rows[0]["turns"][0] == {"role": "doctor", "text": "医生问题0"}
    path.write_text(json.dumps({"dialog": [], "drisk": 1}) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"no field 'log'.*keys found: dialog, drisk"):
        load_classification(path, D4_PRESET)


def test_stratified_sample_reproducible() -> None:
    rows = [{"i": i, "label": "a" if i % 4 else "b"} for i in range(200)]
    s1 = stratified_sample(rows, lambda r: r["label"], 40, seed=3)
    s2 = stratified_sample(rows, lambda r: r["label"], 40, seed=3)
    s3 = stratified_sample(rows, lambda r: r["label"], 40, seed=4)
    assert s1 == s2 and s1 != s3
    assert Counter(r["label"] for r in s1) == {"a": 30, "b": 10}
    assert [r["i"] for r in s1] == sorted(r["i"] for r in s1)


def test_parse_diagnosis() -> None:
    labels = ["depression", "suicidewatch", "anxiety", "bipolar", "offmychest"]
    assert parse_diagnosis('{"label": "Anxiety"}', labels) == "anxiety"
    assert parse_diagnosis('```json\n{"label": "off my chest"}\n```', labels) is None
    assert parse_diagnosis('```json\n{"label": "offmychest"}\n```', labels) == "offmychest"
    assert parse_diagnosis("This reads like bipolar.", labels) == "bipolar"
    assert parse_diagnosis("Either depression or anxiety.", labels) is None
    assert parse_diagnosis("I cannot tell.", labels) is None
    assert parse_diagnosis('{"label": 2}', ["0", "1", "2", "3"]) == "2"
    assert parse_diagnosis('{"label": "Moderate"}', list(D4_PRESET.labels or {})) == "moderate"


def test_classification_metrics_match_sklearn() -> None:
    rng = np.random.default_rng(0)
    labels = ["a", "b", "c", "d"]
    gold = list(rng.choice(labels[:3], 80))
    pred = [None if rng.random() < 0.15 else str(x) for x in rng.choice(labels, 80)]
    m = classification_metrics(gold, pred, labels)
    pred_sk = [p if p is not None else "__invalid__" for p in pred]
    present = sorted(set(gold) | {p for p in pred if p is not None})
    assert m["accuracy"] == pytest.approx(accuracy_score(gold, pred_sk))
    assert m["weighted_f1"] == pytest.approx(f1_score(gold, pred_sk, labels=present, average="weighted",
                                                      zero_division=0))
    assert m["macro_f1"] == pytest.approx(f1_score(gold, pred_sk, labels=present, average="macro",
                                                   zero_division=0))
    assert np.asarray(m["confusion"]["matrix"]).sum() == 80
    assert np.asarray(m["confusion"]["matrix"])[:, -1].sum() == sum(p is None for p in pred)


def test_diagnosis_not_computed_without_data() -> None:
    st = PsychologicalDiagnosis()
    assert st.not_computed_reason(ctx_()) == ("gated dataset not supplied (pass -O swmh_path=... or "
                                              "-O d4_path=...)")
    assert st.not_computed_reason(ctx_(suite="starter")) is None
    assert st.not_computed_reason(ctx_(options={"swmh_path": "/x"})) is None


def _gold_json(item: Item) -> str:
    return json.dumps({"label": item.target})


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_diagnosis_starter_offline(mode: str) -> None:
    st = PsychologicalDiagnosis()
    ctx = ctx_(suite="starter", mode=mode)
    items = st.items(ctx)
    assert len(items) == len(load_starter(st.id))
    assert all(it.metadata["labels"] == list(SWMH_PRESET.labels or {}) for it in items)
    _, res = run_offline(st, ctx, lambda it, p: _gold_json(it))
    assert res.value == pytest.approx(1.0) and res.n_invalid == 0
    wrong = {lab: next(x for x in items[0].metadata["labels"] if x != lab) for lab in items[0].metadata["labels"]}
    _, res = run_offline(st, ctx, lambda it, p: json.dumps({"label": wrong[it.target]}))
    assert res.value == pytest.approx(0.0)
    asked: list[str] = []

    def garbage(item: Item, prompt: str) -> str:
        asked.append(prompt)
        return "hmm"

    records, res = run_offline(st, ctx, garbage)
    assert res.n_invalid == len(items) and res.value == pytest.approx(0.0)
    assert len(asked) == 3 * len(items) and all(r.metadata["reasks"] == 2 for r in records)


def test_diagnosis_two_datasets_composite(tmp_path: Path) -> None:
    swmh = tmp_path / "swmh.jsonl"
    swmh.write_text("\n".join(json.dumps(r) for r in _swmh_rows(4)) + "\n", encoding="utf-8")
    d4 = tmp_path / "d4.json"
    d4.write_text(json.dumps(_d4_rows(3), ensure_ascii=False), encoding="utf-8")
    st = PsychologicalDiagnosis()
    opts = {"swmh_path": str(swmh), "d4_path": str(d4)}

    def respond(item: Item, prompt: str) -> str:
        # Right on SWMH; on D4 right only for "none"/"mild", else "none".
        if item.metadata["dataset"] == "swmh" or item.target in ("none", "mild"):
            return _gold_json(item)
        return '{"label": "none"}'

    for mode in ("faithful", "default"):
        ctx = ctx_(mode=mode, options=opts)
        items = st.items(ctx)
        assert Counter(it.metadata["dataset"] for it in items) == {"swmh": 20, "d4": 12}
        d4_item = next(it for it in items if it.metadata["dataset"] == "d4")
        assert "Patient: 患者回答" in d4_item.prompt and "Doctor: 医生问题" in d4_item.prompt
        records, res = run_offline(st, ctx, respond)
        d4_gold = [r.metadata["target"] for r in records if r.metadata["dataset"] == "d4"]
        d4_pred = [r.score["pred"] for r in records if r.metadata["dataset"] == "d4"]
        acc_d4 = accuracy_score(d4_gold, d4_pred)
        wf1_d4 = f1_score(d4_gold, d4_pred, average="weighted", zero_division=0)
        assert res.metrics["accuracy_d4"] == pytest.approx(acc_d4)
        assert res.metrics["weighted_f1_d4"] == pytest.approx(wf1_d4)
        assert res.metrics["accuracy_swmh"] == pytest.approx(1.0)
        expected = (1 + acc_d4) / 2 if mode == "faithful" else (1 + wf1_d4) / 2
        assert res.value == pytest.approx(expected)
        assert res.ci[0] <= res.value <= res.ci[1] and res.ci[0] < res.ci[1]
        assert any("unverified" in n for n in res.notes)
    # --limit in default mode: seeded stratified sample per dataset.
    lim = st.items(ctx_(options=opts, limit=8))
    assert Counter(it.metadata["dataset"] for it in lim) == {"swmh": 8, "d4": 8}
    assert [it.id for it in lim] == [it.id for it in st.items(ctx_(options=opts, limit=8))]


def test_diagnosis_generic_adapter(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    _write_csv(path, [{"body": f"post {i}", "y": "calm" if i % 2 else "tense"} for i in range(10)])
    st = PsychologicalDiagnosis()
    ctx = ctx_(options={"diagnosis_path": str(path), "text_field": "body", "label_field": "y"})
    items = st.items(ctx)
    assert len(items) == 10 and items[0].metadata["labels"] == ["calm", "tense"]
    with pytest.raises(TrustmhError, match="keys found: body, y"):
        st.items(ctx_(options={"diagnosis_path": str(path), "text_field": "text", "label_field": "y"}))


def test_diagnosis_perturbable_items(tmp_path: Path) -> None:
    swmh = tmp_path / "swmh.jsonl"
    swmh.write_text("\n".join(json.dumps(r) for r in _swmh_rows(2)) + "\n", encoding="utf-8")
    d4 = tmp_path / "d4.jsonl"
    d4.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in _d4_rows(1)) + "\n", encoding="utf-8")
    st = PsychologicalDiagnosis()
    ctx = ctx_(options={"swmh_path": str(swmh), "d4_path": str(d4)})
    clean = st.items(ctx)
    keys: list[str] = []

    def perturb(key: str, text: str) -> str:
        keys.append(key)
        return f"NOISY[{text}]"

    pert = st.perturbable_items(ctx, perturb)
    assert [it.id for it in pert] == [it.id for it in clean]
    for a, b in zip(clean, pert, strict=True):
        assert a.target == b.target and a.metadata["labels"] == b.metadata["labels"]
        if a.metadata["kind"] == "post":
            assert b.metadata["perturbed_text"] == f"NOISY[{a.metadata['text']}]"
            assert b.prompt == a.prompt.replace(a.metadata["text"], b.metadata["perturbed_text"])
        else:
            for t0, t1 in zip(a.metadata["turns"], b.metadata["perturbed_turns"], strict=True):
                assert t1["text"] == (f"NOISY[{t0['text']}]" if t0["role"] == "patient" else t0["text"])
            assert "Doctor: 医生问题" in b.prompt and "NOISY[患者回答" in b.prompt
    assert {k for k in keys if "#" not in k} == {it.id for it in clean if it.metadata["kind"] == "post"}
    _, res = run_offline(st, ctx, lambda it, p: _gold_json(it), items=pert)
    assert res.value == pytest.approx(1.0)


def test_starter_files_are_demo() -> None:
    for sid in ("reliability/psychological_diagnosis", "reliability/emotional_support",
                "reliability/psychological_intervention"):
        rows = load_starter(sid)
        assert 2 <= len(rows) <= 20
        assert all("synthetic demo" in r["source"] for r in rows)
    assert re.search("EOS", json.dumps(load_starter("reliability/emotional_support"))) is None


def test_diagnosis_prompt_example_is_not_a_label() -> None:
    """A model that copies the prompt's example answer must be scored invalid, not as some real label."""
    st = PsychologicalDiagnosis()
    ctx = ctx_(suite="starter", mode="default")
    items = st.items(ctx)
    example = items[0].prompt.strip().rsplit("\n", 1)[-1]
    assert example.startswith('{"label"')
    labels = items[0].metadata["labels"]
    assert parse_diagnosis(example, labels) is None
    records, res = run_offline(st, ctx, lambda it, p: example)
    assert res.n_invalid == len(items) and not any(r.score.get("correct") for r in records)


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
