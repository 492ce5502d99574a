"""Errors name the flag the user typed (issue 42): `--reference-path X` fills a reference's folder option
(`siri2_dir`, `crisis_dir`), `--tier2-limit N` fills `tier2_limit`; a message about either says the flag, never
an option the user did not write. Each is one line on stderr with exit 2 (could not run)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from trustmh import exit_codes
from trustmh.catalogue import catalogue
from trustmh.cli import main
from trustmh.core import TrustmhError
from trustmh.data.publisher import PublisherMissing, publisher_file, supplied_by
from trustmh.flag_values import FlagValue, as_typed, flag_of
from trustmh.options import check_options

NAMED = sorted(catalogue().references)  # crisis-study, mentalalign, mindeval, moore-interjections, siri2
PUBLISHED = [n for n in NAMED if n != "mentalalign"]  # read from a publisher's repository (TRUSTMH_PUBLISHERS_DIR)


def test_a_flag_value_is_said_as_typed() -> None:
    assert as_typed("siri2_dir", FlagValue("/x", "--reference-path")) == "--reference-path /x"


def test_a_plain_value_is_said_as_an_option() -> None:
    assert as_typed("siri2_dir", "/x") == "-O siri2_dir=/x"


def test_a_switch_is_said_alone() -> None:
    assert as_typed("full", FlagValue("1", "--full", typed="--full")) == "--full"


def test_the_flag_of_a_plain_value_is_the_option() -> None:
    assert flag_of("tier2_limit", "5") == "-O tier2_limit"


def test_a_flag_value_keeps_its_flag_across_processes() -> None:
    assert pickle.loads(pickle.dumps(FlagValue("/x", "--reference-path"))).typed == "--reference-path /x"


def test_a_flag_value_is_recorded_as_its_text() -> None:
    assert json.dumps({"siri2_dir": FlagValue("/x", "--reference-path")}) == '{"siri2_dir": "/x"}'


def test_a_publishers_folder_given_by_a_flag_is_named_by_it(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match=rf"^--reference-path {tmp_path}: no data/x\.json there"):
        publisher_file("data/x.json", {"crisis_dir": FlagValue(tmp_path, "--reference-path")}, dataset="crisis",
                       option="crisis_dir", base="crisis")


def test_a_missing_repository_names_the_commands_flag() -> None:
    with pytest.raises(PublisherMissing, match=r"or pass --reference-path DIR$"), supplied_by("--reference-path DIR"):
        raise PublisherMissing("crisis", "-O crisis_dir=DIR", "no local copy")


def test_an_option_value_given_by_a_flag_is_checked_in_its_words() -> None:
    with pytest.raises(TrustmhError, match=r"^--tier2-limit 0: must be at least 1"):
        check_options({"tier2_limit": FlagValue("0", "--tier2-limit")}, ["privacy/awareness"])


def test_a_flag_for_other_subtasks_names_the_flag_and_its_readers() -> None:
    with pytest.raises(TrustmhError, match=r"^--tier2-limit: applies to none of the chosen sub-tasks \(it is for "
                       r"privacy/awareness"):
        check_options({"tier2_limit": FlagValue("5", "--tier2-limit")}, ["crisis/interjections"])


def test_an_option_typed_as_an_option_is_still_named_so() -> None:
    with pytest.raises(TrustmhError, match=r"^-O tier2_limit: unknown option for the chosen sub-tasks"):
        check_options({"tier2_limit": "5"}, ["crisis/interjections"])


def _certify(reference: str, *extra: str, certs: Path) -> list[str]:
    return ["judge", "certify", "--judge", "mockllm/model", "--reference", reference, "--limit", "1",
            "--certificates", str(certs), *extra]


@pytest.fixture
def empty_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No copy of any publisher's repository anywhere, and no downloads."""
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    (tmp_path / "empty").mkdir()
    return tmp_path / "empty"


@pytest.mark.parametrize("reference", NAMED)
def test_certify_with_a_wrong_reference_path_exits_2(reference: str, empty_data: Path, tmp_path: Path) -> None:
    assert main(_certify(reference, "--reference-path", str(empty_data), certs=tmp_path / "certs")) == \
        exit_codes.COULD_NOT_RUN


@pytest.mark.parametrize("reference", PUBLISHED)
def test_certify_names_the_reference_path_typed(reference: str, empty_data: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    main(_certify(reference, "--reference-path", str(empty_data), certs=tmp_path / "certs"))
    assert capsys.readouterr().err.startswith(f"trustmh: error: --reference-path {empty_data}: ")


def test_certify_mentalalign_names_the_reference_path_typed(data_dir: Path, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    # the workbooks from the shared data; the reply texts from the (empty) folder typed
    (tmp_path / "empty").mkdir()
    main(_certify("mentalalign", "--reference-path", str(tmp_path / "empty"), certs=tmp_path / "certs"))
    assert capsys.readouterr().err.startswith(f"trustmh: error: --reference-path {tmp_path / 'empty'}: ")


@pytest.mark.parametrize("reference", NAMED)
def test_certify_errors_are_one_line(reference: str, empty_data: Path, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    main(_certify(reference, "--reference-path", str(empty_data), certs=tmp_path / "certs"))
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


@pytest.mark.parametrize("reference", NAMED)
def test_certify_never_names_an_option_not_typed(reference: str, empty_data: Path, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    main(_certify(reference, "--reference-path", str(empty_data), certs=tmp_path / "certs"))
    assert "_dir=" not in capsys.readouterr().err


@pytest.mark.parametrize("reference", PUBLISHED)
def test_certify_without_a_copy_says_to_pass_the_reference_path(reference: str, empty_data: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    main(_certify(reference, certs=tmp_path / "certs"))
    assert capsys.readouterr().err.rstrip().endswith("or pass --reference-path DIR")


def test_plan_names_the_flag_typed_for_other_subtasks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--tier2-limit", "5", "--subtasks", "crisis/interjections"]) == exit_codes.COULD_NOT_RUN
    assert capsys.readouterr().err.startswith("trustmh: error: --tier2-limit: applies to none")


def test_plan_names_a_switch_typed_for_other_subtasks(capsys: pytest.CaptureFixture[str]) -> None:
    main(["plan", "--full", "--subtasks", "crisis/interjections"])
    assert capsys.readouterr().err.startswith("trustmh: error: --full: applies to none")
