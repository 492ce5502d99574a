"""fairness/stigma on synthetic files laid out like the llms-as-therapists repository
(tests/fixtures/moore_stigma): the publisher's coding, the public's rates, the live sub-task offline and the
rescore of released coded answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.core import RunContext
from trustmh.data.rows import RowReport
from trustmh.offline import run_offline
from trustmh.pillars.fairness.stigma import Stigma
from trustmh.pillars.fairness.stigma_data import (
    DONT_KNOW,
    INVALID,
    NOT_STIGMATISING,
    STIGMATISING,
    code_position,
    load_public_rates,
    load_questions,
)
from trustmh.pillars.fairness.stigma_rescore import rescore_moore_stigma

MOORE = FIXTURES / "moore_stigma"


@pytest.mark.parametrize(("position", "polarity", "code"), [
    (0, "unwilling", STIGMATISING), (1, "unwilling", STIGMATISING), (2, "unwilling", NOT_STIGMATISING),
    (3, "likely", STIGMATISING), (1, "likely", NOT_STIGMATISING), (4, "likely", DONT_KNOW),
    (None, "unwilling", INVALID)])
def test_publishers_coding(position: int | None, polarity: str, code: str) -> None:
    assert code_position(position, polarity, 5) == code


def test_questions_file_gives_the_two_stigma_questions_their_polarity() -> None:
    questions = load_questions(MOORE / "data" / "vignettes.jsonl")
    assert [q.polarity for q in questions] == [None, "unwilling", "likely"]


def test_public_rates_read_through_the_bom_with_unusable_rows_named() -> None:
    report = RowReport()
    questions = load_questions(MOORE / "data" / "vignettes.jsonl")
    rates = load_public_rates(MOORE / "external_data" / "human_data_2018.csv", questions, report)
    assert rates[questions[1].question_only]["schizophrenia"] == pytest.approx(0.40)
    assert report.lines() == ["human_data_2018.csv row 2: question 'synthetic row no model is asked' is not "
                              "asked of models; skipped",
                              "human_data_2018.csv row 3: alcohol dependence missing or not a percentage; left out"]


@pytest.fixture(scope="module")
def offline_result():  # noqa: ANN201
    ctx = RunContext(options={"moore_dir": str(MOORE)}, n_boot=200)

    def respond(item, prompt: str) -> str:  # noqa: ANN001
        # "calm" vignettes: the first option (unwilling / not at all likely); daily troubles "busy": do not know
        if "daily troubles, busy" in item.prompt:
            return "E"
        return "A" if "calm" in item.prompt else "D"

    return run_offline(Stigma(), ctx, respond)[1]


def test_only_the_stigma_questions_are_asked(offline_result) -> None:  # noqa: ANN001
    assert offline_result.n == 16  # 8 vignettes x 2 stigma questions


def test_rate_per_condition_and_do_not_know_counted_apart(offline_result) -> None:  # noqa: ANN001
    per = offline_result.metrics["per_condition"]
    assert (per["daily troubles"]["rate"], per["depression"]["rate"], offline_result.metrics["n_dont_know"]) == (
        0.5, 0.5, 2)


def test_difference_from_the_control_condition(offline_result) -> None:  # noqa: ANN001
    assert offline_result.metrics["difference_from_control"]["schizophrenia"]["difference"] == pytest.approx(0.0)


def test_public_rate_beside_the_models(offline_result) -> None:  # noqa: ANN001
    assert offline_result.metrics["public_2018"]["per_condition"]["depression"] == pytest.approx(0.175)


def test_not_computed_without_the_files_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.data.publisher import PublisherMissing

    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    with pytest.raises(PublisherMissing, match="-O moore_dir=DIR"):  # the plan says it once per repository
        Stigma().not_computed_reason(RunContext())


@pytest.fixture(scope="module")
def rescored(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("moore")
    assert rescore_moore_stigma(MOORE, out, n_boot=200) == 0
    return json.loads((out / "stigma_rescore.json").read_text())


def _set(result: dict, model: str, source_end: str = "") -> dict:
    return next(s for s in result["sets"] if s["model"] == model and s["source"].endswith(source_end))


def test_rescore_reproduces_the_notebooks_rates(rescored: dict) -> None:
    assert _set(rescored, "a")["compared"]["all_equal"] is True


def test_rescore_flags_a_rate_that_differs(rescored: dict) -> None:
    assert _set(rescored, "b")["compared"]["cells"]["schizophrenia"]["equal"] is False


def test_rescore_codes_run_files_itself(rescored: dict) -> None:
    per = _set(rescored, "org/model-x", "2025-01-01.jsonl")["per_condition"]
    assert per["schizophrenia"]["rate"] == pytest.approx(2 / 3)


def test_rescore_counts_invalid_and_do_not_know_in_run_files(rescored: dict) -> None:
    s = _set(rescored, "org/model-x", "2025-01-01.jsonl")
    assert (s["n_invalid"], s["n_dont_know"]) == (1, 2)


def test_rescore_names_unusable_rows(rescored: dict) -> None:
    assert rescored["unusable_rows"][:2] == [
        "all_combined.csv row 32: code 'nan' is not 0 or 1; skipped",
        "model=org__model-x&steel-man-prompt=False: files 2 run files (2025-01-01.jsonl, 2025-01-02.jsonl); "
        "each rescored; the notebook reads one"]


# issue 53.6: a header-only all_combined.csv is named: the figures are then the run folders' alone
def test_rescore_names_a_coded_file_with_a_header_only(tmp_path: Path) -> None:
    import shutil

    source = tmp_path / "moore"
    shutil.copytree(MOORE, source)
    coded = source / "results" / "stigma" / "all_combined.csv"
    coded.write_text(coded.read_text(encoding="utf-8-sig").splitlines()[0] + "\n", encoding="utf-8")
    assert rescore_moore_stigma(source, tmp_path / "out", n_boot=200) == 0
    rows = json.loads((tmp_path / "out" / "stigma_rescore.json").read_text())["unusable_rows"]
    assert ("results/stigma/all_combined.csv: rows no coded answer (a header only, or every row skipped); the "
            "study's own codes are not in the figures; only the run folders are") in rows


# issue 53.6: a questions file cut short before its stigma questions is named, not "no items to evaluate"
def test_a_questions_file_without_its_stigma_questions_is_named(tmp_path: Path) -> None:
    import shutil

    from trustmh.core import TrustmhError
    from trustmh.pillars.fairness.stigma_data import QUESTIONS_FILE, question_polarity

    source = tmp_path / "moore"
    shutil.copytree(MOORE, source)
    path = source / QUESTIONS_FILE
    kept = [line for line in path.read_text(encoding="utf-8-sig").splitlines() if line.strip()
            and not question_polarity(json.loads(line)["question_only"], json.loads(line)["options"])]
    path.write_text("\n".join(kept[:1]) + "\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=rf"{path}: none of its 1 usable question\(s\) is one of the stigma"):
        Stigma().items(RunContext(options={"moore_dir": str(source)}))
