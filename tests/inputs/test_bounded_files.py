"""File inputs are bounded by their size before they are read (issue 34): `-O <dataset>_path=/dev/zero` reached
4 GB in 10 s. A device or pipe is refused; a regular file over its kind's limit is refused by its stat."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.data import resolve
from trustmh.data.files import check_input_file, read_jsonl, read_table, read_text_bounded


def _sparse(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "big.jsonl"
    with path.open("wb") as fh:
        fh.truncate(size)
    return path


def test_a_device_is_refused() -> None:
    with pytest.raises(TrustmhError, match="x: not a regular file"):
        check_input_file("/dev/zero", 10, "x")


def test_a_file_over_the_limit_is_refused_naming_its_size(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="x: 11 bytes, larger than the 10 bytes"):
        check_input_file(_sparse(tmp_path, 11), 10, "x")


def test_a_file_within_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ok.txt"
    path.write_text("hello", encoding="utf-8")
    assert read_text_bounded(path, 5, "x") == "hello"


def test_not_utf8_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.txt"
    path.write_bytes(b"ok\ncaf\xe9\n")
    with pytest.raises(TrustmhError, match="x line 2: not UTF-8"):
        read_text_bounded(path, 100, "x")


def test_a_dataset_path_that_is_a_device_is_refused_by_resolve() -> None:
    with pytest.raises(TrustmhError, match="not a regular file"):
        resolve("usmle_mental", "external/USMLE-Mental/USMLE-mental.jsonl", "/dev/zero")


def test_a_dataset_path_larger_than_any_dataset_is_refused_by_resolve(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="larger than"):
        resolve("usmle_mental", "external/USMLE-Mental/USMLE-mental.jsonl", _sparse(tmp_path, 3 << 30))


def test_the_jsonl_reader_refuses_a_device() -> None:
    with pytest.raises(TrustmhError, match="not a regular file"):
        read_jsonl(Path("/dev/zero"))


def test_the_table_reader_refuses_a_huge_file(tmp_path: Path) -> None:
    path = _sparse(tmp_path, 3 << 30).rename(tmp_path / "big.csv")
    with pytest.raises(TrustmhError, match="larger than"):
        read_table(path)
