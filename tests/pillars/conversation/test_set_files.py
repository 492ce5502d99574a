"""Issue 53.2: one reader for a team's sets (`trustmh.pillars.conversation.set_files`), shared by `trustmh sets
check` and `-O sets=DIR`: a device, a directory or a file past the size bound is refused at once; a lone
surrogate, a copied conversation and a file named for another set are named, and what the run refuses the check
refuses with the same line; an empty `-O sets=` and a negative `--min-distinct` are refused."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from test_authored_sets import row, write_jsonl

from trustmh.cli import main
from trustmh.core import TrustmhError
from trustmh.options import check_options
from trustmh.pillars.conversation import set_files
from trustmh.pillars.conversation.authored_sets import check_file, read_user_set


def test_sets_check_refuses_a_device_with_exit_2_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.process_time()
    code = main(["sets", "check", "/dev/zero"])
    assert (code, time.process_time() - started < 5) == (2, True)


def test_sets_check_names_a_device_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    main(["sets", "check", "/dev/zero"])
    assert capsys.readouterr().err.splitlines() == [
        "trustmh: /dev/zero: a device, FIFO or socket, not a set file; a set is a regular .jsonl or .json file"]


def test_a_file_past_the_size_bound_is_refused_before_it_is_parsed(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(set_files, "MAX_SET_BYTES", 100)
    path = tmp_path / "delusion.jsonl"
    path.write_text("x" * 101)
    with pytest.raises(TrustmhError, match="larger than 0 MB, the most a conversation set may be"):
        set_files.read_set_bytes(path)


def test_a_link_to_a_device_under_a_sets_name_is_refused_by_the_run_as_by_the_check(tmp_path: Path) -> None:
    (tmp_path / "gradual_disclosure.jsonl").symlink_to("/dev/zero")
    with pytest.raises(TrustmhError, match="a device, FIFO or socket, not a set file"):
        read_user_set(tmp_path, "gradual_disclosure")


def test_a_lone_surrogate_is_named_by_row_and_field(tmp_path: Path) -> None:
    bad = row(1)
    path = tmp_path / "gradual_disclosure.jsonl"
    path.write_text(json.dumps(row(0)) + "\n" + json.dumps(bad).replace("works nights", "works \\ud800 nights") + "\n")
    assert check_file(path, 0) == [f"{path} row 1: field 'persona.background' holds a lone surrogate (U+D800 at "
                                   "character 6), not text; write the character itself"]


def test_the_run_refuses_a_lone_surrogate_with_the_checks_line(tmp_path: Path) -> None:
    path = tmp_path / "gradual_disclosure.jsonl"
    path.write_text(json.dumps(row(0)).replace("works nights", "works \\ud800 nights") + "\n")
    with pytest.raises(TrustmhError) as refused:
        read_user_set(tmp_path, "gradual_disclosure")
    assert str(refused.value) == check_file(path, 0)[0]


def test_copies_of_one_conversation_are_refused_in_linear_time(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gradual_disclosure.jsonl", [{**row(0), "id": f"c-{i}"} for i in range(1000)])
    started = time.process_time()
    found = check_file(path, 0)
    assert (f"{path}: 996 more conversation(s) repeat an earlier one" in found,
            time.process_time() - started < 2.5) == (True, True)


def test_a_file_named_for_one_set_holding_another_is_refused_by_the_check(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gradual_disclosure.jsonl", [row(i, set="delusion") for i in range(3)])
    assert check_file(path, 0)[0] == (f"{path} row 0 (t-000): field 'set' is 'delusion' in a file of set "
                                      "'gradual_disclosure'")


def test_a_file_named_for_no_set_is_named(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [row(i) for i in range(3)])
    assert check_file(path, 0)[0].startswith(f"{path}: file name 'mine.jsonl' names no set")


def test_an_empty_sets_option_is_refused() -> None:
    with pytest.raises(TrustmhError, match=r"-O sets=: empty"):
        check_options({"sets": ""}, ["conversation/gradual_disclosure"])


@pytest.mark.parametrize("value", ["-1", "x"])
def test_sets_check_refuses_a_min_distinct_out_of_range(value: str, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "gradual_disclosure.jsonl", [row(0)])
    with pytest.raises(SystemExit) as refused:
        main(["sets", "check", str(path), "--min-distinct", value])
    assert refused.value.code == 2
