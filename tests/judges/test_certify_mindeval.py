"""`trustmh judge certify --reference mindeval` on the synthetic MindEval-layout fixture: the rubric judge of
conversation/simulated_patient asked about each stored conversation through Inspect, then the
reference-quality rule per criterion (tests/fixtures/mindeval: clinicians agree on clinical accuracy and do
not agree at all on AI-specific communication)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.judges.reference_quality import CANNOT_CERTIFY, NOT_CERTIFIED, TOO_SMALL
from trustmh.pillars.conversation.mindeval import ANNOTATIONS, CRITERIA, read_annotations
from trustmh.pillars.conversation.scoring import RUBRIC_KEYS

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "mindeval"
CONV = re.compile(r"\(profile (\d+), (model-[a-z])\)")


def _clinician(rater: str) -> dict[str, dict[str, float | None]]:
    ann = read_annotations(FIXTURE / ANNOTATIONS)
    per_key = {key: ann.by_criterion(key) for key in CRITERIA}
    return {cid: {key: per_key[key][cid][rater] for key in CRITERIA} for cid in per_key["clinical_accuracy"]}


def _certify(tmp: Path, reply) -> dict:  # noqa: ANN001
    from trustmh.certify.measure import certification_spec, certify
    from trustmh.pillars.conversation.mindeval import SIMULATED_PATIENT
    from trustmh.pillars.conversation.mindeval_reference import mindeval_reference
    from trustmh.run.reference import ReferenceRun

    judge = canned_model(lambda p, m, c: reply(p), "judge-a")
    spec = certification_spec([judge], ReferenceRun("mindeval", SIMULATED_PATIENT), n_boot=200)
    ref = mindeval_reference(spec.context(), str(FIXTURE))
    cert, _ = certify(ref, spec, certs_dir=tmp / "certs", work=tmp / "work")
    return cert


def _copy_of(rater: str):  # noqa: ANN202
    """A judge that gives clinician `rater`'s ratings (rounded half up to the integer the schema allows)."""
    ratings = _clinician(rater)

    def reply(prompt: str) -> str:
        k, model = CONV.search(prompt).groups()
        row = ratings[f"conv-{k}-{model}"]
        return json.dumps({key: int((row[key] or 3) + 0.5) for key in RUBRIC_KEYS})

    return reply


@pytest.fixture(scope="module")
def copying(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _certify(tmp_path_factory.mktemp("copy"), _copy_of("C1"))


@pytest.fixture(scope="module")
def constant(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _certify(tmp_path_factory.mktemp("constant"), lambda p: json.dumps(dict.fromkeys(RUBRIC_KEYS, 4)))


def _status(cert: dict, key: str) -> str:
    return cert["reference_quality"]["criteria"][key]["status"]


def test_every_judgeable_conversation_is_judged(copying: dict) -> None:
    assert copying["n"] == 31  # 32 conversations read, one without messages


def test_copying_a_clinician_where_clinicians_disagree_cannot_be_certified(copying: dict) -> None:
    assert _status(copying, "ai_communication") == CANNOT_CERTIFY


def test_the_certificate_says_why(copying: dict) -> None:
    reason = copying["reference_quality"]["criteria"]["ai_communication"]["reason"]
    assert "the reference cannot certify this criterion" in reason and "does not clear the floor 0.5" in reason


def test_copying_a_clinician_where_clinicians_agree_on_31_conversations_finds_the_reference_too_small(
        copying: dict) -> None:
    # issue 41: 31 conversations cannot certify even a human-level judge (its power is far below 0.8)
    criterion = copying["reference_quality"]["criteria"]["clinical_accuracy"]
    assert (criterion["status"], criterion["reason"].startswith(TOO_SMALL)) == (CANNOT_CERTIFY, True)


def test_never_a_pass_while_a_criterion_cannot_be_certified(copying: dict) -> None:
    assert copying["verdict"] != "pass"


def test_a_constant_judge_is_not_certified_where_clinicians_agree(constant: dict) -> None:
    assert _status(constant, "clinical_accuracy") == NOT_CERTIFIED


def test_a_constant_judge_fails(constant: dict) -> None:
    assert constant["verdict"] == "fail"


def test_the_certificate_is_the_simulated_patient_judges(copying: dict) -> None:
    assert copying["subtask"] == "conversation/simulated_patient"


def test_the_reference_is_public_and_hashed(copying: dict) -> None:
    assert (copying["reference"]["name"], len(copying["reference"]["sha256"])) == ("mindeval-clinicians", 64)


def test_mindeval_is_found_by_its_name() -> None:
    from trustmh.certify.registry import reference_sources

    assert reference_sources()["mindeval"].subtask == "conversation/simulated_patient"


def test_the_bootstrap_resamples_member_profiles(copying: dict) -> None:
    assert "clusters" in copying["reference_quality"]["criteria"]["clinical_accuracy"]["method"]
