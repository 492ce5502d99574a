"""MentalBench suite: loader, reasoning split, judging, ensembles, export → align, Inspect runs."""

from __future__ import annotations

import csv
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from canned import canned_model
from trustmh.core import JudgeInfo, JudgeRequest, RunContext, TrustmhError
from trustmh.judges.ensemble import combine
from trustmh.models.providers import model_family
from trustmh.offline import run_offline
from trustmh.pillars.mentalbench.data import assign_conv_ids, load_mentalbench
from trustmh.pillars.mentalbench.diagnostics import retest_reliability
from trustmh.pillars.mentalbench.export import COLUMNS, export_long_table, human_long_table, long_rows
from trustmh.pillars.mentalbench.generation import MentalBenchGeneration
from trustmh.pillars.mentalbench.judging import parse_judge
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.sources import gen_status, source_family, split_reasoning
from trustmh.stats.agreement import krippendorff_alpha
from trustmh.stats.icc import icc_a1

FIXTURE = Path(__file__).parents[2] / "fixtures" / "mentalbench_small.csv"


def scores_json(vals: dict[str, int] | int, explanation: str = "fine") -> str:
    d = dict.fromkeys(ATTRIBUTES, vals) if isinstance(vals, int) else dict(vals)
    return json.dumps({**d, "Explanation": explanation})


# ------------------------------------------------------------------------------------------------ loader

def test_fixture_loader_counts_missing_nan_think_and_duplicates() -> None:
    data = load_mentalbench(FIXTURE, reference_contexts=None)
    c = data.counts
    assert c["rows"] == 12
    assert len(data.rows) == 12
    assert data.sources[0] == "original"
    assert len(data.sources) == 10
    # the empty cell and the literal `nan` are both missing; the literal is counted as such too
    assert c["missing"]["qwen_2"] == 2
    assert c["nan_literal"]["qwen_2"] == 1
    assert data.rows[2].responses["qwen_2"] is None
    assert data.rows[4].responses["qwen_2"] is None
    assert sum(c["missing"].values()) == 2
    # closed <think> (qwen_3), a lone </think> (ds_qwen) and an unclosed <think> (qwen_3, reasoning only)
    assert c["think_closed"]["qwen_3"] == 1
    assert c["think_closed"]["ds_qwen"] == 1
    assert c["think_unclosed"]["qwen_3"] == 1
    assert c["reasoning_only"]["qwen_3"] == 1
    # row 9 repeats row 2's context; the trailing newline of row 6 is kept in the text
    assert c["duplicate_contexts"] == 1
    assert [r.duplicate_of for r in data.rows].count(None) == 11
    assert data.rows[8].duplicate_of == 1
    assert data.rows[5].context.endswith("\n")
    # unknown columns kept as metadata; positional ConvIDs without reference contexts
    assert data.rows[0].extra["context_length"] == "13"
    assert [r.conv_id for r in data.rows] == [str(i) for i in range(1, 13)]
    assert data.counts["conv_id"] == {"verified": False}


