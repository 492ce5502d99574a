"""`trustmh judge certify --reference moore-interjections` on the synthetic copy of the publisher's layout,
judged through a loopback server: a judge replaying GPT-4o's published verdicts is certified, a constant judge
is not, and where the annotators do not agree the certificate says the reference cannot certify."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import FIXTURES
from loopback_server import LoopbackServer, message_text
from trustmh.certify.measure import certification_spec
from trustmh.cli import main
from trustmh.core import JudgeInfo, RunContext
from trustmh.data.rows import RowReport
from trustmh.judges.certificates import judge_fingerprint
from trustmh.judges.reference_quality import CANNOT_CERTIFY, TOO_SMALL
from trustmh.judges.references import ReferenceRequest
from trustmh.pillars.crisis.interjections import Interjections
from trustmh.pillars.crisis.moore import annotated_replies
from trustmh.pillars.crisis.moore_reference import moore_reference
from trustmh.run.reference import ReferenceRun

PUBLISHER = FIXTURES / "moore_interjections" / "publisher"
REAL = Path(os.environ.get("TRUSTMH_REFS_DIR", "/work/refs")) / "jlcmoore+llms-as-therapists"


def replaying(root: Path) -> Any:
    """A judge that gives, for each reply, the verdict GPT-4o published for it, in the asked judge's terms."""
    replies, _ = annotated_replies(root, RowReport())

    def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
        prompt = message_text(messages[-1])
        r = next((r for r in replies if r.reply.strip() in prompt), None)
        if r is None:  # an anchor item (our stored replies, judged beside the reference's): any readable verdict
            return json.dumps({"answer": "yes"})
        ok = r.published_judge == r.appropriate_answer
        if "The question about the reply" in prompt:
            return json.dumps({"answer": r.published_judge})
        if '"appropriateness"' in prompt:
            return json.dumps({"appropriateness": 4 if ok else 1, "risk_check": False, "resources_offered": False,
                               "professional_help": False, "followup": False})
        return json.dumps({"confirmation": 0 if ok else 2, "harm_enablement": 0, "safety_intervention": False})

    return respond


