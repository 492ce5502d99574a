"""review export -> labels -> review import writes a certificate and judge-corrected figures."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.judges.certificates import find_certificate

REFUSAL = "I'm sorry, but I can't help with that."


def _judge(prompt: str) -> str:
    # a judge that calls every reply with a "7" in its request compliant (harmful), the rest refused
    label = "complied" if "7" in prompt else "refused"
    return json.dumps({"label": label, "toxicity": 0, "rationale": "<b>x</b>"})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    out = tmp_path_factory.mktemp("run")
    model = canned_model(lambda p, m, c: "<script>alert(1)</script> " + REFUSAL)
    judge = canned_model(lambda p, m, c: _judge(p), "judge-a")
    _, code = run(RunOptions(model=model, judge=judge, suite="starter", subtasks=["jailbreak_resistance"],
                             out=out, display="none", n_boot=50))
    assert code == 0
    return out


def _export(run_dir: Path, n: int = 6) -> dict:
    from trustmh.certify.review import export_review

    export_review(run_dir, n=n, seed=4)
    return json.loads((run_dir / "review" / "sample.json").read_text())


def test_export_records_inclusion_probabilities(run_dir: Path) -> None:
    sample = _export(run_dir)
    assert all(0 < s["inclusion_probability"] <= 1 for s in sample["items"])


def test_export_draws_n_items(run_dir: Path) -> None:
    assert len(_export(run_dir)["items"]) == 6


def test_page_escapes_model_text(run_dir: Path) -> None:
    _export(run_dir)
    html = (run_dir / "review" / "review.html").read_text()
    assert "<script>alert(1)</script>" not in html


def test_page_is_blind_to_the_judge_verdict_and_model(run_dir: Path) -> None:
    _export(run_dir)
    html = (run_dir / "review" / "review.html").read_text()
    assert "judge_value" not in html and "judge-a" not in html and "canned" not in html


def _labels(tmp_path: Path, sample: dict, rater: str, flip: bool = False) -> Path:
    path = tmp_path / f"{rater}.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rater", "subtask", "item_id", "epoch", "label"])
        for s in sample["items"]:
            v = s["judge_value"]
            w.writerow([rater, s["subtask"], s["item_id"], s["epoch"], f"{(1 - v) if flip else v:g}"])
    return path


def test_import_writes_a_certificate_for_the_runs_judge(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    import_review(run_dir, [_labels(tmp_path, sample, "a")], seed=1, n_boot=200, certs_dir=tmp_path / "certs")
    results = json.loads((run_dir / "results.json").read_text())
    fp = results["subtasks"]["safety/jailbreak_resistance"]["judge"]["fingerprint"]
    cert = find_certificate(tmp_path / "certs", fp, "safety/jailbreak_resistance")
    assert cert["reference"]["source"] == "run"


def test_import_records_corrected_beside_judge_only(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    import_review(run_dir, [_labels(tmp_path, sample, "a", flip=True)], seed=1, n_boot=200,
                  certs_dir=tmp_path / "certs")
    corrected = json.loads((run_dir / "results.json").read_text())["subtasks"]["safety/jailbreak_resistance"][
        "judge_corrected"]
    # humans disagree with the judge on every labelled item, so the corrected mean moves away from it
    assert corrected["value"] != pytest.approx(corrected["judge_only"]["value"])


def test_import_measures_two_raters_against_each_other(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    summary = import_review(run_dir, [_labels(tmp_path, sample, "a"), _labels(tmp_path, sample, "b")], seed=1,
                            n_boot=200, certs_dir=tmp_path / "certs")
    assert summary["subtasks"]["safety/jailbreak_resistance"]["human_vs_human"]["n"] == 6


def test_the_certificate_records_the_label_files_set_digest(run_dir: Path, tmp_path: Path) -> None:
    # docs/data.md#hashes: the sha256 of the sorted "<file sha256>  <base name>" lines
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    paths = [_labels(tmp_path, sample, "b"), _labels(tmp_path, sample, "a")]
    import_review(run_dir, paths, seed=1, n_boot=200, certs_dir=tmp_path / "certs")
    fp = json.loads((run_dir / "results.json").read_text())["subtasks"]["safety/jailbreak_resistance"]["judge"][
        "fingerprint"]
    listing = sorted((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in paths)
    expected = hashlib.sha256("".join(f"{sha}  {name}\n" for name, sha in listing).encode()).hexdigest()
    assert find_certificate(tmp_path / "certs", fp, "safety/jailbreak_resistance")["reference"]["sha256"] == expected


def test_import_refuses_an_item_outside_the_sample(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review
    from trustmh.core import TrustmhError

    _export(run_dir)
    bad = tmp_path / "bad.csv"
    bad.write_text("rater,subtask,item_id,epoch,label\na,safety/jailbreak_resistance,nope,1,1\n")
    with pytest.raises(TrustmhError, match="row 2"):
        import_review(run_dir, [bad], seed=1, n_boot=200, certs_dir=tmp_path / "certs")


def test_keyword_refusal_against_a_complied_verdict_is_a_disagreement(run_dir: Path) -> None:
    from trustmh.certify.review import judged_items

    # every reply holds a refusal the keyword detector finds; the judge calls some of them complied
    _, items = judged_items(run_dir)
    assert [it["disagree"] for it in items] == [it["record"]["score"]["refused"] is False for it in items]


def test_oversampling_draws_disagreements_at_twice_the_rate() -> None:
    from trustmh.certify.review import draw_sample

    items = [{"subtask": "s", "item_id": f"i{k}", "epoch": 1, "judge_value": 1.0, "disagree": k < 10}
             for k in range(20)]
    pi = {s["disagree"]: s["inclusion_probability"] for s in draw_sample(items, 6, seed=0, oversample=True)}
    assert pi == {True: 0.4, False: 0.2}


def test_a_one_rater_import_cannot_certify_and_says_two_raters_are_needed(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    summary = import_review(run_dir, [_labels(tmp_path, sample, "a")], seed=1, n_boot=200,
                            certs_dir=tmp_path / "certs")
    entry = summary["subtasks"]["safety/jailbreak_resistance"]
    assert (entry["verdict"], "two raters" in entry["reference_quality"]["reason"]) == ("cannot certify", True)


def test_a_two_rater_import_runs_the_reference_quality_rule(run_dir: Path, tmp_path: Path) -> None:
    from trustmh.certify.review import import_review

    sample = _export(run_dir)
    import_review(run_dir, [_labels(tmp_path, sample, "a"), _labels(tmp_path, sample, "b")], seed=1, n_boot=200,
                  certs_dir=tmp_path / "certs")
    results = json.loads((run_dir / "results.json").read_text())
    fp = results["subtasks"]["safety/jailbreak_resistance"]["judge"]["fingerprint"]
    quality = find_certificate(tmp_path / "certs", fp, "safety/jailbreak_resistance")["reference_quality"]
    assert quality["n_raters"] == 2


@pytest.fixture(scope="module")
def one_rater_cli(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """`trustmh review import` on one rater's labels: (exit code, stdout)."""
    import contextlib
    import io

    from trustmh.cli import main

    tmp = tmp_path_factory.mktemp("one-rater")
    labels = _labels(tmp, _export(run_dir), "a")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["review", "import", str(run_dir), str(labels), "--certificates", str(tmp / "certs")])
    return code, out.getvalue()


def test_review_import_exits_3_when_it_cannot_certify(one_rater_cli: tuple[int, str]) -> None:
    assert one_rater_cli[0] == 3


def test_review_import_says_each_sub_task_in_one_line(one_rater_cli: tuple[int, str]) -> None:
    assert [line.split(":")[0] for line in one_rater_cli[1].splitlines()] == ["safety/jailbreak_resistance",
                                                                            "review summary"]
