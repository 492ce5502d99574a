"""`trustmh judge certify --reference mentalalign`: the MentalBench judge, asked through a loopback
OpenAI-compatible server exactly as a run asks it, against synthetic MentalAlign-shaped expert ratings;
agreement per attribute computed by hand."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main
from trustmh.judges.certificates import worst_attribute
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.run.anchors import ANCHOR_REPLIES

SOURCES = ["original", "claude", "ds_llama", "ds_qwen", "gemini", "gpt4o", "gpt4omini", "llama_3", "qwen_2",
           "qwen_3"]
LEADING_SPACE = {"claude", "ds_llama", "gpt4o"}  # as in the released file, some headers start with a space


def context(k: int) -> str:
    return f"Synthetic message {k}: I sleep badly before exams and feel tired all day."


# (conv, source) -> (expert score of every attribute but Safety, expert Safety, the judge's score or None for
# an unreadable judge reply)
RATED = {
    (1, "original"): (4, 5, 4),
    (1, "gemini"): (3, 5, 5),
    (1, "qwen_3"): (2, 1, 2),
    (2, "original"): (5, 5, 4),
    (2, "qwen_3"): (1, 2, None),
    (3, "original"): (3, 4, 3),
    (3, "gemini"): (4, 5, 4),
}


def reply(conv: int, source: str) -> str:
    judge = RATED.get((conv, source), (0, 0, 3))[2]
    marker = "[BAD]" if judge is None else f"[J={judge}]"
    return f"Synthetic reply {marker} from {source} to message {conv}: a short routine may help you rest."


def _expert_cell(conv: int, source: str) -> str | None:
    if (conv, source) == (2, "gemini"):
        return json.dumps(dict.fromkeys(ATTRIBUTES, 0))  # an all-zero cell: no valid rating
    if (conv, source) not in RATED:
        return json.dumps(dict.fromkeys(ATTRIBUTES, 3))
    rest, safety, _ = RATED[(conv, source)]
    return json.dumps({a: (safety if a == "Safety" else rest) for a in ATTRIBUTES})


def _xlsx(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(header)
    for r in rows:
        ws.append(r)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)


def build(root: Path) -> tuple[Path, Path]:
    """(MentalAlign folder, MentalBench CSV). Conversation 4's expert row holds conversation 3's context (the
    released file's misaligned rows); conversation 3's qwen_3 reply is reasoning only; the text table has
    only the original, Gemini and Qwen-3 replies, and one conversation more than the experts rated."""
    ma = root / "mentalalign"
    human_rows = [[k, context(3) if k == 4 else context(k)] + [_expert_cell(k, s) for s in SOURCES]
                  for k in range(1, 5)]
    _xlsx(ma / "Human_Judge" / "Human_judge.xlsx",
          ["ConvID", "context"] + [(" " if s in LEADING_SPACE else "") + f"human_response_{s}" for s in SOURCES],
          human_rows)
    _xlsx(ma / "LLMs_as_a_judge" / "gpt-4o_llm_judge.xlsx",
          ["ConvID", "context"] + [f"judge_response_{s}" for s in SOURCES],
          [[k, context(k)] + [None] * len(SOURCES) for k in range(1, 5)])
    import csv

    texts = root / "MentalBench-small.csv"
    with open(texts, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["context", "response", "Gemini", "Qwen-3"])
        for k in range(1, 6):  # conversation 5 is in the texts only: no expert rated it
            qwen = "<think>only reasoning here</think>" if k == 3 else reply(k, "qwen_3")
            w.writerow([context(k), reply(k, "original"), reply(k, "gemini"), qwen])
    return ma, texts


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "[BAD]" in text:
        return "I would rather not give numbers for this one."
    marked = re.search(r"\[J=(\d)\]", text)
    # the certification's anchor items (stored replies of trustmh's own, no marker) get a steady middle score
    k = int(marked.group(1)) if marked else 3
    return json.dumps({**dict.fromkeys(ATTRIBUTES, k), "Explanation": "synthetic"})


def _certify(tmp: Path, server: LoopbackServer, *extra: str) -> tuple[int, dict]:
    ma, texts = build(tmp)
    certs = tmp / "certs"
    code = main(["judge", "certify", "--judge", server.model_name("judge"), "--reference", "mentalalign",
                 "--reference-path", str(texts), "-O", f"mentalalign_dir={ma}", "--certificates", str(certs),
                 "--n-boot", "200", "--timeout", "30", "--max-retries", "1", *extra])
    (path,) = certs.glob("*.json")
    return code, json.loads(path.read_text())


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("ma")
    with pytest.MonkeyPatch.context() as mp, LoopbackServer(respond, max_requests=60, max_seconds=120) as server:
        for key, value in server.env().items():
            mp.setenv(key, value)
        code, cert = _certify(tmp, server)
        requests = [r for r in server.chat_requests if r.status == 200]
    return {"code": code, "cert": cert, "requests": requests, "tmp": tmp}


def _attr(run: dict, attr: str) -> dict:
    return run["cert"]["per_attribute"][attr]["agreement"]


def test_every_rated_reply_with_a_text_is_judged(run: dict) -> None:
    texts = {message_text(r.json["messages"][-1]) for r in run["requests"]}
    # the reference's replies carry a marker; the certification's anchor items (trustmh's own) do not
    assert len({t for t in texts if "[J=" in t or "[BAD]" in t}) == 7


def test_the_anchors_read_the_texts_the_certificate_reads(run: dict) -> None:
    # only the texts file holds conversation 5 (no expert rated it): the registry's copy or the workbooks do not
    anchored = {message_text(r.json["messages"][-1]) for r in run["requests"]
                if ANCHOR_REPLIES["brushed_off"] in message_text(r.json["messages"][-1])}
    assert any(context(5) in text for text in anchored)


def test_unreadable_judge_reply_is_asked_again_as_a_run_does(run: dict) -> None:
    assert sum("[BAD]" in message_text(r.json["messages"][-1]) for r in run["requests"]) > 1


def test_certificate_counts_the_seven_rated_replies(run: dict) -> None:
    assert run["cert"]["n"] == 7


def test_reader_counts_what_it_left_out(run: dict) -> None:
    assert run["cert"]["reference_counts"]["left_out"] == {
        "no_text_row": 0, "context_differs": 10, "reply_missing": 21, "reasoning_only": 1,
        "no_expert_rating": 1}


def test_unreadable_judge_reply_is_counted_not_dropped(run: dict) -> None:
    assert run["cert"]["n_judge_invalid"] == 1


def test_mae_by_hand(run: dict) -> None:
    # Guidance: experts 4,3,2,5,1,3,4; judge 4,5,2,4,(unreadable: 5, the end farthest from 1),3,4
    assert _attr(run, "Guidance")["mae"]["value"] == pytest.approx(7 / 7)


def test_within_1_by_hand(run: dict) -> None:
    assert _attr(run, "Guidance")["within_1"]["value"] == pytest.approx(5 / 7)


def test_weighted_kappa_by_hand(run: dict) -> None:
    # 1 - sum (h-j)^2 / (sum_i sum_k (h_i - j_k)^2 / n) = 1 - 21 / (149 / 7)
    assert _attr(run, "Guidance")["weighted_kappa"]["value"] == pytest.approx(2 / 149)


def test_safety_mae_by_hand(run: dict) -> None:
    # Safety: experts 5,5,1,5,2,4,5; judge 4,5,2,4,(unreadable: 5),3,4
    assert _attr(run, "Safety")["mae"]["value"] == pytest.approx(8 / 7)


def test_safety_within_1_by_hand(run: dict) -> None:
    assert _attr(run, "Safety")["within_1"]["value"] == pytest.approx(6 / 7)


def test_every_attribute_has_its_figures(run: dict) -> None:
    assert list(run["cert"]["per_attribute"]) == list(ATTRIBUTES)


def test_headline_figure_names_its_attribute(run: dict) -> None:
    mae = run["cert"]["agreement"]["mae"]
    assert mae["value"] == run["cert"]["per_attribute"][mae["attribute"]]["agreement"]["mae"]["value"]


def test_intervals_are_seeded_bootstraps(run: dict) -> None:
    assert _attr(run, "Safety")["mae"]["method"] == "seeded bootstrap (200, 0)"


def test_thresholds_verdict_fails(run: dict) -> None:
    assert run["cert"]["thresholds_verdict"] == "fail"


def test_one_expert_rating_per_reply_cannot_certify_and_exit_code_says_so(run: dict) -> None:
    # MentalAlign publishes one expert rating per reply: the experts' own agreement cannot be measured
    assert (run["cert"]["verdict"], run["code"]) == ("cannot certify", 3)


def test_every_attribute_is_listed_as_cannot_certify(run: dict) -> None:
    statuses = {a: c["status"] for a, c in run["cert"]["reference_quality"]["criteria"].items()}
    assert statuses == dict.fromkeys(run["cert"]["attributes"], "reference cannot certify")


def test_judge_is_asked_the_runs_prompt(run: dict) -> None:
    from trustmh.prompts import render

    first = next(r for r in run["requests"] if "[J=4] from original to message 1" in
                 message_text(r.json["messages"][-1]))
    expected = render("mentalbench_judge", context=context(1), response=reply(1, "original"))
    assert message_text(first.json["messages"][-1]) == expected


def test_judge_is_asked_at_temperature_zero(run: dict) -> None:
    assert {r.json["temperature"] for r in run["requests"]} == {0}


def test_reference_is_public_and_hashed(run: dict) -> None:
    ref = run["cert"]["reference"]
    assert (ref["name"], ref["source"], len(ref["sha256"])) == ("mentalalign-experts", "public", 64)


@pytest.mark.slow  # judges every MentalBench run on loopback: 6 s of CPU
def test_fingerprint_is_the_mentalbench_runs(run: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `trustmh run --suite mentalbench` with the same judge records the certificate's fingerprint."""
    tmp = run["tmp"]
    out = tmp / "run"
    # the run makes 62 or 63 calls (counted; the comparison judge's re-asks vary by one), 48 of them judging the
    # anchors (every judged run re-judges its anchors): a call past 70 is a stall and fails the test at once,
    # where a cap of 40 once waited out the 30 s timeout unseen
    with LoopbackServer(lambda m, r: respond(m, r) if "Synthetic reply" in message_text(m[-1])
                        else "Synthetic reply [J=3]: rest well.", max_requests=70, max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        main(["run", "--model", server.model_name("model"), "--judge", server.model_name("judge"), "--suite",
              "mentalbench", "--limit", "1", "--out", str(out), "--display", "none", "--n-boot", "200",
              "-O", f"mentalbench_path={tmp / 'MentalBench-small.csv'}", "-O",
              f"mentalalign_dir={tmp / 'mentalalign'}", "--timeout", "30", "--max-retries", "1"])
    results = json.loads((out / "results.json").read_text())
    assert results["subtasks"]["mentalbench/generation"]["judge"]["fingerprint"] == run["cert"]["fingerprint"]


def test_limit_draws_a_seeded_sample_stratified_by_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(respond, max_requests=60, max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        _, cert = _certify(tmp_path, server, "--limit", "3", "--seed", "5")
        found = (re.search(r"from (\w+) to message", message_text(r.json["messages"][-1]))
                 for r in server.chat_requests if r.status == 200)
        sources = sorted({m.group(1) for m in found if m})  # the anchor items (trustmh's own) carry no source
    assert (cert["n"], sources) == (3, ["gemini", "original", "qwen_3"])


def test_without_the_texts_the_reader_says_so_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture) -> None:
    ma, _ = build(tmp_path)
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    code = main(["judge", "certify", "--judge", "mockllm/model", "--reference", "mentalalign", "-O",
                 f"mentalalign_dir={ma}", "--certificates", str(tmp_path / "c")])
    err = capsys.readouterr().err.strip()
    assert (code, len(err.splitlines()), "not the rated replies" in err) == (2, 1, True)


def test_weakest_attribute_is_the_headline() -> None:
    per = {"A": {"agreement": {"mae": {"value": 0.5, "ci": [0.4, 0.9]}, "icc_a1": {"value": 0.7, "ci": [0.6, 0.8]}}},
           "B": {"agreement": {"mae": {"value": 0.6, "ci": [0.5, 0.7]}, "icc_a1": {"value": 0.8, "ci": [0.5, 0.9]}}}}
    got = worst_attribute(per)
    assert (got["mae"]["attribute"], got["icc_a1"]["attribute"]) == ("A", "B")


@pytest.mark.slow
def test_certify_in_batch_mode_gives_the_live_certificate(run: dict, tmp_path: Path) -> None:
    from batch_server import BatchServer

    with pytest.MonkeyPatch.context() as mp, BatchServer(respond) as server:
        for key, value in {**server.env(), "TRUSTMH_BATCH_TICK": "0.1", "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(key, value)
        ma, texts = build(tmp_path)
        certs = tmp_path / "certs"
        main(["judge", "certify", "--judge", "openai/gpt-4o", "--reference", "mentalalign", "--reference-path",
              str(texts), "-O", f"mentalalign_dir={ma}", "--certificates", str(certs), "--n-boot", "200",
              "--max-retries", "1", "--batch"])
        (path,) = certs.glob("*.json")
        cert = json.loads(path.read_text())
    assert (cert["agreement"], len(server.live_bodies), len(server.answered_bodies) > 0) == (
        run["cert"]["agreement"], 0, True)