def constant(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return json.dumps({"answer": "no"})


def certify_cli(respond: Any, root: Path, certs: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> int:
    with LoopbackServer(respond, max_requests=200, max_seconds=180) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        return main(["judge", "certify", "--judge", server.model_name("judge"), "--reference", "moore-interjections",
                     "--reference-path", str(root), "--certificates", str(certs), "--n-boot", "500", *extra])


def certificate(certs: Path) -> dict[str, Any]:
    (path,) = certs.glob("*.json")
    return json.loads(path.read_text())


def test_judge_replaying_gpt4o_on_40_replies_finds_the_reference_too_small(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # issue 41: 40 replies to a few interjections cannot certify even a judge as good as a third annotator
    code = certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch)
    cert = certificate(tmp_path)
    assert (code, cert["reference_quality"]["status"]) == (3, CANNOT_CERTIFY)
    assert TOO_SMALL in capsys.readouterr().out
    # the certificate is the run's judge: the same fingerprint as crisis/interjections asked in a run
    assert cert["fingerprint"] == judge_fingerprint(Interjections, certification_spec(
        ["openai-api/loop/judge"], ReferenceRun("moore-interjections", Interjections.id)).context())


def test_constant_judge_is_not_certified(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = certify_cli(constant, PUBLISHER, tmp_path, monkeypatch)
    cert = certificate(tmp_path)
    assert code == 1
    assert (cert["verdict"], cert["reference_quality"]["status"]) == ("fail", "not certified")


def test_annotators_who_disagree_cannot_certify_even_a_faithful_judge(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # on the synthetic suicidal-ideation replies the annotators disagree once in 19: their agreement's lower
    # bound is under the floor, so the crisis judge gets no pass however well it agrees
    code = certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch, "--subtask", "crisis/crisis_escalation")
    q = certificate(tmp_path)["reference_quality"]
    assert code == 3  # "cannot certify": said apart from a failed judge (1)
    assert q["status"] == "reference cannot certify"
    assert q["humans"]["value"] is not None


def test_each_judge_reads_its_conditions_only() -> None:
    ctx = RunContext(mode="default", judge=JudgeInfo(model="j", validated=False))
    delusion = moore_reference(ctx, ReferenceRequest(path=str(PUBLISHER), subtask="conversation/delusion"))
    every = moore_reference(ctx, ReferenceRequest(path=str(PUBLISHER)))
    assert {it.metadata["condition"] for it in delusion.items} == {"delusions"}
    assert (len(delusion.items), len(every.items)) == (10, 40)


def test_other_subtask_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["judge", "certify", "--judge", "openai-api/loop/judge", "--reference", "moore-interjections",
                 "--reference-path", str(PUBLISHER), "--subtask", "safety/over_refusal"])
    assert code == 2
    assert "certifies crisis/interjections or crisis/crisis_escalation or conversation/delusion" in \
        capsys.readouterr().err


needs_real = pytest.mark.skipif(not (REAL / "interjection_prompts.py").is_file(),
                                reason="the publisher's files are not here (set TRUSTMH_REFS_DIR)")


@needs_real
def test_real_files_delusion_annotators_cannot_certify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code = certify_cli(replaying(REAL), REAL, tmp_path, monkeypatch, "--subtask", "conversation/delusion")
    assert code == 3
    assert certificate(tmp_path)["reference_quality"]["status"] == "reference cannot certify"


def test_limit_is_honoured_and_the_result_is_a_trial_on_the_whole_references_agreement(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch, "--limit", "4")
    (path,) = (tmp_path / "trials").glob("*.json")
    cert = json.loads(path.read_text())
    everyone = len(annotated_replies(PUBLISHER, RowReport())[0])
    quality = cert["reference_quality"]
    # the judge saw 4 replies; the annotators' agreement is over every annotated reply
    assert (cert["n"], quality["n_judged_items"], quality["n_reference_items"]) == (4, 4, everyone)


def test_a_trial_is_never_stored_as_the_certificate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch, "--limit", "4")
    assert (list(tmp_path.glob("*.json")), "trial:" in capsys.readouterr().out) == ([], True)


def test_the_bootstrap_draws_interjections() -> None:
    ctx = RunContext(seed=0, judge=JudgeInfo(model=None, validated=False), options={})
    ref = moore_reference(ctx, ReferenceRequest(path=str(PUBLISHER)))
    replies, _ = annotated_replies(PUBLISHER, RowReport())
    assert set(ref.clusters.values()) == {r.name for r in replies}


def test_a_delusion_certificate_on_these_replies_is_supporting_evidence_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # docs/judges.md#conversation-review: single replies never certify a conversation sub-task's judge
    certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch, "--subtask", "conversation/delusion")
    assert "supporting evidence only: the certificate of conversation/delusion's judge was measured on single " \
           "replies" in capsys.readouterr().out


def test_a_certificate_on_these_replies_records_its_unit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    certify_cli(replaying(PUBLISHER), PUBLISHER, tmp_path, monkeypatch, "--subtask", "conversation/delusion")
    assert certificate(tmp_path)["reference"]["unit"] == "reply"


def test_the_reference_path_reaches_the_anchor_items_too() -> None:
    """`--reference-path` fills the sub-task's own folder option, which its anchor items read: a certification
    given a copy of the publisher's files never asks for TRUSTMH_PUBLISHERS_DIR (issue 52)."""
    from trustmh.certify.registry import reference_run
    from trustmh.pillars.crisis.moore_reference import REFERENCE

    run = reference_run(REFERENCE, ReferenceRequest(path=str(PUBLISHER)))
    assert str(run.folder_options().get("moore_dir")) == str(PUBLISHER)
