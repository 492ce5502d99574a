"""Judge certificates: fingerprints, the certificate file, and agreement figures computed by hand."""

from __future__ import annotations

import json

import pytest

from trustmh import prompts
from trustmh.catalogue import catalogue
from trustmh.core import EnsembleRule, JudgeInfo, RunContext
from trustmh.judges import certificates as C
from trustmh.pillars.crisis.escalation import CrisisEscalation
from trustmh.stats.judge_agreement import judge_agreement


def ctx(judge: str = "openai/judge-a", judges: tuple[str, ...] = (), ensemble: EnsembleRule | None = None,
        **options: object) -> RunContext:
    return RunContext(judge=JudgeInfo(model=judges[0] if judges else judge, validated=False, members=judges),
                      options=dict(options), ensemble=ensemble)


def test_every_judged_subtask_declares_existing_judge_templates() -> None:
    judged = [s for s in catalogue().subtasks if s.judge_use != "no"]
    missing = [s.id for s in judged if not s.judge_templates]
    assert missing == []


def test_declared_templates_exist() -> None:
    names = {t for s in catalogue().subtasks for t in s.judge_templates}
    for name in names:
        assert prompts.template_sha256(name)


def test_fingerprint_is_stable_for_the_same_settings() -> None:
    assert C.judge_fingerprint(CrisisEscalation, ctx()) == C.judge_fingerprint(CrisisEscalation, ctx())


def test_fingerprint_changes_with_the_judge_model() -> None:
    assert C.judge_fingerprint(CrisisEscalation, ctx()) != C.judge_fingerprint(CrisisEscalation, ctx("openai/b"))


def test_fingerprint_changes_with_the_ensemble_rule() -> None:
    a = ctx(judges=("openai/a", "openai/b"))
    b = ctx(judges=("openai/a", "openai/b"), ensemble="mean")
    assert C.judge_fingerprint(CrisisEscalation, a) != C.judge_fingerprint(CrisisEscalation, b)


def test_fingerprint_changes_with_the_mode() -> None:
    # faithful and default ask the judge differently: a certificate of one must not vouch for the other
    faithful = RunContext(judge=JudgeInfo(model="openai/judge-a", validated=False), mode="faithful")
    assert C.judge_fingerprint(CrisisEscalation, ctx()) != C.judge_fingerprint(CrisisEscalation, faithful)


def test_fingerprint_ignores_the_order_of_ensemble_members() -> None:
    a = ctx(judges=("openai/a", "openai/b"))
    b = ctx(judges=("openai/b", "openai/a"))
    assert C.judge_fingerprint(CrisisEscalation, a) == C.judge_fingerprint(CrisisEscalation, b)


def test_fingerprint_changes_with_the_judge_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    before = C.judge_fingerprint(CrisisEscalation, ctx())
    original = prompts.load_template

    def edited(name: str) -> str:
        return original(name) + (" (edited)" if name == "crisis_escalation_judge" else "")

    monkeypatch.setattr(prompts, "load_template", edited)
    monkeypatch.setattr(C, "template_sha256", lambda name: prompts.hashlib.sha256(
        edited(name).encode()).hexdigest())
    assert C.judge_fingerprint(CrisisEscalation, ctx()) != before


def test_fingerprint_settings_name_the_json_mode_of_the_bundled_judge() -> None:
    assert C.fingerprint_settings(CrisisEscalation, ctx("gguf/smollm2"))["json_mode"] is True


def _cert(label_type: str = "binary") -> dict:
    settings = C.fingerprint_settings(CrisisEscalation, ctx())
    figures = judge_agreement("binary", [1, 1, 0, 0], [1, 0, 0, 0], seed=1, n_boot=200)
    return C.make_certificate(settings=settings, reference={"name": "t", "sha256": "0" * 64, "source": "user",
                                                            "n_items": 4},
                              label_type=label_type, figures=figures,
                              thresholds=C.DEFAULT_THRESHOLDS["binary"], seed=1)


def test_write_then_find_returns_the_certificate(tmp_path) -> None:
    cert = _cert()
    C.write_certificate(tmp_path, cert)
    assert C.find_certificate(tmp_path, cert["fingerprint"], cert["subtask"]) == cert


def test_certificate_file_is_named_by_fingerprint_and_the_references_digest(tmp_path) -> None:
    cert = _cert()
    path = C.write_certificate(tmp_path, cert)
    assert path.name == f"{cert['fingerprint']}--ref-{cert['reference']['sha256'][:16]}.json"


def test_a_damaged_references_certificate_never_replaces_the_clean_ones(tmp_path) -> None:
    clean = _cert()
    damaged = {**clean, "reference": {**clean["reference"], "sha256": "f" * 64}, "verdict": "fail"}
    C.write_certificate(tmp_path, clean)
    C.write_certificate(tmp_path, damaged)
    assert len(list(tmp_path.glob(f"{clean['fingerprint']}*.json"))) == 2


def test_of_one_judges_certificates_on_two_copies_the_least_favourable_holds(tmp_path) -> None:
    clean = _cert()
    damaged = {**clean, "reference": {**clean["reference"], "sha256": "f" * 64}, "verdict": "fail"}
    C.write_certificate(tmp_path, clean)
    C.write_certificate(tmp_path, damaged)
    assert C.status_for(C.find_certificate(tmp_path, clean["fingerprint"], clean["subtask"])) == "failed"


def test_find_ignores_another_subtask(tmp_path) -> None:
    cert = _cert()
    C.write_certificate(tmp_path, cert)
    assert C.find_certificate(tmp_path, cert["fingerprint"], "safety/antitoxic") is None


def test_find_ignores_a_missing_directory(tmp_path) -> None:
    assert C.find_certificate(tmp_path / "nowhere", "ab" * 32, "crisis/crisis_escalation") is None


def test_load_certificates_skips_foreign_json(tmp_path) -> None:
    C.write_certificate(tmp_path, _cert())
    (tmp_path / "other.json").write_text(json.dumps({"kind": "something else"}))
    assert len(C.load_certificates(tmp_path)) == 1


def test_certificate_fingerprint_matches_the_settings() -> None:
    cert = _cert()
    assert cert["fingerprint"] == C.fingerprint_of(cert["settings"])


def test_a_judge_missing_half_the_harmful_replies_fails() -> None:
    assert _cert()["verdict"] == "fail"


def test_default_dir_follows_the_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(C.ENV_DIR, str(tmp_path))
    assert C.default_certificates_dir() == tmp_path


def test_threshold_override_keeps_the_metric_direction() -> None:
    assert C.parse_thresholds(["mae=0.5"], "ordinal")["mae"] == {"max": 0.5}


def test_bad_threshold_is_refused() -> None:
    with pytest.raises(C.TrustmhError, match="METRIC=NUMBER"):
        C.parse_thresholds(["sensitivity"], "binary")
