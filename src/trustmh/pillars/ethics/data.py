"""EthicMH loading (docs/pillars/ethics.md): the faithful and repaired decodings of the released file."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

from trustmh.core import Mode, TrustmhError

ETHICMH_RELPATH = "trustmh/TrustMH_Bench/DimGroup2/Ethics/data/EthicMH.csv"
CHOICES = ("A", "B", "C", "D")
ETHICMH_COLUMNS = ("index", "subcategory", "scenario", "options", "reasoning_task", "expected_reasoning",
                   "model_behavior", "real_world_impact", "viewpoints")

_BROKEN = b"\xe9\x88\x3f"  # a GBK-mojibake "’"/"—" whose last byte was lost to "?" (17 in the file)
_CJK_RUN = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff]+")
# What must not survive the repair: any CJK / CJK punctuation / full-width form, or U+FFFD.
_LEFTOVER = re.compile(r"[\u2e80-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef\ufffd]")


def decode_faithful(raw: bytes, source: str = "EthicMH.csv") -> str:
    """The original's decoding: UTF-8; on any error, the whole file as gb18030 (reproduces `閳ユ獨`)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return raw.decode("gb18030")
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{source}: neither UTF-8 nor gb18030 (byte {exc.start})") from exc


def decode_repaired(raw: bytes, source: str = "EthicMH.csv") -> str:
    """Default decoding: byte-level repair of the broken sequences, UTF-8, then un-mojibake each CJK run.

    1. `E9 88 3F` → `’ ` after `s` or `.`, else `— `; 2. decode UTF-8; 3. each CJK run →
    `run.encode("gbk").decode("utf-8")`; 4. no CJK and no U+FFFD may remain (else TrustmhError).
    """
    out = bytearray()
    pos = 0
    while True:
        hit = raw.find(_BROKEN, pos)
        if hit == -1:
            out += raw[pos:]
            break
        out += raw[pos:hit]
        prev = raw[hit - 1: hit]
        out += ("’ " if prev in (b"s", b".") else "— ").encode("utf-8")
        pos = hit + len(_BROKEN)
    try:
        text = bytes(out).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{source}: byte {exc.start} is not UTF-8 after the repair of E9 88 3F") from exc

    def fix(m: re.Match[str]) -> str:
        try:
            return m.group(0).encode("gbk").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError) as exc:
            raise TrustmhError(f"{source}: cannot repair the CJK run {m.group(0)!r} at char {m.start()}") from exc

    text = _CJK_RUN.sub(fix, text)
    left = _LEFTOVER.search(text)
    if left is not None:
        line = text.count("\n", 0, left.start()) + 1
        raise TrustmhError(f"{source} line {line}: {left.group(0)!r} remains after the repair")
    return text


def parse_ethicmh(text: str, source: str = "EthicMH.csv") -> list[dict[str, Any]]:
    """Rows of EthicMH text. Records end in CRLF and cells hold bare LF: the csv module on an untranslated
    stream (newline="") keeps the LFs inside cells and ends records at CRLF."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration as exc:
        raise TrustmhError(f"{source}: empty file") from exc
    if tuple(h.strip() for h in header[: len(ETHICMH_COLUMNS)]) != ETHICMH_COLUMNS:
        raise TrustmhError(f"{source} line 1: header {header} does not start with {list(ETHICMH_COLUMNS)}")
    rows: list[dict[str, Any]] = []
    for rec_no, cells in enumerate(reader, start=1):
        if not any(c.strip() for c in cells):
            continue
        if len(cells) < len(ETHICMH_COLUMNS):
            raise TrustmhError(f"{source} record {rec_no}: {len(cells)} cells, expected {len(ETHICMH_COLUMNS)}")
        row: dict[str, Any] = dict(zip(ETHICMH_COLUMNS, cells, strict=False))
        try:
            row["index"] = int(row["index"])
        except ValueError as exc:
            raise TrustmhError(f"{source} record {rec_no}: field 'index' is not an integer: {row['index']!r}") from exc
        gold = row["expected_reasoning"].strip()
        if gold not in CHOICES:
            raise TrustmhError(f"{source} record {rec_no} (index {row['index']}): field 'expected_reasoning' "
                               f"must be one of A-D, got {gold!r}")
        row["expected_reasoning"] = gold
        rows.append(row)
    ids = [r["index"] for r in rows]
    if len(set(ids)) != len(ids):
        raise TrustmhError(f"{source}: duplicate values in column 'index'")
    return rows


def load_ethicmh(path: Path, mode: Mode) -> list[dict[str, Any]]:
    """EthicMH rows, decoded the faithful way (mojibake kept) or repaired (default)."""
    raw = Path(path).read_bytes()
    text = decode_faithful(raw, str(path)) if mode == "faithful" else decode_repaired(raw, str(path))
    return parse_ethicmh(text, str(path))
