"""Reading data files: JSONL, and tables in CSV/TSV (also the single CSV of a zip), JSON, JSONL, Parquet or
Arrow, as lists of dicts.

Every loader goes through here so that bad input fails the same way everywhere: a `TrustmhError` naming
the file and the line or record. CSV cells stay text (no type guessing: a literal `nan` stays `nan`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import zipfile
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import IO, Any

from trustmh.core import TrustmhError

TABLE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".pq", ".arrow", ".zip")


# A cell a spreadsheet would run as a formula when the CSV is opened (=, +, -, @, or a tab or carriage return
# before one of them): written with a leading apostrophe, which spreadsheets show as text. Numbers, and text
# that reads as a plain number ("-0.25"), are written as they are.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """A CSV cell that no spreadsheet executes (FORMULA_STARTS); None is an empty cell."""
    if value is None:
        return ""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value


def csv_text(header: list[str], rows: Any) -> str:
    """The one CSV writer of everything trustmh writes: a header, then rows (lists, in header order), every
    cell through `safe_cell`, "\\n" line ends."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([safe_cell(v) for v in row])
    return buf.getvalue()


# The largest file a user may hand trustmh, by kind (checked with stat before a byte is read, so `/dev/zero`
# or a mistaken multi-gigabyte path is one clear line, not a process that fills the memory).
MAX_DATA_FILE_BYTES = 2 << 30  # a dataset (the largest published one, MentalBench-100k, is far below)
MAX_SMALL_FILE_BYTES = 64 << 20  # a reference CSV, exported labels, a review sample, a rescored output file
MAX_CONFIG_BYTES = 1 << 20  # a policy, an endpoint file, a price file: a few lines each


def check_input_file(path: str | os.PathLike[str], limit: int, what: str) -> int:
    """The size of the regular file at `path`; a TrustmhError naming `what` when it is missing, not a regular
    file (a device such as /dev/zero, a pipe: they have no size to check, and are refused) or larger than
    `limit` bytes. A directory is left to the caller (some inputs are folders)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise TrustmhError(f"{what}: cannot read (file not found)") from None
    except OSError as exc:
        raise TrustmhError(f"{what}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        return 0
    if not stat.S_ISREG(info.st_mode):
        raise TrustmhError(f"{what}: not a regular file (a device or a pipe); give a file")
    if info.st_size > limit:
        raise TrustmhError(f"{what}: {info.st_size:,} bytes, larger than the {limit:,} bytes trustmh reads "
                           "from such a file")
    return info.st_size


def present(path: str | os.PathLike[str]) -> bool:
    """Whether a reader should read `path`: something other than a folder is there. A device or a pipe counts as
    there, so that reading it is refused (`bounded_file`) instead of being passed over as a missing file."""
    return os.path.exists(path) and not os.path.isdir(path)


def bounded_file(path: str | os.PathLike[str], limit: int = MAX_DATA_FILE_BYTES) -> Path:
    """`path`, once `check_input_file` has found it a regular file within `limit` (default: a dataset's bound):
    every publisher's file is opened through it, those a reader finds by walking a folder included, so a device,
    a pipe, a symlink to /dev/zero or an oversized file is refused by its stat, before a byte is read."""
    check_input_file(path, limit, str(path))
    if os.path.isdir(path):
        raise TrustmhError(f"{path}: is a directory; expected a file")
    return Path(path)


def read_bytes_bounded(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """A regular file's bytes, refused (one line naming `what`) above `limit`; read with a cap as well, so a
    file that grows while it is read is not read past it."""
    check_input_file(path, limit, what)
    if os.path.isdir(path):
        raise TrustmhError(f"{what}: is a directory; expected a file")
    try:
        with open(path, "rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise TrustmhError(f"{what}: cannot read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise TrustmhError(f"{what}: larger than the {limit:,} bytes trustmh reads from such a file")
    return data


def read_text_bounded(path: str | os.PathLike[str], limit: int, what: str, encoding: str = "utf-8") -> str:
    """A regular file's text (`read_bytes_bounded`); not UTF-8 is one line naming `what` and the byte."""
    data = read_bytes_bounded(path, limit, what)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise TrustmhError(f"{what} line {line}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") \
            from None


def read_jsonl(path: str | os.PathLike[str] | Traversable, *, name: str | None = None) -> list[dict[str, Any]]:
    """The objects of a JSONL file, blank lines skipped. `name` is how errors call the file (default: its
    path); every line must hold one JSON object."""
    src = Path(path) if isinstance(path, str | os.PathLike) else path
    where = name if name is not None else str(src)
    rows = []
    # Iterating the file splits on newlines only (str.splitlines would also split inside a JSON string
    # holding U+2028 and friends).
    if isinstance(src, Path) and src.is_dir():
        raise TrustmhError(f"{where}: is a directory; expected a JSONL file")
    if isinstance(src, Path):
        check_input_file(src, MAX_DATA_FILE_BYTES, where)
    lineno = 0
    try:
        with src.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise TrustmhError(f"{where} line {lineno}: invalid JSON ({exc.msg})") from exc
                if not isinstance(obj, dict):
                    raise TrustmhError(f"{where} line {lineno}: expected a JSON object")
                rows.append(obj)
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{where} line {lineno + 1}: not UTF-8 text (byte {exc.start} of the line); save "
                           "the file as UTF-8") from exc
    except FileNotFoundError as exc:
        raise TrustmhError(f"{where}: file not found") from exc
    except OSError as exc:
        raise TrustmhError(f"{where}: cannot read ({exc.strerror or exc})") from exc
    return rows


