"""Shared file readers (trustmh.data.files): JSONL and tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.data.files import read_jsonl, read_table, read_table_with_header

ROWS = [{"text": "first", "label": "a"}, {"text": "second, with a comma", "label": "b"}]


def test_read_jsonl(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps(ROWS[0]) + "\n\n" + json.dumps({"t": "line\u2028sep"}, ensure_ascii=False) + "\n",
                 encoding="utf-8")
    assert read_jsonl(p) == [ROWS[0], {"t": "line\u2028sep"}]
    assert read_jsonl(str(p)) == read_jsonl(p)
    p.write_text(json.dumps(ROWS[0]) + "\n{broken\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"x\.jsonl line 2: invalid JSON"):
        read_jsonl(p)
    p.write_text("\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"^shown/name line 2: expected a JSON object"):
        read_jsonl(p, name="shown/name")


def test_read_table_formats_agree(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "t.csv").write_text(" text ,label\nfirst,a\n,\n\"second, with a comma\",b\n", encoding="utf-8")
    (tmp_path / "t.tsv").write_text("text\tlabel\nfirst\ta\nsecond, with a comma\tb\n", encoding="utf-8")
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    (tmp_path / "t.json").write_text(json.dumps(ROWS), encoding="utf-8")
    (tmp_path / "wrapped.json").write_text(json.dumps({"version": 2, "data": ROWS}), encoding="utf-8")
    (tmp_path / "columns.json").write_text(json.dumps({k: [r[k] for r in ROWS] for k in ROWS[0]}), encoding="utf-8")
    pq.write_table(pa.table({k: [r[k] for r in ROWS] for k in ROWS[0]}), tmp_path / "t.parquet")
    for name in ("t.csv", "t.tsv", "t.jsonl", "t.json", "wrapped.json", "columns.json", "t.parquet"):
        assert read_table(tmp_path / name) == ROWS, name
        assert read_table_with_header(tmp_path / name)[0] == ["text", "label"], name


# (file name, its text or None for no file, what the one-line error must say)
TABLE_ERRORS = [
    ("missing.csv", None, "file not found"),
    ("empty.csv", "", r"empty\.csv: empty file"),
    ("ragged.csv", "a,b\n3\n", r"ragged\.csv: no usable record \(.*record 2: 1 fields, the header has 2"),
    ("bad.json", '{"a": 1}', r"bad\.json: expected a JSON list of objects"),
    ("broken.json", '[{"a": 1},\n', r"broken\.json: invalid JSON at line 2"),
    ("bad.parquet", "not parquet", r"bad\.parquet: cannot read as \.parquet"),
    ("x.xlsx", "", "unsupported file type '.xlsx'"),
]


def test_read_table_errors(tmp_path: Path) -> None:
    for name, text, message in TABLE_ERRORS:
        if text is not None:
            (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(TrustmhError, match=message):
            read_table(tmp_path / name)


def test_ragged_record_is_skipped_and_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ragged.csv").write_text("a,b\n1,2\n3\n4,5\n", encoding="utf-8")
    assert read_table(tmp_path / "ragged.csv") == [{"a": "1", "b": "2"}, {"a": "4", "b": "5"}]
    assert "ragged.csv: record 3: 1 fields, the header has 2; skipped" in capsys.readouterr().err


def test_single_csv_read_out_of_a_zip(tmp_path: Path) -> None:
    import zipfile

    z = tmp_path / "t.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("__MACOSX/._t.csv", b"junk")
        zf.writestr("inner/t.csv", "text,label\r\nhi,1\r\n")
    assert read_table_with_header(z) == (["text", "label"], [{"text": "hi", "label": "1"}])
    with zipfile.ZipFile(tmp_path / "two.zip", "w") as zf:
        zf.writestr("a.csv", "x\n1\n")
        zf.writestr("b.csv", "x\n1\n")
    with pytest.raises(TrustmhError, match="exactly one .csv inside the zip, found 2"):
        read_table(tmp_path / "two.zip")
