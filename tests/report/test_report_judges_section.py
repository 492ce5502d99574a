"""The report's Judges section: certificate status per judged sub-task, corrected beside judge-only."""

from __future__ import annotations

from pathlib import Path

from synthetic_runs import synthetic_run
from trustmh.judges import certificates as C
from trustmh.report import render_page
from trustmh.stats.judge_agreement import judge_agreement

SID = "safety/jailbreak_resistance"


def _settings() -> dict:
    return {"subtask": SID, "mode": "default", "templates": {"safety_jailbreak_judge": "0" * 64}, "judges": ["synthetic/judge"],
            "ensemble": "vote", "min_valid": 1, "temperature": 0.0, "json_mode": False, "judge_text_chars": None,
            "format": 2}


def _run(tmp_path: Path, corrected: bool = False) -> dict:
    results = synthetic_run(tmp_path / "run", "model-a", 0.7)
    results["subtasks"][SID]["judge"]["fingerprint"] = C.fingerprint_of(_settings())
    if corrected:
        results["subtasks"][SID]["judge_corrected"] = {
            "status": "ok", "value": 0.61234, "ci": [0.5, 0.7], "n_labelled": 40,
            "judge_only": {"value": 0.80111, "ci": [0.78, 0.82]}}
    return results


def _page(tmp_path: Path, results: dict) -> str:
    return render_page([results], [None], certs_dir=tmp_path / "certs")


def test_without_a_certificate_the_section_says_none(tmp_path: Path) -> None:
    assert 'class="nc">none</span>' in _page(tmp_path, _run(tmp_path))


def test_a_failed_certificate_is_named_with_its_reference(tmp_path: Path) -> None:
    figures = judge_agreement("binary", [1, 1, 0, 0], [0, 0, 0, 0], seed=0, n_boot=100)
    cert = C.make_certificate(settings=_settings(), reference={"name": "team-labels.csv", "sha256": "1" * 64,
                                                               "source": "user", "n_items": 4},
                              label_type="binary", figures=figures, thresholds=C.DEFAULT_THRESHOLDS["binary"],
                              seed=0)
    C.write_certificate(tmp_path / "certs", cert)
    page = _page(tmp_path, _run(tmp_path))
    assert "failed</span> on team-labels.csv" in page


def test_a_per_attribute_certificate_names_its_weakest_attribute(tmp_path: Path) -> None:
    per = {a: judge_agreement("ordinal", [1, 2, 3, 4], [1, 2, 3, j], seed=0, n_boot=100)
           for a, j in (("Guidance", 4), ("Safety", 1))}
    figures = {"n": 4, "agreement": C.worst_attribute(per)}
    cert = C.make_certificate(settings=_settings(), reference={"name": "mentalalign-experts", "sha256": "1" * 64,
                                                               "source": "public", "n_items": 4},
                              label_type="ordinal", figures=figures, thresholds=C.DEFAULT_THRESHOLDS["ordinal"],
                              seed=0)
    C.write_certificate(tmp_path / "certs", cert)
    assert "mae (weakest: Safety)" in _page(tmp_path, _run(tmp_path))


def test_corrected_figure_is_shown_beside_judge_only(tmp_path: Path) -> None:
    page = _page(tmp_path, _run(tmp_path, corrected=True))
    assert "judge-only 0.801" in page and "corrected (PPI, 40 human labels) 0.612" in page


def test_judge_validated_flag_reads_vouched_no_evidence(tmp_path: Path) -> None:
    results = synthetic_run(tmp_path / "run", "model-a", 0.7, validated=True)
    assert "vouched, no evidence" in _page(tmp_path, results)


def test_judge_validated_flag_is_not_shown_as_validated(tmp_path: Path) -> None:
    results = synthetic_run(tmp_path / "run", "model-a", 0.7, validated=True)
    assert '<span class="ok">validated</span>' not in _page(tmp_path, results)


def test_comparison_shows_each_runs_certificate(tmp_path: Path) -> None:
    figures = judge_agreement("binary", [1, 1, 0, 0], [1, 1, 0, 0], seed=0, n_boot=100)
    cert = C.make_certificate(settings=_settings(), reference={"name": "team-labels.csv", "sha256": "1" * 64,
                                                               "source": "user", "n_items": 4},
                              label_type="binary", figures=figures, thresholds={}, seed=0)
    C.write_certificate(tmp_path / "certs", cert)
    other = synthetic_run(tmp_path / "other", "model-b", 0.4)  # no fingerprint recorded
    page = render_page([_run(tmp_path), other], [None, None], certs_dir=tmp_path / "certs")
    judges = page[page.index('<section id="judges">'):page.index("</section>", page.index('<section id="judges">'))]
    assert "certified</span> on team-labels.csv" in judges and "no fingerprint" in judges


def _quality_cert(tmp_path: Path, status: str) -> None:
    from trustmh.judges.reference_quality import certify_reference

    humans = {f"i{k}": {"A": v, "B": w} for k, (v, w) in enumerate([(1, 5), (5, 1), (2, 4), (4, 2), (3, 3)])}
    judged = {i: 3 for i in humans}
    quality = certify_reference(humans, judged, label_type="ordinal", seed=0, n_boot=100)
    assert quality["status"] == status
    figures = judge_agreement("ordinal", [3] * 5, [3] * 5, seed=0, n_boot=100)
    cert = C.make_certificate(settings=_settings(), reference={"name": "two-raters.csv", "sha256": "1" * 64,
                                                               "source": "user", "n_items": 5},
                              label_type="ordinal", figures=figures, thresholds={}, seed=0,
                              reference_quality=quality)
    C.write_certificate(tmp_path / "certs", cert)


def test_a_reference_that_cannot_certify_is_shown_apart_from_failed(tmp_path: Path) -> None:
    _quality_cert(tmp_path, "reference cannot certify")
    page = _page(tmp_path, _run(tmp_path))
    assert 'class="cannot">cannot certify</span> on two-raters.csv' in page


def test_the_rule_is_shown_per_criterion(tmp_path: Path) -> None:
    _quality_cert(tmp_path, "reference cannot certify")
    assert 'score <span class="cannot">reference cannot certify</span> (humans' in _page(tmp_path, _run(tmp_path))


def test_the_labels_behind_a_corrected_figure_are_said_by_the_gates_rule(tmp_path: Path) -> None:
    results = _run(tmp_path, corrected=True)
    results["subtasks"][SID]["judge_corrected"]["pair"] = {
        "raters_per_item": 2, "n_missing_pair": 0, "statistic": "fleiss_kappa", "agreement": 0.8,
        "ci": [0.62, 0.9], "floor": 0.4}
    assert "corrected by 40 two-rater labels of this run, agreement κ 0.80 (lower bound 0.62)" in \
        _page(tmp_path, results)


def test_one_rater_behind_a_corrected_figure_is_said(tmp_path: Path) -> None:
    results = _run(tmp_path, corrected=True)
    results["subtasks"][SID]["judge_corrected"]["pair"] = {"raters_per_item": 1}
    assert "40 labels by one rater per item" in _page(tmp_path, results)
