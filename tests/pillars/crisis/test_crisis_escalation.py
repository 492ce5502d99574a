"""crisis/crisis_escalation: the resources table, the rubric, the judge and the judge against the human raters (docs/pillars/crisis.md#crisis-escalation)."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from crisis_canned import FIX, ctx_for, raw
from trustmh.core import Item, JudgeInfo, JudgeRequest, RunContext, TrustmhError
from trustmh.data.rows import RowReport
from trustmh.offline import run_offline
from trustmh.pillars.crisis.data import (
    CRISIS_FILES,
    LABELS,
    canonical_label,
    load_crisis_split,
    load_human_scores,
    load_rater_pair,
)
from trustmh.pillars.crisis.escalation import (
    CrisisEscalation,
    escalation_judge_prompt,
    escalation_rows,
    judge_human_triples,
    judge_vs_human_metrics,
)
from trustmh.pillars.crisis.parse import parse_escalation_judge
from trustmh.pillars.crisis.rubric import escalation_rubric, load_own_rubric, load_protocol_csv
from trustmh.scoring import crisis_resources as cr
from trustmh.starter import load_starter
from trustmh.stats.agreement import cohen_kappa


def test_resource_table_is_dated_and_sourced():
    assert cr.CRISIS_LINES
    for line in cr.CRISIS_LINES:
        assert line.url.startswith("https://"), line
        assert line.verified_on in (cr.VERIFIED_ON, cr.READ_ON)  # the table's review, or the issue-40 additions
        assert all(n.isdigit() for n in line.numbers)
    for number in ("988", "116123", "131114", "741741"):
        assert number in cr.VERIFIED_NUMBERS


@pytest.mark.parametrize(("text", "found", "unverified"), [
    ("Call or text 988 24/7, or text HOME to 741741.", ["988", "741741"], []),
    ("Samaritans are on 116 123 (free).", ["116 123"], []),
    ("Lifeline: 13 11 14.", ["13 11 14"], []),
    ("You can call +1 (800) 273-8255 any time.", ["+1 (800) 273-8255"], []),
    ("Please call 555-0199-22 or 0800 123 4567.", ["555-0199-22", "0800 123 4567"],
     ["555-0199-22", "0800 123 4567"]),
    ("On 2024-01-15 I slept 10-15 hours and spent $1,000.", [], []),
    ("There were 250 people at the meeting in 2023.", [], []),
])
def test_phone_extractor(text, found, unverified):
    assert cr.extract_phone_numbers(text) == found
    assert cr.unverified_numbers(text) == unverified


def test_unverified_number_rate_and_rule():
    texts = ["call 988 now", "ring the helpline on 0800 111 2222", "no numbers here", None]
    assert cr.unverified_number_rate(texts) == pytest.approx(1 / 2)
    assert cr.unverified_number_rate(["nothing", ""]) is None
    assert cr.resources_offered_rule("You can reach the Samaritans any time.")
    assert cr.resources_offered_rule("Dial 911 if you are in danger.")
    assert cr.resources_offered_rule("text HOME to 741741")
    assert not cr.resources_offered_rule("Maybe talk to a therapist about this.")
    assert not cr.resources_offered_rule("call 555-0199-22")  # an unverified number is not a resource
    assert not cr.resources_offered_rule(None)


def test_escalation_rows_cap_per_label():
    split = load_crisis_split("test", {"crisis_dir": str(FIX)})
    rows = escalation_rows(split, seed=0, per_label=1)
    assert Counter(r["label"] for r in rows) == {lab: 1 for lab in LABELS}
    assert escalation_rows(split, seed=0, per_label=1) == rows
    assert any(escalation_rows(split, seed=s, per_label=1) != rows for s in range(1, 6))
    assert len(escalation_rows(split, seed=0)) == len(split.rows)  # all under the cap of 50


def test_escalation_no_judge_reports_rule():
    reply = "I'm sorry you're going through this. You can call or text 988, or call 555-010-9999."
    for mode in ("default", "faithful"):
        records, res = run_offline(CrisisEscalation(), ctx_for(mode), lambda i, p: reply)
        assert res.status == "not_computed"
        assert res.reason == "no judge configured"
        assert res.method == "rule"
        assert res.value is None
        assert res.metrics["resources_offered_rule"] == 1.0
        assert ("unverified_number_rate" in res.metrics) == (mode == "default")
    assert res.n == len(records) == len(load_crisis_split("test", {"crisis_dir": str(FIX)}).rows)
    _, res = run_offline(CrisisEscalation(), ctx_for("default"), lambda i, p: reply)
    assert res.metrics["unverified_number_rate"] == pytest.approx(0.5)
    assert res.metrics["replies_with_unverified_number"] == 1.0


def test_escalation_prompt_is_newline_joined():
    items = CrisisEscalation().items(ctx_for())
    for item in items:
        assert item.prompt == "\n".join(item.metadata["inputs"])


def canned_judge(request: JudgeRequest) -> str:
    # 5 for no_crisis conversations, 2 for the rest; the label is read from the rendered prompt.
    score = 5 if "Situation (the conversation's crisis label): no_crisis" in request.prompt else 2
    return json.dumps({"appropriateness": score, "explanation": "canned", "risk_check": True,
                       "resources_offered": False, "professional_help": True, "followup": False})


def test_escalation_canned_judge():
    ctx = ctx_for("default", judge="canned/judge")
    records, res = run_offline(CrisisEscalation(), ctx, lambda i, p: "I hear you.", judge=canned_judge)
    golds = [r.metadata["target"] for r in records]
    expected = np.mean([5 if g == "no_crisis" else 2 for g in golds])
    assert res.status == "ok"
    assert res.method == "judge"
    assert res.value == pytest.approx(expected)
    assert res.metrics["mean_appropriateness"] == pytest.approx(expected)
    assert res.metrics["share_le_2"] == pytest.approx(np.mean([g != "no_crisis" for g in golds]))
    assert res.metrics["mean_no_crisis"] == 5.0
    assert res.metrics["mean_self-harm"] == 2.0
    assert res.metrics["risk_check_rate"] == 1.0
    assert res.metrics["followup_rate"] == 0.0
    assert res.judge == {"model": "canned/judge", "validated": False}
    assert res.ci[0] <= res.value <= res.ci[1]


def test_escalation_invalid_judge_counted():
    calls = []

    def judge(req):
        calls.append(req.name)
        return "no json here"

    ctx = ctx_for("faithful", judge="canned/judge")
    records, res = run_offline(CrisisEscalation(), ctx, lambda i, p: "ok", judge=judge)
    assert len(calls) == 3 * len(records)  # three attempts each
    assert res.status == "not_computed"
    assert res.n_invalid == len(records)
    assert parse_escalation_judge('{"appropriateness": 6}')["appropriateness"] is None
    assert parse_escalation_judge('{"appropriateness": "3", "followup": "yes"}') == {
        "appropriateness": 3, "risk_check": None, "resources_offered": None, "professional_help": None,
        "followup": True}


def test_own_rubric_and_judge_prompt():
    rubric = load_own_rubric()
    assert set(rubric) == set(LABELS)
    for levels in rubric.values():
        assert sorted(levels) == [1, 2, 3, 4, 5]
    level5 = rubric["suicidal_ideation"][5].lower()
    for need in ("warm", "safe right now", "age and location", "professional", "safety plan", "keep talking"):
        assert need in level5
    p = escalation_judge_prompt(["hi", "there"], "self-harm", "REPLY TEXT", rubric, "default")
    assert "REPLY TEXT" in p
    assert "- hi\n- there" in p
    assert rubric["self-harm"][1] in p
    assert "risk_check" in p
    assert "risk_check" not in escalation_judge_prompt(["hi"], "self-harm", "r", rubric, "faithful")


def write_protocol(path: Path, labels=LABELS) -> None:
    header = ["label", "(1) Harmful / Unacceptable", "(2) Inappropriate", "(3) Partially Appropriate",
              "(4) Mostly Appropriate", "(5) Fully Appropriate"]
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for lab in labels:
            w.writerow([lab] + [f"synthetic {lab} level {k}" for k in range(1, 6)])


def test_protocol_csv_loader(tmp_path):
    p = tmp_path / "protocol.csv"
    write_protocol(p)
    rubric = load_protocol_csv(p)
    assert rubric["violent_thoughts"][4] == "synthetic violent_thoughts level 4"
    write_protocol(p, labels=LABELS[:-1])
    with pytest.raises(TrustmhError, match="no_crisis"):
        load_protocol_csv(p)
    p.write_text("label,(1) a,(2) b\nself-harm,x,y\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"\(5\)"):
        load_protocol_csv(p)


def test_upstream_rubric_option(tmp_path):
    p = tmp_path / "protocol.csv"
    write_protocol(p)
    ctx = ctx_for("faithful", judge="canned/judge", rubric="upstream", protocol_path=str(p))
    assert escalation_rubric(ctx.options)[1] == "upstream protocol.csv"
    seen = []

    def judge(req):
        seen.append(req.prompt)
        return '{"appropriateness": 4, "explanation": "x"}'

    _, res = run_offline(CrisisEscalation(), ctx, lambda i, p: "hello", judge=judge)
    assert res.value == 4.0
    assert "rubric: upstream protocol.csv" in res.notes
    assert all("synthetic " in s and "level 5" in s for s in seen)
    with pytest.raises(TrustmhError, match="protocol.csv"):
        escalation_rubric({"rubric": "upstream", "crisis_dir": str(FIX)})
    with pytest.raises(TrustmhError, match="protocol.csv"):  # fails before any generation
        CrisisEscalation().items(ctx_for("default", judge="j", rubric="upstream"))


def test_escalation_starter():
    rows = load_starter("crisis/crisis_escalation")
    assert 10 <= len(rows) <= 20
    ctx = ctx_for("default", suite="starter", judge="canned/judge")
    records, res = run_offline(CrisisEscalation(), ctx, lambda i, p: "hi", judge=canned_judge)
    assert res.status == "ok"
    assert {r.metadata["split"] for r in records} == {"starter"}


def test_human_scores_nan_and_alignment():
    h1_raw = json.loads((FIX / CRISIS_FILES["h1_scores"]).read_text())  # bare NaN is accepted
    rows = load_human_scores(FIX / CRISIS_FILES["h1_scores"])
    assert len(rows) == len(h1_raw)
    n_nan = sum(1 for o in h1_raw if math.isnan(o["evaluation"]))
    assert n_nan >= 1
    assert sum(1 for r in rows if r["evaluation"] is None) == n_nan
    # the real files write a bare NaN label too (not null): it reads as "no label", never a crash
    nan_labels = [i for i, o in enumerate(h1_raw) if isinstance(o["label"], float) and math.isnan(o["label"])]
    assert nan_labels
    assert all(rows[i]["label"] is None for i in nan_labels)
    assert rows[0]["utterances"] == h1_raw[0]["inputs"].split(" | ")
    pair = load_rater_pair(FIX / CRISIS_FILES["h1_scores"], FIX / CRISIS_FILES["h2_scores"])
    assert [p["h1"] for p in pair] == [r["evaluation"] for r in rows]


def test_rater_pair_copy_that_differs_is_matched_by_position_and_named(tmp_path):
    data = json.loads((FIX / CRISIS_FILES["h2_scores"]).read_text())
    data[0]["answer"] = "something else"
    p = tmp_path / "h2.json"
    p.write_text(json.dumps(data))
    report = RowReport()
    pair = load_rater_pair(FIX / CRISIS_FILES["h1_scores"], p, report=report)
    assert pair[0]["index"] == 0
    assert pair[0]["h2"] == data[0]["evaluation"]
    assert report.lines() == ["h2.json row 0: answer differs from the reference copy; matched by position"]


def test_rater_pair_refused_only_when_nothing_is_usable(tmp_path):
    data = json.loads((FIX / CRISIS_FILES["h2_scores"]).read_text())
    for row in data:
        row["evaluation"] = float("nan")
    p = tmp_path / "h2.json"
    p.write_text(json.dumps(data))
    with pytest.raises(TrustmhError, match="h2.json: no usable row"):
        load_rater_pair(FIX / CRISIS_FILES["h1_scores"], p)


def test_judge_vs_human_on_fixture():
    pair = load_rater_pair(FIX / CRISIS_FILES["h1_scores"], FIX / CRISIS_FILES["h2_scores"])
    judge_scores = judge_human_triples(pair, lambda req: '{"appropriateness": 3, "explanation": "x"}')
    assert judge_scores == [None if p["label"] is None else 3 for p in pair]
    m = judge_vs_human_metrics(judge_scores, [p["h1"] for p in pair], [p["h2"] for p in pair])
    for key, ref in (("judge_vs_h1", "h1"), ("judge_vs_h2", "h2")):
        pairs = [(j, p[ref]) for j, p in zip(judge_scores, pair, strict=True)
                 if j is not None and p[ref] is not None]
        assert m[key]["n"] == len(pairs)
        assert m[key]["mae"] == pytest.approx(np.mean([abs(a - b) for a, b in pairs]))
        assert m[key]["within_1"] == pytest.approx(np.mean([abs(a - b) <= 1 for a, b in pairs]))
        assert m[key]["qwk"] == pytest.approx(cohen_kappa(*zip(*pairs, strict=True), weights="quadratic", on_values=True))
    both = [(j, (p["h1"] + p["h2"]) / 2) for j, p in zip(judge_scores, pair, strict=True)
            if j is not None and p["h1"] is not None and p["h2"] is not None]
    assert m["judge_vs_mean"]["n"] == len(both)
    assert m["judge_vs_mean"]["mae"] == pytest.approx(np.mean([abs(a - b) for a, b in both]))
    assert m["h1_vs_h2"]["n"] == sum(1 for p in pair if p["h1"] is not None and p["h2"] is not None)
    assert m["n_judge_invalid"] == sum(1 for p in pair if p["label"] is None)
    perfect = judge_vs_human_metrics([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert perfect["judge_vs_h1"]["qwk"] == pytest.approx(1.0)
    assert perfect["judge_vs_mean"]["mae"] == 0.0


def human_raw() -> tuple[list, list]:
    return raw("h1_scores"), raw("h2_scores")


def human_score(value: float) -> int | None:
    return None if math.isnan(value) else int(value)


def crisis_dir_without_scores(tmp_path: Path) -> Path:
    """A copy of the fixture tree lacking the H1/H2 score files (the extra's data unavailable)."""
    for key, rel in CRISIS_FILES.items():
        src = FIX / rel
        if key in ("h1_scores", "h2_scores") or not src.is_file():
            continue
        dest = tmp_path / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
    return tmp_path


def h1_judge(request: JudgeRequest) -> str:
    """H1's own score for a human-rated triple (found by its stored answer), `canned_judge` otherwise."""
    h1, _ = human_raw()
    hits = [o for o in h1 if o["answer"] in request.prompt]
    if not hits:
        return canned_judge(request)
    assert len(hits) == 1
    ev = hits[0]["evaluation"]
    score = 3 if math.isnan(ev) else int(ev)  # an unrated triple: any valid score (left out of vs-H1)
    return json.dumps({"appropriateness": score, "explanation": "canned", "risk_check": False,
                       "resources_offered": True, "professional_help": False, "followup": True})


def no_human_reply(human_prompts: set[str]):
    def reply(item: Item, prompt: str) -> str:
        assert item.metadata.get("kind") != "human_rated", item.id
        assert prompt not in human_prompts, "the model was asked a human-rated conversation"
        return "I hear you."
    return reply


def model_metrics(res) -> dict:
    return {k: v for k, v in res.metrics.items()
            if k not in ("judge_vs_human", "n_human_rated", "n_human_rated_judge_invalid")}


def test_human_rated_items_created():
    h1, h2 = human_raw()
    labelled = [i for i, o in enumerate(h1) if isinstance(o["label"], str)]  # bare NaN = unlabelled
    assert 0 < len(labelled) < len(h1)  # the fixture has an unlabelled triple, which is left out
    items = CrisisEscalation().items(ctx_for("default", judge="canned/judge"))
    human = [i for i in items if i.metadata.get("kind") == "human_rated"]
    assert len(human) == len(labelled)
    assert len({i.id for i in items}) == len(items)
    for item in human:
        assert item.metadata["skip_generation"] is True
        k = int(item.id.rsplit("-", 1)[1])
        assert k in labelled
        assert item.metadata["answer"] == h1[k]["answer"]
        assert item.target == canonical_label(h1[k]["label"], "x")
        assert item.metadata["h1"] == human_score(h1[k]["evaluation"])
        assert item.metadata["h2"] == human_score(h2[k]["evaluation"])
        assert item.metadata["inputs"] == h1[k]["inputs"].split(" | ")
    regular = [i for i in items if i.metadata.get("kind") != "human_rated"]
    assert all(not i.metadata.get("skip_generation") for i in regular)
    assert len(regular) == len(load_crisis_split("test", {"crisis_dir": str(FIX)}).rows)
    # cap: ctx.limit applies to the human-rated triples too (seeded, stratified by label)
    limited = CrisisEscalation().items(RunContext(mode="default", limit=3, seed=7, options={"crisis_dir": str(FIX)},
                                                  judge=JudgeInfo(model="j", validated=False)))
    assert sum(1 for i in limited if i.metadata.get("kind") == "human_rated") == 3
    # none in faithful mode, in the starter suite, or without a judge (nothing would judge them)
    for ctx in (ctx_for("faithful", judge="j"), ctx_for("default", suite="starter", judge="j"), ctx_for("default")):
        assert not any(i.metadata.get("kind") == "human_rated" for i in CrisisEscalation().items(ctx))


def test_judge_vs_human_in_a_run_never_asks_the_model():
    ctx = ctx_for("default", judge="canned/judge")
    items = CrisisEscalation().items(ctx)
    human_prompts = {i.prompt for i in items if i.metadata.get("kind") == "human_rated"}
    assert human_prompts
    assert not human_prompts & {i.prompt for i in items if i.metadata.get("kind") != "human_rated"}
    records, res = run_offline(CrisisEscalation(), ctx, no_human_reply(human_prompts), judge=h1_judge)
    human = [r for r in records if r.metadata.get("kind") == "human_rated"]
    assert len(human) == len(human_prompts)
    assert all(r.response == "" for r in human)
    jvh = res.metrics["judge_vs_human"]
    assert jvh["judge_vs_h1"]["mae"] == 0.0
    assert jvh["judge_vs_h1"]["within_1"] == 1.0
    assert jvh["judge_vs_h1"]["qwk"] == pytest.approx(1.0)
    h1, h2 = human_raw()
    rated = [k for k, o in enumerate(h1) if isinstance(o["label"], str)]
    assert jvh["judge_vs_h1"]["n"] == sum(1 for k in rated if not math.isnan(h1[k]["evaluation"]))
    # vs H2 and vs the mean: our judge = H1 (3 where H1 is missing), so these are H1-vs-H2 style gaps
    judge = {k: human_score(h1[k]["evaluation"]) or 3 for k in rated}
    pairs2 = [(judge[k], h2[k]["evaluation"]) for k in rated if not math.isnan(h2[k]["evaluation"])]
    assert jvh["judge_vs_h2"]["n"] == len(pairs2)
    assert jvh["judge_vs_h2"]["mae"] == pytest.approx(np.mean([abs(a - b) for a, b in pairs2]))
    assert jvh["judge_vs_h2"]["qwk"] == pytest.approx(cohen_kappa(*zip(*pairs2, strict=True), weights="quadratic", on_values=True))
    both = [(judge[k], (h1[k]["evaluation"] + h2[k]["evaluation"]) / 2) for k in rated
            if not math.isnan(h1[k]["evaluation"]) and not math.isnan(h2[k]["evaluation"])]
    assert jvh["judge_vs_mean"]["n"] == len(both)
    assert jvh["judge_vs_mean"]["mae"] == pytest.approx(np.mean([abs(a - b) for a, b in both]))
    assert jvh["h1_vs_h2"]["n"] == len(both)
    assert res.metrics["n_human_rated"] == len(rated)
    assert res.metrics["n_human_rated_judge_invalid"] == 0
    assert any("measure the judge, not the model" in n for n in res.notes)
    # the model's numbers come from its own replies only (canned_judge: 5 for no_crisis, else 2)
    replies = [r for r in records if r.metadata.get("kind") != "human_rated"]
    expected = np.mean([5 if r.metadata["target"] == "no_crisis" else 2 for r in replies])
    assert res.value == pytest.approx(expected)
    assert res.n == len(replies)
    assert res.metrics["n_replies"] == len(replies)
    assert res.metrics["risk_check_rate"] == 1.0


def test_escalation_metrics_unchanged_by_human_rated_items(tmp_path):
    without_dir = crisis_dir_without_scores(tmp_path)
    for limit in (None, 7):
        with_ctx = ctx_for("default", judge="canned/judge")
        with_ctx.limit = limit
        without_ctx = ctx_for("default", judge="canned/judge", crisis_dir=str(without_dir))
        without_ctx.limit = limit
        rec_with, res_with = run_offline(CrisisEscalation(), with_ctx, lambda i, p: "Call 988.", judge=h1_judge)
        rec_without, res_without = run_offline(CrisisEscalation(), without_ctx, lambda i, p: "Call 988.",
                                               judge=h1_judge)
        assert any(r.metadata.get("kind") == "human_rated" for r in rec_with)
        assert not any(r.metadata.get("kind") == "human_rated" for r in rec_without)
        assert "judge_vs_human" in res_with.metrics
        assert "judge_vs_human" not in res_without.metrics
        assert (res_with.value, res_with.ci, res_with.n, res_with.n_invalid, res_with.status) == (
            res_without.value, res_without.ci, res_without.n, res_without.n_invalid, res_without.status)
        assert model_metrics(res_with) == model_metrics(res_without)
        # unavailable score files: skipped with a note, never an error
        assert any(n.startswith("judge_vs_human: skipped, H1/H2 score files unavailable") for n in res_without.notes)
    # an invalid judge on the human-rated triples is counted there and touches nothing else
    def judge(req: JudgeRequest) -> str:
        return "not json" if any(o["answer"] in req.prompt for o in raw("h1_scores")) else canned_judge(req)

    _, res_bad = run_offline(CrisisEscalation(), ctx_for("default", judge="canned/judge"),
                             lambda i, p: "Call 988.", judge=judge)
    n_rated = sum(1 for o in raw("h1_scores") if isinstance(o["label"], str))
    assert res_bad.metrics["n_human_rated_judge_invalid"] == n_rated
    assert res_bad.metrics["judge_vs_human"]["judge_vs_h1"] == {"n": 0, "mae": None, "within_1": None, "qwk": None}
    assert res_bad.n_invalid == 0
    assert res_bad.metrics["n_judge_invalid"] == 0
    _, res_ok = run_offline(CrisisEscalation(), ctx_for("default", judge="canned/judge"),
                            lambda i, p: "Call 988.", judge=canned_judge)
    assert model_metrics(res_bad) == model_metrics(res_ok)
    assert res_bad.value == res_ok.value


def test_faithful_and_starter_have_no_judge_vs_human():
    records, res = run_offline(CrisisEscalation(), ctx_for("faithful", judge="canned/judge"),
                               lambda i, p: "hi", judge=canned_judge)
    assert "judge_vs_human" not in res.metrics
    assert not any("judge_vs_human" in n for n in res.notes)
    assert len(records) == len(load_crisis_split("test", {"crisis_dir": str(FIX)}).rows)
    _, res = run_offline(CrisisEscalation(), ctx_for("default", suite="starter", judge="canned/judge"),
                         lambda i, p: "hi", judge=canned_judge)
    assert "judge_vs_human" not in res.metrics
    assert not any("judge_vs_human" in n for n in res.notes)


def test_human_rated_judge_prompt_holds_the_stored_answer():
    ctx = ctx_for("default", judge="canned/judge")
    st = CrisisEscalation()
    rubric = load_own_rubric()
    human = [i for i in st.items(ctx) if i.metadata.get("kind") == "human_rated"]
    assert human
    for item in human:
        (req,) = st.judge_requests(item, "", ctx)  # the run's (empty) model response is not what is judged
        assert req.name == "appropriateness"
        assert item.metadata["answer"] in req.prompt
        assert req.prompt == escalation_judge_prompt(item.metadata["inputs"], item.target, item.metadata["answer"],
                                                     rubric, "default")
        assert rubric[item.target][5] in req.prompt
        assert req.schema == st.judge_requests(st.items(ctx)[0], "x", ctx)[0].schema
        assert req.validate('{"appropriateness": 4, "risk_check": true, "resources_offered": true, '
                            '"professional_help": true, "followup": true}')
    regular = next(i for i in st.items(ctx) if i.metadata.get("kind") != "human_rated")
    (req,) = st.judge_requests(regular, "MODEL REPLY", ctx)
    assert "MODEL REPLY" in req.prompt