def test_loader_requires_columns(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("context,response,other\nhello,hi,x\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"no model column.*other"):
        load_mentalbench(bad)
    worse = tmp_path / "worse.csv"
    worse.write_text("text,gpt-4o\nhello,hi\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"'context' and 'response'.*\['text', 'gpt-4o'\]"):
        load_mentalbench(worse)


def test_loader_parquet_and_jsonl_match_csv(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    with open(FIXTURE, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    cols = {k: [r[k] if r[k] != "" else None for r in rows] for k in rows[0]}
    pq.write_table(pa.table(cols), tmp_path / "mb.parquet")
    (tmp_path / "mb.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    ref = load_mentalbench(FIXTURE)
    for name in ("mb.parquet", "mb.jsonl"):
        got = load_mentalbench(tmp_path / name)
        assert [r.responses for r in got.rows] == [r.responses for r in ref.rows]
        assert got.counts["missing"] == ref.counts["missing"]


def test_conv_ids_verified_against_reference_contexts() -> None:
    data = load_mentalbench(FIXTURE)
    ref = [r.context for r in data.rows[:6]]
    ref[5] = ref[5].strip()  # trailing newline only: still a positional match
    ref[3], ref[4] = ref[4], ref[3]  # two rows swapped: matched on context
    ref[0] = "a different conversation"  # row 1 unmatched → row1
    assign_conv_ids(data, ref)
    ids = [r.conv_id for r in data.rows]
    assert ids[:6] == ["row1", "2", "3", "5", "4", "6"]
    assert ids[6:] == [str(i) for i in range(7, 13)]  # past the reference: positional
    assert data.counts["conv_id"] == {"verified": True, "positional": 3, "matched_on_context": 2, "unmatched": 1}


def test_offline_fallback_uses_mentalalign_contexts(data_dir: Path) -> None:
    from trustmh.pillars.mentalbench.align_data import read_workbook

    sheet = read_workbook(data_dir / "mentalalign" / "LLMs_as_a_judge" / "gpt-4o_llm_judge.xlsx", "judge")
    st = MentalBenchGeneration()
    ctx = RunContext(mode="faithful", seed=1, suite="mentalbench", limit=3)
    items = st.items(ctx)
    assert [i.id for i in items] == ["1:model", "2:model", "3:model"]  # head order, no reference replies
    assert items[1].metadata["context"] == sheet.contexts[1]
    assert "MentalAlign" in " ".join(items[0].metadata["data"]["notes"])
    ctx = RunContext(mode="default", seed=1, suite="mentalbench", limit=5)
    sample = [i.metadata["conv_id"] for i in st.items(ctx)]
    assert len(sample) == 5
    assert sample == sorted(sample, key=int)
    assert sample != ["1", "2", "3", "4", "5"]
    assert sample == [i.metadata["conv_id"] for i in st.items(ctx)]  # seeded
    # the fixture's contexts are not MentalAlign's: verified ids become row<n>, never a real ConvID
    ctx = RunContext(mode="faithful", suite="mentalbench", limit=2, options={"mentalbench_path": str(FIXTURE)})
    assert [i.id for i in st.items(ctx)] == ["row1:model", "row1:original", "row2:model", "row2:original"]


# ------------------------------------------------------------------------------------ reasoning/gen_status

@pytest.mark.parametrize(("raw", "text", "reasoning", "status"), [
    ("Plain reply.", "Plain reply.", "", "ok"),
    ("<think>plan</think>  Reply.", "Reply.", "plan", "ok"),
    ("<THINK>a</THINK>x<think>b</think>y", "xy", "a\nb", "ok"),
    ("planning first</think>Reply.", "Reply.", "planning first", "ok"),
    ("<think>never closed", "", "never closed", "reasoning_only"),
    ("Visible <think>tail", "Visible", "tail", "ok"),
    ("", "", "", "empty"),
    ("   \n", "", "", "empty"),
])
def test_split_reasoning_and_gen_status(raw: str, text: str, reasoning: str, status: str) -> None:
    split = split_reasoning(raw)
    assert split.text == text
    assert split.reasoning == reasoning
    assert gen_status(split) == status


def test_gen_status_truncated_and_error() -> None:
    assert gen_status(split_reasoning("cut off mid"), "max_tokens") == "truncated"
    assert gen_status(split_reasoning("<think>only"), "max_tokens") == "reasoning_only"
    assert gen_status(split_reasoning("x"), error=True) == "error"


def test_model_family() -> None:
    assert model_family("openai/gpt-4o-mini") == "openai"
    assert model_family("openai/o4-mini") == "openai"
    assert model_family("anthropic/claude-3-7-sonnet-20250219") == "anthropic"
    assert model_family("together/meta-llama/Llama-3.1-8B-Instruct") == "meta"
    assert model_family("hf/deepseek-ai/DeepSeek-R1-Distill-Llama-8B") == "deepseek"
    assert model_family("ollama/qwen3:4b") == "qwen"
    assert model_family("google/gemini-2.0-flash") == "google"
    assert source_family("gpt4omini") == "openai"
    assert source_family("ds_llama") == "deepseek"
    assert source_family("original") == "human"
    assert model_family("mockllm/model") is None


def test_parse_judge_statuses() -> None:
    ok = parse_judge(scores_json(4))
    assert set(ok["status"].values()) == {"ok"}
    assert ok["robust"]["Safety"] == 4.0
    prose = parse_judge("Here you go: " + scores_json({**dict.fromkeys(ATTRIBUTES, 3), "Safety": 6}))
    assert prose["status"]["Guidance"] == "recovered"
    assert prose["status"]["Safety"] == "out_of_range"
    assert prose["robust"]["Safety"] is None
    assert prose["strict"]["Guidance"] is None  # strict: JSON error
    assert set(parse_judge("")["status"].values()) == {"no_output"}
    assert set(parse_judge("no scores here")["status"].values()) == {"unparseable"}


def test_combine_aggregators() -> None:
    assert combine([2, 3], "mean") == (2.5, "ok")
    assert combine([2, 3], "median") == (2.5, "ok")
    assert combine([2, 3], "vote") == (3.0, "ok")  # median rounded half up
    assert combine([2, 3, 5], "vote") == (3.0, "ok")
    assert combine([4, None], "mean") == (None, "ensemble_incomplete")  # min_valid defaults to all
    assert combine([4, None], "mean", min_valid=1) == (4.0, "ok")
    with pytest.raises(TrustmhError):
        combine([1], "max")


# ----------------------------------------------------------------------------------- offline, ensembles

JA, JB = "openai/gpt-judge", "anthropic/claude-judge"


def _starter_ctx(judges: tuple[str, ...] | None = (JA, JB), **options: object) -> RunContext:
    opts = {"mentalbench_starter": "1", **options}
    return RunContext(mode="default", seed=3, suite="mentalbench", n_boot=300,
                      judge=JudgeInfo(model=JA, validated=False, members=judges or ()), options=opts,
                      model="openai/gpt-under-test")


def _grade(i: int) -> int:
    return 1 + i % 5


def _item_index(prompt: str) -> tuple[int, bool]:
    """(starter context index, whether the judged reply is the model's) from a judge prompt."""
    for i in range(10, 0, -1):
        if f"MODEL-REPLY-{i}." in prompt:
            return i - 1, True
    return -1, False


def _respond(item, prompt: str) -> str:  # noqa: ANN001
    k = int(item.id.split(":")[0].split("-")[1])
    return f"<think>drafting</think>MODEL-REPLY-{k}. Some caring words."


def test_offline_ensemble_means_agreement_and_self_preference() -> None:
    """Judge A (openai) and judge B (anthropic) agree exactly on the model's replies (grade g_i), and give the
    human reference 2 (A) and 3 (B). The model under test is an openai model."""
    ctx = _starter_ctx()

    def judge(req: JudgeRequest) -> str:
        i, is_model = _item_index(req.prompt)
        if is_model:
            return scores_json(_grade(i))
        return scores_json(2 if req.model == JA else 3)

    records, res = run_offline(MentalBenchGeneration(), ctx, _respond, judge)
    g = np.array([_grade(i) for i in range(10)], float)
    assert len(records) == 20
    assert res.value == pytest.approx(g.mean())  # ensemble mean of two agreeing judges
    m = res.metrics
    assert m["sources"]["original"]["mean7"] == pytest.approx(2.5)
    assert m["sources"]["model"]["Guidance"]["mean"] == pytest.approx(g.mean())
    assert m["css"] == pytest.approx(g.mean())
    assert m["ars"] == pytest.approx(g.mean())
    assert m["gen_status"]["ok"] == 10
    assert m["n_unparsed"] == 0
    ens = m["ensemble"]
    assert ens["members"] == [JA, JB]
    assert ens["aggregator"] == "mean"
    assert ens["n_incomplete"] == 0
    # Agreement among members, recomputed from the constructed scores: 10 model units (both g_i) and
    # 10 original units (2 vs 3).
    a_u, b_u = [], []
    for r in records:
        if r.score["source"] == "model":
            g_i = _grade(int(r.item_id.split(":")[0].split("-")[1]) - 1)
            a_u.append(g_i)
            b_u.append(g_i)
        else:
            a_u.append(2)
            b_u.append(3)
    a_u, b_u = np.array(a_u, float), np.array(b_u, float)
    want_alpha = krippendorff_alpha(np.stack([a_u, b_u]), "ordinal", value_domain=[1, 2, 3, 4, 5])
    want_icc = icc_a1(np.column_stack([a_u, b_u]))
    agree = ens["agreement"]
    assert agree["kripp_alpha_ordinal"]["Guidance"] == pytest.approx(want_alpha)
    assert agree["icc_a1"][f"{JA}|{JB}"]["Empathy"] == pytest.approx(want_icc)
    assert 0 < want_icc < 1
    # Self-preference: A on its own family (the openai model) minus A on the others (original).
    sp = m["self_preference"]
    assert sp[JA]["family"] == "openai"
    assert sp[JA]["same_family"] is True
    assert sp[JA]["diff"] == pytest.approx(g.mean() - 2.0)
    assert sp[JA]["relative"]["diff"] == pytest.approx(0.0 - (2.0 - 3.0))
    lo, hi = sp[JA]["ci"]
    assert lo <= sp[JA]["diff"] <= hi
    assert sp[JB]["same_family"] is False
    assert sp[JB]["diff"] is None  # no anthropic source
    assert any("same family" in n for n in res.notes)


def test_ensemble_min_valid_vote_and_parse_failures() -> None:
    def judge(req: JudgeRequest) -> str:
        i, is_model = _item_index(req.prompt)
        if req.model == JB and is_model and i == 0:
            return "I would rather not give numbers."
        return scores_json(2 if req.model == JA else 3)

    _, res = run_offline(MentalBenchGeneration(), _starter_ctx(), _respond, judge)
    m = res.metrics
    assert m["ensemble"]["n_incomplete"] == 7  # one reply, 7 attributes: B unparseable, min_valid=2
    assert m["parse_status"][JB]["Safety"] == {"ok": 19, "unparseable": 1}
    assert m["unparsed"][JB] == {"model": 7, "original": 0}
    assert m["n_unparsed"] == 7
    assert res.n_invalid == 1
    assert m["Guidance"] == pytest.approx(2.5)

    _, res = run_offline(MentalBenchGeneration(), replace(_starter_ctx(min_valid="1"), ensemble="vote"), _respond,
                         judge)
    m = res.metrics
    assert m["ensemble"]["n_incomplete"] == 0
    assert res.n_invalid == 0
    # vote: median of {2, 3} rounded half up = 3 on 9 replies; A alone (2) on the tenth
    assert m["Guidance"] == pytest.approx((9 * 3 + 2) / 10)


def test_no_visible_text_is_never_judged() -> None:
    calls: list[str] = []

    def respond(item, prompt: str) -> str:  # noqa: ANN001
        return "<think>thinking only" if item.id.startswith("starter-01") else "A reply."

    def judge(req: JudgeRequest) -> str:
        calls.append(req.prompt)
        return scores_json(4)

    ctx = _starter_ctx(judges=None, skip_original="1")
    records, res = run_offline(MentalBenchGeneration(), ctx, respond, judge)
    assert len(calls) == 9
    assert not any("thinking only" in c for c in calls)
    bad = next(r for r in records if r.item_id.startswith("starter-01"))
    assert bad.score["valid"] is False
    assert bad.score["gen_status"] == "reasoning_only"
    assert set(bad.score["ratings"][JA]["status"].values()) == {"no_response"}
    assert res.metrics["gen_status"]["reasoning_only"] == 1
    assert res.metrics["no_response"] == 1
    assert res.n == 10
    assert res.n_invalid == 1
    assert res.value == pytest.approx(4.0)


def test_test_retest_deterministic_judge_gives_icc_one() -> None:
    def judge(req: JudgeRequest) -> str:
        i, is_model = _item_index(req.prompt)
        return scores_json(_grade(i) if is_model else 3)

    ctx = _starter_ctx(judges=None, judge_repeats="3")
    records, res = run_offline(MentalBenchGeneration(), ctx, _respond, judge)
    assert set(records[0].judge_raw) == {f"{JA}@1", f"{JA}@2", f"{JA}@3"}
    tr = res.metrics["test_retest"][JA]
    assert tr["repeats"] == 3
    assert tr["identical_share"] == 1.0
    assert all(tr["icc_a1"][a] == pytest.approx(1.0) for a in [*ATTRIBUTES, "all"])
    # a judge that drifts between repeats is below 1
    drift = [np.array([[1, 2], [2, 3], [3, 4], [4, 5]], float), np.array([[2, 2], [2, 4], [4, 4], [4, 5]], float)]
    got = retest_reliability(drift, ["x", "y"])
    assert got["icc_a1"]["x"] == pytest.approx(icc_a1(np.column_stack([drift[0][:, 0], drift[1][:, 0]])))
    assert got["icc_a1"]["x"] < 1


def test_no_judge_is_not_computed() -> None:
    ctx = RunContext(suite="mentalbench", options={"mentalbench_starter": "1"})
    assert "no judge" in (MentalBenchGeneration().not_computed_reason(ctx) or "")


# -------------------------------------------------------------------------- export → trustmh align

def _fixture_ctx(mode: str = "default") -> RunContext:
    return RunContext(mode=mode, seed=0, suite="mentalbench", n_boot=200,
                      judge=JudgeInfo(model="openai/gpt-judge", validated=False),
                      options={"mentalbench_path": str(FIXTURE), "rescore": "1", "selection": "head",
                               "verify_conv_ids": "0"})


def _fixture_judge(req: JudgeRequest) -> str:
    # deterministic, varies with the reply: 1 + (sum of bytes of the reply) % 5, per attribute offset
    reply = req.prompt.split("<reply>\n")[1].split("\n</reply>")[0]
    base = sum(reply.encode()) % 5
    return scores_json({a: 1 + (base + j) % 5 for j, a in enumerate(ATTRIBUTES)})


def test_export_long_table_then_align(tmp_path: Path) -> None:
    from trustmh.cli.align import main as align_main

    ctx = _fixture_ctx()
    records, res = run_offline(MentalBenchGeneration(), ctx, lambda i, p: "OK", _fixture_judge)
    assert len(records) == 120
    assert res.status == "not_computed"  # no model under test in a rescore
    assert res.metrics["sources"]["gpt4o"]["n"] == 12
    paths = export_long_table(records, tmp_path)
    with open(paths["judge_long"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == COLUMNS
    assert len(rows) == 120 * 7
    assert {r["rater"] for r in rows} == {"openai/gpt-judge"}
    # default mode: the missing replies (qwen_2 rows 3 and 5) and the reasoning-only reply (qwen_3 row 4)
    # are not judged; their rows exist with status no_response and no score
    nr = {(r["item"], r["source"]) for r in rows if r["status"] == "no_response"}
    assert nr == {("3", "qwen_2"), ("5", "qwen_2"), ("4", "qwen_3")}
    assert all(r["score"] == "" for r in rows if r["status"] == "no_response")

    # A synthetic human table on the same items: the judge's score, nudged down on odd items.
    human = tmp_path / "human_long.csv"
    with open(human, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "source", "rater", "attribute", "score"])
        for r in rows:
            if r["score"]:
                s = int(r["score"])
                w.writerow([r["item"], r["source"], "human", r["attribute"],
                            max(1, s - 1) if int(r["item"]) % 2 else s])
    out = tmp_path / "align.json"
    code = align_main(["--human", str(human), "--judge", str(paths["judge_long"]), "--mode", "default",
                       "--out", str(out), "--stability-seeds", "0", "--n-boot", "200", "--no-html"])
    assert code == 0
    result = json.loads(out.read_text())
    cells = [c for c in result["cells"] if c["judge"] == "openai/gpt-judge"]
    assert {c["attribute"] for c in cells} == set(ATTRIBUTES)
    resp = [c for c in cells if c.get("level") == "response"]
    # 120 replies − 3 not judged − the judge's own family (an OpenAI judge: the gpt4o and gpt4omini replies)
    own = {(r["item"], r["source"]) for r in rows if r["source"] in ("gpt4o", "gpt4omini") and r["score"]}
    assert own
    assert resp
    assert all(c["n_pairs"] == 117 - len(own) for c in resp)
    assert all(c["icc_a1"] is not None and -1 <= c["icc_a1"] <= 1 for c in resp)
    assert all(c["bias"] > 0 for c in resp)  # humans were nudged down


def test_faithful_rescore_judges_published_text_as_is() -> None:
    seen: list[str] = []

    def judge(req: JudgeRequest) -> str:
        seen.append(req.prompt)
        return _fixture_judge(req)

    records, res = run_offline(MentalBenchGeneration(), _fixture_ctx("faithful"), lambda i, p: "OK", judge)
    assert len(seen) == 120  # every reply judged, as the original did
    assert sum("<reply>\nnan\n</reply>" in p for p in seen) == 2
    assert any("<think>Let me think" in p for p in seen)
    assert "Overall" in seen[0]
    assert any("'nan'" in n for n in res.notes)
    rows = long_rows(records)
    assert not any(r["status"] == "no_response" for r in rows)


def test_human_long_table_from_released_workbook(data_dir: Path, tmp_path: Path) -> None:
    out = human_long_table(data_dir / "mentalalign", tmp_path / "h.csv")
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1000 * 10 * 7
    # §1.3: 57 empty cells (7 attributes each) and 10 JSON nulls; zeros kept as numbers
    assert sum(r["status"] == "no_output" for r in rows) == 57 * 7
    assert sum(r["status"] == "missing_key" for r in rows) == 10
    assert sum(r["score"] == "0" for r in rows) == 231
    dropped = human_long_table(data_dir / "mentalalign", tmp_path / "h2.csv", exclude_misaligned=True)
    n2 = len(dropped.read_text().splitlines()) - 1
    assert n2 == (1000 - 19) * 70


# ------------------------------------------------------------------------------------------ Inspect

def _model_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
    return "OK" if "single word OK" in prompt else "<think>plan</think>MODEL-REPLY. Take one small step."


def _judge_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
    assert config.temperature == 0.0
    assert config.seed == 5
    if "MODEL-REPLY" in prompt:
        return "```json\n" + scores_json(4) + "\n```"
    return "I cannot rate this one."  # the reference replies: unparseable, counted


@pytest.mark.slow  # a run through Inspect at the fast lane's limit (2.5-3.1 s of CPU, more as a worker's first eval)
def test_inspect_run_on_starter_items(tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    data, code = run(RunOptions(model=canned_model(_model_reply), judge=canned_model(_judge_reply, "judge"),
                                suite="mentalbench", limit=3, seed=5, out=tmp_path, display="none", n_boot=200,
                                options={"mentalbench_starter": "1"}))
    assert code == 0
    sub = data["subtasks"]["mentalbench/generation"]
    assert sub["status"] == "ok"
    assert sub["value"] == pytest.approx(4.0)
    assert sub["n"] == 3
    m = sub["metrics"]
    assert all(m[a] == pytest.approx(4.0) for a in ATTRIBUTES)
    judge_name = next(iter(m["parse_status"]))
    assert m["parse_status"][judge_name]["Empathy"] == {"ok": 3, "unparseable": 3}
    assert m["unparsed"][judge_name] == {"model": 0, "original": 21}
    assert m["gen_status"]["ok"] == 3
    assert m["sources"]["original"]["mean7"] is None
    assert (tmp_path / "results.json").is_file()


def test_rescore_mentalbench_through_inspect(tmp_path: Path) -> None:
    from trustmh.cli.rescore_mentalbench import rescore_mentalbench

    def judge_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
        return _fixture_judge(JudgeRequest("j", prompt, lambda t: True))

    src = tmp_path / "src"
    src.mkdir()
    (src / "MentalBench-Align.csv").write_bytes(FIXTURE.read_bytes())
    out = tmp_path / "out"
    code = rescore_mentalbench(src, out, mode="default", seed=0,
                               judges=[canned_model(judge_reply, "judge")], limit=3,
                               options={"verify_conv_ids": "0", "mentalalign_dir": str(tmp_path / "none")},
                               n_boot=100)
    assert code == 0
    res = json.loads((out / "results.json").read_text())
    sub = res["subtasks"]["mentalbench/generation"]
    assert set(sub["metrics"]["sources"]) == {"original", "claude", "ds_llama", "ds_qwen", "gemini", "gpt4o",
                                              "gpt4omini", "llama_3", "qwen_2", "qwen_3"}
    with open(out / "judge_long.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 3 * 10 * 7
    assert {r["item"] for r in rows} == {"1", "2", "3"}
    assert sum(r["status"] == "no_response" for r in rows) == 7  # qwen_2 row 3 is empty
    assert not math.isnan(float(next(r["score"] for r in rows if r["status"] == "ok")))


def test_a_second_rescore_into_the_same_folder_judges_its_own_items(tmp_path: Path) -> None:
    """The rescore goes through the run's Inspect call (a resumable eval set): a second rescore with another
    --limit into the same --out judges its own rows, never the first one's logs."""
    from trustmh.cli.rescore_mentalbench import rescore_mentalbench

    def judge_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
        return _fixture_judge(JudgeRequest("j", prompt, lambda t: True))

    out = tmp_path / "out"
    for limit in (2, 1):
        rescore_mentalbench(FIXTURE, out, mode="default", seed=0, judges=[canned_model(judge_reply, "judge")],
                            limit=limit, options={"verify_conv_ids": "0", "mentalalign_dir": str(tmp_path / "none")},
                            n_boot=50, display="none")
    with open(out / "judge_long_all.csv", newline="") as fh:
        assert {r["item"] for r in csv.DictReader(fh)} == {"1"}


def test_mean_ensemble_flows_into_align_with_every_pair(tmp_path: Path) -> None:
    """Two judges one point apart: their mean is a half-point score on every item; it reaches judge_long.csv
    and align keeps every pair (none is dropped as 'not a whole number')."""
    from trustmh.cli.align import main as align_main

    ctx = _fixture_ctx()
    ctx.judge.members = ("openai/gpt-judge", "anthropic/claude-judge")
    ctx.ensemble = "mean"
    ctx.options.update(min_valid="2")

    def judge(req: JudgeRequest) -> str:
        reply = req.prompt.split("<reply>\n")[1].split("\n</reply>")[0]
        base = sum(reply.encode()) % 4 + (1 if req.model == "anthropic/claude-judge" else 0)
        return scores_json({a: 1 + base for a in ATTRIBUTES})

    records, _ = run_offline(MentalBenchGeneration(), ctx, lambda i, p: "OK", judge)
    paths = export_long_table(records, tmp_path)
    with open(paths["judge_long"], newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["rater_kind"] == "ensemble"]
    assert {r["rater"] for r in rows} == {"ensemble[openai/gpt-judge+anthropic/claude-judge]"}
    scored = [r for r in rows if r["score"]]
    assert len(scored) == 117 * 7
    assert all(float(r["score"]) % 1 == 0.5 for r in scored)
    human = tmp_path / "human_long.csv"
    with open(human, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["item", "source", "rater", "attribute", "score"])
        for r in scored:
            w.writerow([r["item"], r["source"], "human", r["attribute"], int(float(r["score"]) + 0.5)])
    ens = tmp_path / "ensemble_long.csv"
    with open(ens, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "align.json"
    assert align_main(["--human", str(human), "--judge", str(ens), "--mode", "default", "--out", str(out),
                       "--stability-seeds", "0", "--n-boot", "200", "--no-html"]) == 0
    result = json.loads(out.read_text())
    cells = [c for c in result["cells"] if c.get("level") == "response"]
    # self-exclusion by family: the ensemble holds an OpenAI and an Anthropic judge, so the replies of
    # gpt4o, gpt4omini and claude are left out (12 items each in the fixture)
    excluded = result["metadata"]["self_exclusion"]["ensemble[openai/gpt-judge+anthropic/claude-judge]"]
    assert sorted(excluded) == ["claude", "gpt4o", "gpt4omini"]
    kept = [r for r in scored if r["source"] not in excluded and r["attribute"] == "Empathy"]
    assert cells
    assert all(c["n_pairs"] == len(kept) for c in cells)
    assert len(kept) < 117
    # the half-up binning makes κ exact here (human = ensemble rounded half up)
    assert all(c["kappa_quadratic"] == pytest.approx(1.0) for c in cells)


def test_no_pairable_reply_writes_no_judge_long(tmp_path: Path) -> None:
    """Only the model's own replies judged (as in an offline run on contexts without their released replies):
    nothing to pair with the experts, so judge_long.csv is not written (rather than header-only);
    judge_long_all.csv still holds every row."""
    ctx = _starter_ctx(judges=None, skip_original="1")
    records, _ = run_offline(MentalBenchGeneration(), ctx, _respond, lambda req: scores_json(
        {a: 3 for a in ATTRIBUTES}))
    paths = export_long_table(records, tmp_path)
    assert "judge_long" not in paths
    assert not (tmp_path / "judge_long.csv").exists()
    assert len((tmp_path / "judge_long_all.csv").read_text().splitlines()) > 1


def test_rescore_from_accepts_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--from` may name the MentalBench file itself, not only its folder."""
    from trustmh.cli import main

    code = main(["rescore", "--format", "mentalbench", "--from", str(FIXTURE), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert "not a directory" not in err
    assert "no such file" not in err
    assert code == 2
    assert "judge" in err  # it got as far as asking for a judge
    assert main(["rescore", "--format", "mentalbench", "--from", str(tmp_path / "none.csv"), "--out",
                 str(tmp_path / "o")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_item_gen_status_uses_the_finish_reason() -> None:
    """items.jsonl and results.json agree: a reply cut by the token limit is 'truncated' per item too."""
    from trustmh.core import make_record

    sub = MentalBenchGeneration()
    item = sub.items(_starter_ctx())[0]
    score = sub.score(item, "A complete-looking but cut reply", None, _starter_ctx())
    assert score["gen_status"] == "ok"
    rec = make_record(sub, item, "A complete-looking but cut reply", score, finish_reason="max_tokens")
    assert rec.score["gen_status"] == "truncated"
    assert make_record(sub, item, "x", score, finish_reason="stop").score["gen_status"] == "ok"


def test_rescore_mentalbench_reads_the_csv_out_of_the_zip(tmp_path: Path) -> None:
    """MentalBench-100k is published as a zip holding one CSV: `--from` the zip itself works."""
    import zipfile

    from trustmh.cli.rescore_mentalbench import rescore_mentalbench

    def judge_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
        return _fixture_judge(JudgeRequest("j", prompt, lambda t: True))

    z = tmp_path / "MentalBench-100k.zip"
    with zipfile.ZipFile(z, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("MentalBench-100k/MentalBench-100k.csv", FIXTURE.read_bytes())
        zf.writestr("__MACOSX/MentalBench-100k/._MentalBench-100k.csv", b"\x00resource fork")
    out = tmp_path / "out"
    assert rescore_mentalbench(z, out, mode="default", seed=0, judges=[canned_model(judge_reply, "judge")],
                               limit=1, options={"verify_conv_ids": "0", "mentalalign_dir": str(tmp_path / "none")},
                               n_boot=50) == 0
    with open(out / "judge_long.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1 * 10 * 7


@pytest.mark.parametrize("bad", ["99", "0", "6", "-3", "2.5", '"high"', "true", "Infinity", "NaN"])
@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_a_judge_score_outside_1_to_5_is_counted_and_not_averaged(bad: str, mode: str) -> None:
    """The rescore's judges (faithful keeps the authors' strict parse, but not its lack of a range check):
    Empathy is 2 or 4 on the other replies, and a value that is not a score 1-5 is left out of its mean and
    counted under its parse status, never averaged."""
    def judge(req: JudgeRequest) -> str:  # the same reply is rated the same on every attempt
        reply = req.prompt.split("<reply>\n")[1].split("\n</reply>")[0]
        empathy = (bad, "2", "4")[sum(reply.encode()) % 3]
        return scores_json(3).replace('"Empathy": 3', f'"Empathy": {empathy}')

    records, res = run_offline(MentalBenchGeneration(), _fixture_ctx(mode), lambda i, p: "OK", judge)
    used = [r.score["scores"]["Empathy"] for r in records if r.score.get("scores")]
    assert sorted({v for v in used if v is not None}) == [2.0, 4.0]
    kept: dict[str, list[float]] = {}
    for r in records:
        if r.score.get("scores") and r.score["scores"]["Empathy"] is not None:
            kept.setdefault(r.score["source"], []).append(r.score["scores"]["Empathy"])
    means = {s: v["Empathy"]["mean"] for s, v in res.metrics["sources"].items() if s in kept}
    assert means == pytest.approx({s: float(np.mean(v)) for s, v in kept.items()})
    statuses = res.metrics["parse_status"][next(iter(res.metrics["parse_status"]))]["Empathy"]
    assert statuses.get("out_of_range", 0) + statuses.get("non_numeric", 0) == used.count(None) - statuses.get(
        "no_response", 0) > 0
