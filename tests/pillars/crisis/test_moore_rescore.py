"""`trustmh rescore --format moore-interjections` on a synthetic copy of the publisher's layout
(tests/fixtures/moore_interjections/build.py names the quirks it reproduces) and, when present, on the
publisher's real files (`TRUSTMH_REFS_DIR`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.cli import main
from trustmh.data.rows import RowReport
from trustmh.pillars.crisis.moore import answer_of, id_of, load_interjections, read_result_files
from trustmh.pillars.crisis.moore_rescore import rescore_moore

PUBLISHER = FIXTURES / "moore_interjections" / "publisher"
REAL = Path(os.environ.get("TRUSTMH_REFS_DIR", "/work/refs")) / "jlcmoore+llms-as-therapists"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("moore")
    assert rescore_moore(PUBLISHER, out, seed=3, n_boot=300) == 0
    return json.loads((out / "moore_rescore.json").read_text())


def test_prompts_file_is_read_as_data_never_executed() -> None:
    # the fixture's module ends with `raise SystemExit(...)`: executing it would fail
    items = load_interjections(PUBLISHER / "interjection_prompts.py")
    assert [(i.condition, i.name, len(i.messages)) for i in items] == [
        ("suicidal ideation", "ledge", 1), ("suicidal ideation", "shop", 3), ("delusions", "ghost", 1),
        ("mania", "rocket", 1)]


def test_cells_as_the_publisher_wrote_them() -> None:
    assert answer_of(" Yes ") == "yes"
    assert answer_of(float("nan")) is None
    assert answer_of("unsure") is None
    assert id_of("1339.0") == "1339"
    assert id_of(1339) == "1339"


def test_human_therapists_share_and_the_paper_rule(result: dict) -> None:
    human = result["paper"]["human_therapists"]["overall"]
    assert (human["k"], human["n"]) == (15, 16)
    assert result["paper"]["human_therapists"]["reproduces_paper"] is True  # 0.9375 printed as 93%


def test_row_without_verification_correct_is_named_and_left_out(result: dict) -> None:
    assert result["n_unusable"] == 1
    assert any("2025-04-15.csv row 16: verification_correct" in line for line in result["unusable_rows"])


def test_reply_without_answer_counts_as_not_appropriate(result: dict) -> None:
    llama = result["paper"]["llms"]["meta-llama__Llama-2-70b-chat-hf"]["overall"]
    assert llama["n"] == 40
    assert llama["n_no_answer"] == 12
    assert any("12 rows with no reply and no answer" in line for line in result["unusable_rows"])


def test_paper_selection_leaves_out_llama2_7b_and_contextualised_runs(result: dict) -> None:
    assert sorted(result["paper"]["llms"]) == ["gpt-4o-2024-08-06", "meta-llama__Llama-2-70b-chat-hf"]


def test_stored_answer_differing_from_prompts_file_is_named_and_kept(result: dict) -> None:
    assert any("Serena" in line and "'rocket' store another answer" in line for line in result["unusable_rows"])
    assert result["paper"]["commercial_bots"]["overall"]["n"] == 8


def test_agreement_pairs_over_replies_both_raters_answered(result: dict) -> None:
    pairs = {(p["a"], p["b"]): p for p in result["agreement"]["pairs"]}
    # annotator_1's "unsure" is no answer: 39 replies, not 40
    assert pairs[("gpt-4o-2024-08-06", "annotator_1")]["n"] == 39
    assert pairs[("annotator_1", "annotator_2")]["agreement"] == pytest.approx(37 / 39)
    assert pairs[("annotator_1", "annotator_2")]["kappa"]["ci"][0] < pairs[("annotator_1", "annotator_2")]["kappa"]["value"]


def test_fleiss_kappa_of_the_three_on_answers(result: dict) -> None:
    assert result["agreement"]["fleiss_three_raters"]["n"] == 39


def test_all_combined_agrees_with_the_run_files(result: dict) -> None:
    assert all(result["all_combined"]["_matches_per_run_files"].values())
    assert result["all_combined"]["CharacterAI Therapist"]["n"] == 4  # a name with a line break, joined


def test_files_not_the_publishers_are_said_to_differ_from_the_pinned_commit(result: dict) -> None:
    assert result["files"]["n_as_pinned"] == 0
    assert "interjection_prompts.py" in result["files"]["differ_from_pinned"]


def test_cli_writes_json_and_table(tmp_path: Path) -> None:
    code = main(["rescore", "--format", "moore-interjections", "--from", str(PUBLISHER), "--out", str(tmp_path)])
    assert code == 0
    assert "| human therapists | human | 93.8%" in (tmp_path / "moore_rescore.md").read_text()


def test_cli_wrong_folder_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["rescore", "--format", "moore-interjections", "--from", str(tmp_path), "--out", str(tmp_path / "o")])
    assert code == 2
    assert "no results/interjections folder" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


needs_real = pytest.mark.skipif(not (REAL / "results" / "interjections" / "all_combined.csv").is_file(),
                                reason="the publisher's files are not here (set TRUSTMH_REFS_DIR)")


@needs_real
def test_real_files_reproduce_the_papers_figures(tmp_path: Path) -> None:
    assert rescore_moore(REAL, tmp_path, n_boot=200) == 0
    res = json.loads((tmp_path / "moore_rescore.json").read_text())
    human = res["paper"]["human_therapists"]
    assert (human["overall"]["k"], human["overall"]["n"]) == (75, 80)
    assert human["reproduces_paper"] is True
    assert res["paper"]["llms"]["gpt-4o-2024-08-06"]["overall"]["k"] == 275
    assert res["paper"]["commercial_bots"]["overall"]["value"] == pytest.approx(0.56)
    assert res["agreement"]["fleiss_three_raters"]["kappa"] == pytest.approx(0.9586943286657612)
    assert all(res["all_combined"]["_matches_per_run_files"].values())
    assert res["files"]["n_as_pinned"] == res["files"]["n_files"] == 28


@needs_real
def test_real_files_every_run_read() -> None:
    files = read_result_files(REAL, RowReport())
    assert len(files) == 26


# issue 53.6: a missing interjection_prompts.py is named, and the closing line says it is absent instead of counting
# every file read as at the pinned commit
def test_a_missing_prompts_file_is_named_on_the_closing_line(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    source = tmp_path / "publisher"
    shutil.copytree(PUBLISHER, source)
    (source / "interjection_prompts.py").unlink()
    assert rescore_moore(source, tmp_path / "out", seed=3, n_boot=50) == 0
    closing = capsys.readouterr().err.strip().splitlines()[-1]
    assert "files as at the pinned commit" in closing and "absent: interjection_prompts.py" in closing


def _with_renamed_annotator(tmp_path: Path) -> Path:
    import shutil

    source = tmp_path / "publisher"
    shutil.copytree(PUBLISHER, source)
    validation = next(source.glob("results/interjections/*/classification_validation.csv"))
    text = validation.read_text(encoding="utf-8")
    validation.write_text(text.replace("annotator_1_classification", "annotator_1_label", 1), encoding="utf-8")
    return source


# issue 53: a renamed annotator column gave only "no reply answered yes/no by both"; now the reader names the
# column it expected, the one the file has and the rows without that annotator's answer, and carries on
def test_a_renamed_annotator_column_is_named_with_the_file_and_its_rows(tmp_path: Path) -> None:
    report = RowReport()
    read_result_files(_with_renamed_annotator(tmp_path), report)
    assert any("classification_validation.csv: annotator_1_classification column absent (the file has "
               "'annotator_1_label': renamed?); none of its 60 rows" in line for line in report.lines())


def test_a_renamed_annotator_column_is_the_agreement_cells_reason(tmp_path: Path) -> None:
    assert rescore_moore(_with_renamed_annotator(tmp_path), tmp_path / "out", seed=3, n_boot=50) == 0
    pairs = json.loads((tmp_path / "out" / "moore_rescore.json").read_text())["agreement"]["pairs"]
    assert [p["why_not_computed"] for p in pairs if p["kappa"] is None] == [
        "no column annotator_1_classification in the file"] * 2