def read_table(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a table file (see `read_table_with_header`)."""
    return read_table_with_header(path)[1]


def read_table_with_header(path: str | os.PathLike[str]) -> tuple[list[str], list[dict[str, Any]]]:
    """(column names, rows) of a CSV/TSV, JSON, JSONL, Parquet or Arrow file; column names stripped.

    CSV/TSV: the first record is the header, blank records are skipped and every other record must have
    as many fields as the header. JSON: a list of objects, an object holding exactly one such list, or a
    column-oriented object `{"column": [values...]}`. The columns of JSON/JSONL rows are the union of their
    keys, in order of appearance.
    """
    path = Path(path)
    if not path.exists():
        raise TrustmhError(f"{path}: file not found")
    if path.is_dir():
        raise TrustmhError(f"{path}: is a directory; expected a file ({', '.join(TABLE_SUFFIXES)})")
    check_input_file(path, MAX_DATA_FILE_BYTES, str(path))
    suffix = path.suffix.lower()
    try:
        if suffix in (".csv", ".tsv"):
            return _read_csv(path, "\t" if suffix == ".tsv" else ",")
        if suffix == ".zip":
            return _read_zipped_csv(path)
        if suffix in (".parquet", ".pq", ".arrow"):
            return _read_arrow(path, suffix)
        if suffix == ".jsonl":
            return _keyed(read_jsonl(path))
        if suffix == ".json":
            return _keyed(_json_rows(path))
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustmhError(f"{path}: cannot read ({type(exc).__name__}: {exc})") from exc
    raise TrustmhError(f"{path}: unsupported file type {suffix!r} (use {', '.join(TABLE_SUFFIXES)})")


def zipped_csv_member(path: Path) -> str:
    """The name of the single CSV inside a zip (macOS `__MACOSX/` and dot-files ignored); an error for none or
    several."""
    try:
        with zipfile.ZipFile(path) as zf:
            names = [i.filename for i in zf.infolist() if not i.is_dir() and "__MACOSX" not in i.filename
                     and not i.filename.rsplit("/", 1)[-1].startswith(".") and i.filename.lower().endswith(".csv")]
    except zipfile.BadZipFile as exc:
        raise TrustmhError(f"{path}: not a valid zip ({exc})") from exc
    if len(names) != 1:
        raise TrustmhError(f"{path}: expected exactly one .csv inside the zip, found {len(names)}"
                           + (f" ({', '.join(names[:5])})" if names else ""))
    return names[0]


def _read_zipped_csv(path: Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The single CSV of a zip, read without extracting it (MentalBench-100k.zip)."""
    member = zipped_csv_member(path)
    with zipfile.ZipFile(path) as zf, zf.open(member) as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
        return _csv_rows(fh, f"{path}!{member}", ",")


def _read_csv(path: Path, delimiter: str) -> tuple[list[str], list[dict[str, Any]]]:
    with open(path, encoding="utf-8-sig", newline="") as fh:
        return _csv_rows(fh, str(path), delimiter)


def _csv_rows(fh: IO[str], path: str, delimiter: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Header and rows; a record with another number of fields than the header is skipped and named on
    stderr (docs/data.md#unusable-rows); the file is refused only when no record is usable."""
    reader = csv.reader(fh, delimiter=delimiter)
    raw_header = next(reader, None)
    if raw_header is None:
        raise TrustmhError(f"{path}: empty file")
    header = [h.strip() for h in raw_header]
    rows = []
    bad: list[str] = []
    for lineno, rec in enumerate(reader, start=2):
        if not rec or not any(c.strip() for c in rec):
            continue
        if len(rec) != len(header):
            bad.append(f"{path}: record {lineno}: {len(rec)} fields, the header has {len(header)}")
            continue
        rows.append(dict(zip(header, rec, strict=True)))
    if bad and not rows:
        raise TrustmhError(f"{path}: no usable record ({bad[0]}" + (f"; and {len(bad) - 1} more" if len(bad) > 1 else "")
                           + ")")
    for line in bad:
        print(f"trustmh: {line}; skipped", file=sys.stderr, flush=True)
    return header, rows


def _read_arrow(path: Path, suffix: str) -> tuple[list[str], list[dict[str, Any]]]:
    import pyarrow as pa

    try:
        if suffix == ".arrow":
            try:
                table = pa.ipc.open_stream(pa.memory_map(str(path))).read_all()
            except pa.ArrowInvalid:
                table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        else:
            import pyarrow.parquet as pq

            table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises many types for a bad file
        raise TrustmhError(f"{path}: cannot read as {suffix} ({type(exc).__name__}: {exc})") from exc
    header = [str(c).strip() for c in table.column_names]
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return header, [dict(zip(header, vals, strict=True)) for vals in zip(*cols, strict=True)]


def _json_rows(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: invalid JSON at line {exc.lineno} ({exc.msg})") from exc
    if isinstance(data, dict):
        lists = [v for v in data.values() if isinstance(v, list)]
        if len(lists) == 1 and lists[0] and all(isinstance(r, dict) for r in lists[0]):
            data = lists[0]  # {"data": [rows...]} (plus, perhaps, metadata)
        elif data and len(lists) == len(data):
            # column-oriented export {"context": [...], ...}
            keys = list(data)
            n = len(data[keys[0]])
            if any(len(v) != n for v in data.values()):
                raise TrustmhError(f"{path}: columns of different lengths")
            data = [{k: data[k][i] for k in keys} for i in range(n)]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        raise TrustmhError(f"{path}: expected a JSON list of objects (or an object holding one list)")
    return data


def _keyed(rows: list[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """Column names stripped; the header is the union of the keys in order of appearance."""
    out = [{str(k).strip(): v for k, v in r.items()} for r in rows]
    return list(dict.fromkeys(k for r in out for k in r)), out
