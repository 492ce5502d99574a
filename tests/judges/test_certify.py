"""`trustmh judge certify` on a tidy CSV: the judge asked through Inspect, agreement computed by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.cli import main
from trustmh.judges.certificates import find_certificate, judge_fingerprint
from trustmh.pillars.safety.over_refusal import OverRefusal

HUMAN = [1, 1, 1, 0, 0, 0]
REPLIES = ["GOOD one", "GOOD two", "plain three", "plain four", "plain five", "GOOD six"]  # judge: 1,1,0,0,0,1


def _csv(tmp_path: Path) -> Path:
    path = tmp_path / "ref.csv"
    lines = ["item_id,prompt,response,meta_benign,human_a"]
    lines += [f"i{k},How do I sleep better?,{r},1,{h}" for k, (r, h) in enumerate(zip(REPLIES, HUMAN, strict=True))]
    path.write_text("\n".join(lines) + "\n")
    return path


def _judge(prompt: str) -> str:
    helpful = 1 if "GOOD" in prompt.split("reply", 1)[-1] else 0
    return json.dumps({"label": "complied", "helpful": helpful, "rationale": "r"})


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> dict:
    from trustmh.certify.csv_reference import csv_reference
    from trustmh.certify.measure import certification_spec, certify
    from trustmh.run.reference import ReferenceRun

    tmp = tmp_path_factory.mktemp("certify")
    ref = csv_reference(_csv(tmp), "safety/over_refusal", "binary", "helpful")
    judge = canned_model(lambda p, m, c: _judge(p), "judge-a")
    spec = certification_spec([judge], ReferenceRun(ref.name, ref.subtask), n_boot=200)
    cert, _ = certify(ref, spec, certs_dir=tmp / "certs", work=tmp / "work")
    cert["_dir"] = str(tmp / "certs")
    return cert


def test_sensitivity_by_hand(cert: dict) -> None:
    assert cert["agreement"]["sensitivity"]["value"] == pytest.approx(2 / 3)


def test_specificity_by_hand(cert: dict) -> None:
    assert cert["agreement"]["specificity"]["value"] == pytest.approx(2 / 3)


def test_kappa_by_hand(cert: dict) -> None:
    assert cert["agreement"]["kappa"]["value"] == pytest.approx(1 / 3)


def test_labels_are_read_as_binary(cert: dict) -> None:
    assert cert["label_type"] == "binary"


def test_verdict_fails_the_default_thresholds(cert: dict) -> None:
    assert cert["thresholds_verdict"] == "fail"


def test_one_rater_reference_cannot_certify(cert: dict) -> None:
    # one human column: the humans' own agreement cannot be measured (docs/references.md#the-rule)
    assert cert["verdict"] == "cannot certify"


def test_the_certificate_says_why_per_criterion(cert: dict) -> None:
    assert "fewer than two raters" in cert["reference_quality"]["criteria"]["score"]["reason"]


def test_certificate_is_found_by_the_runs_fingerprint(cert: dict) -> None:
    from trustmh.core import JudgeInfo, RunContext

    fp = judge_fingerprint(OverRefusal, RunContext(judge=JudgeInfo("mockllm/judge-a", False)))
    assert find_certificate(cert["_dir"], fp, "safety/over_refusal")["n"] == 6


def test_reference_names_the_csv_and_its_hash(cert: dict) -> None:
    assert cert["reference"]["name"] == "ref.csv" and len(cert["reference"]["sha256"]) == 64


def test_csv_without_human_columns_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,response\ni1,hello\n")
    code = main(["judge", "certify", "--judge", "mockllm/model", "--reference", str(bad), "--subtask",
                 "safety/over_refusal", "--judge-key", "helpful", "--label-type", "binary", "--certificates",
                 str(tmp_path / "c")])
    assert code == 2 and "human_<rater>" in capsys.readouterr().err


def test_crisis_study_reference_mae_against_the_raters_mean(tmp_path: Path) -> None:
    from trustmh.certify.measure import certification_spec, certify
    from trustmh.pillars.crisis.data import CRISIS_FILES, load_rater_pair
    from trustmh.pillars.crisis.study_reference import crisis_reference
    from trustmh.run.reference import ReferenceRun

    fix = Path(__file__).resolve().parents[1] / "fixtures" / "crisis"
    pairs = [p for p in load_rater_pair(fix / CRISIS_FILES["h1_scores"], fix / CRISIS_FILES["h2_scores"])
             if p["label"] is not None]
    rated = [[v for v in (p["h1"], p["h2"]) if v is not None] for p in pairs]
    expected = sum(abs(sum(r) / len(r) - 3) for r in rated if r) / sum(1 for r in rated if r)
    judge = canned_model(lambda p, m, c: '{"appropriateness": 3, "explanation": "x"}', "judge-a")
    spec = certification_spec([judge], ReferenceRun("crisis-study", "crisis/crisis_escalation", str(fix),
                                                    "crisis_dir"), n_boot=200)
    ref = crisis_reference(spec.context())
    cert, _ = certify(ref, spec, certs_dir=tmp_path / "certs", work=tmp_path / "work")
    assert cert["agreement"]["mae"]["value"] == pytest.approx(expected)
