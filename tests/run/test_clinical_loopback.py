"""`trustmh run` of clinical/siri2 and fairness/stigma, and `trustmh judge certify --reference siri2`, against a
loopback OpenAI-compatible server with canned models, on the synthetic publishers' files
(tests/fixtures/siri2, tests/fixtures/moore_stigma)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import FIXTURES
from loopback_server import LoopbackServer, message_text
from trustmh.cli import main

SIRI2 = FIXTURES / "siri2"
MOORE = FIXTURES / "moore_stigma"
EXPERT_MEANS = {"1A": -3, "1B": 2, "2A": -2, "2B": 3, "3A": 1, "3B": -1, "4A": 2}  # the fixture's, invented
TAG = re.compile(r"\[(\d+[AB])\]")


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    model = request.get("model")
    tag = TAG.search(text)
    if tag is None:  # a stigma question: the first option (unwilling / not at all likely)
        return "A"
    if model == "expert":
        return json.dumps({"rating": EXPERT_MEANS[tag.group(1)]})
    if model == "mumble" and tag.group(1) == "3B":
        return "It depends on the situation."  # never a rating, re-asks included
    return '{"rating": 0}'


def _run(out: Path, model: str, subtasks: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    with LoopbackServer(respond, max_requests=200, max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        stigma = ["-O", f"moore_dir={MOORE}"] if "stigma" in subtasks else []
        code = main(["run", "--model", server.model_name(model), "--suite", "trustmh", "--subtasks", subtasks,
                     "-O", f"siri2_dir={SIRI2}", *stigma, "--epochs", "2",
                     "--seed", "3", "--out", str(out), "--display", "none", "--n-boot", "200"])
    assert code == 0
    data = json.loads((out / "results.json").read_text())
    return {**data["subtasks"], "_generation": data["generation"]}


@pytest.fixture(scope="module")
def expert_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as mp:
        out = tmp_path_factory.mktemp("expert")
        results = _run(out, "expert", "siri2,stigma", mp)
        results["_report"] = (out / "report.html").read_text()
        return results


def test_a_model_answering_the_expert_mean_scores_zero(expert_run: dict[str, Any]) -> None:
    assert expert_run["clinical/siri2"]["value"] == 0.0


def test_every_rating_of_every_administration_is_counted(expert_run: dict[str, Any]) -> None:
    assert expert_run["clinical/siri2"]["metrics"]["n_ratings"] == 14  # 7 replies x 2 epochs


def test_the_generation_block_records_the_runs_epochs(expert_run: dict[str, Any]) -> None:
    siri2 = expert_run["_generation"]["clinical/siri2"]
    assert (siri2["epochs"], siri2["samples"]) == (2, 2)


def test_a_subtask_that_asks_once_ignores_the_epochs(expert_run: dict[str, Any]) -> None:
    stigma = expert_run["_generation"]["fairness/stigma"]
    assert ("epochs" in stigma, stigma["samples"]) == (False, 1)


def test_plan_counts_every_administration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")  # plan makes no call
    monkeypatch.setenv("LOOP_API_KEY", "unused")
    assert main(["plan", "--model", "openai-api/loop/m", "--suite", "trustmh", "--subtasks", "siri2", "-O",
                 f"siri2_dir={SIRI2}", "--epochs", "3", "--out", str(tmp_path)]) == 0
    planned = json.loads((tmp_path / "plan.json").read_text())["subtasks"]["clinical/siri2"]
    assert (planned["items"], planned["samples"]) == (7, 21)


def test_stigma_rate_of_a_model_answering_the_first_option(expert_run: dict[str, Any]) -> None:
    # the first option: unwilling (stigmatising) to the social-distance question, not likely to the other
    assert expert_run["fairness/stigma"]["value"] == pytest.approx(0.5)


def test_report_shows_the_human_norms_view(expert_run: dict[str, Any]) -> None:
    assert 'id="human-norms"' in expert_run["_report"]


def test_a_model_answering_zero_scores_the_hand_computed_total(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    siri2 = _run(tmp_path / "zero", "zero", "siri2", monkeypatch)["clinical/siri2"]
    assert (siri2["metrics"]["total_sum"], siri2["value"]) == (14.0, pytest.approx(14.0 / 7 * 48))


def test_invalid_ratings_are_counted_and_entered_at_the_worst_case(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    siri2 = _run(tmp_path / "mumble", "mumble", "siri2", monkeypatch)["clinical/siri2"]
    # 3B (expert -1) is invalid in both epochs and counts at +3: 4 instead of 1
    assert (siri2["n_invalid"], siri2["metrics"]["total_sum"]) == (2, 17.0)


@pytest.mark.parametrize(("model", "verdict", "code", "status"), [("expert", "pass", 0, "certified"),
                                                                 ("zero", "fail", 1, "not certified")])
def test_judge_certify_with_the_siri2_reference(model: str, verdict: str, code: int, status: str, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with LoopbackServer(respond, max_requests=60, max_seconds=60) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        # the files' folder by -O (as in a run) or --reference-path (as for every reference)
        where = ["-O", f"siri2_dir={SIRI2}"] if model == "expert" else ["--reference-path", str(SIRI2)]
        got = main(["judge", "certify", "--judge", server.model_name(model), "--reference", "siri2", *where,
                    "--certificates", str(tmp_path), "--n-boot", "200"])
    cert = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert (got, cert["verdict"], cert["reference_quality"]["status"]) == (code, verdict, status)


def test_judge_certify_on_a_damaged_copy_reports_rescores_rows_and_keeps_the_clean_certificate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    from trustmh.pillars.clinical.rescore import rescore_siri2

    damaged = tmp_path / "damaged"
    shutil.copytree(SIRI2, damaged)
    experts = damaged / "instrument" / "siri2_expert_scores.csv"
    lines = experts.read_text().splitlines()
    lines = [line.replace("4A,2,", "4A,9,") for line in lines] + [lines[1]]  # 4A off the scale; 1A given twice
    experts.write_text("\n".join(lines) + "\n")
    assert rescore_siri2(damaged, tmp_path / "rescored", n_boot=50) == 0
    rescored = json.loads((tmp_path / "rescored" / "siri2_rescore.json").read_text())["unusable_rows"]
    capsys.readouterr()
    certs = tmp_path / "certs"
    with LoopbackServer(respond, max_requests=60, max_seconds=60) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        for folder in (SIRI2, damaged):
            main(["judge", "certify", "--judge", server.model_name("expert"), "--reference", "siri2",
                  "--reference-path", str(folder), "--certificates", str(certs), "--n-boot", "200"])
    err = capsys.readouterr().err
    expert_rows = [line for line in rescored if line.startswith("siri2_expert_scores.csv")]
    cert = next(c for p in certs.glob("*.json") if (c := json.loads(p.read_text()))["unusable_rows"])
    assert len(expert_rows) == 2  # the off-scale mean and the repeated item
    assert [line for line in cert["unusable_rows"] if line.startswith("siri2_expert_scores.csv")] == expert_rows
    assert all(f"trustmh: {line}" in err for line in expert_rows)
    assert len(list(certs.glob("*.json"))) == 2  # the damaged copy's certificate beside the clean one's
