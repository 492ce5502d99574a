"""The one reader of a team's conversation set files, shared by `trustmh sets check FILE` and `-O sets=DIR`
(docs/conversations.md#own-sets): whatever the run refuses, the check refuses with the same line.

One rule each, stated here once:

* what may be read: a regular file (a symlink is followed to one), never a device, FIFO or directory, opened
  without blocking and read up to MAX_SET_BYTES (a set larger than that is refused before it is parsed);
* what it must hold: UTF-8 text, and strings that are text (a lone surrogate, which JSON's `\\ud800` escape can
  write, cannot be sent to a model: refused naming the row and field);
* how many: at most MAX_SET_CONVERSATIONS conversations (the near-duplicate measure compares every pair);
* duplicates: the same conversation twice (every field but its id) is found by hashing, in linear time, and the
  near-duplicate measure then compares only distinct conversations.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError

# 16 MB: about 40 times the largest shipped set (ai_disclosure.json, 0.43 MB).
MAX_SET_BYTES = 16 * 2**20
# About 7 times the largest shipped set (284 conversations); the near-duplicate pass (every pair, by sparse
# products) over this many distinct conversations takes about 1.5 s of CPU and n × n counts in memory.
MAX_SET_CONVERSATIONS = 2000


def read_set_bytes(path: Path) -> bytes:
    """The bytes of a set file, or one TrustmhError line naming the file: not a regular file, or too large."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read conversation set ({exc.strerror or exc})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):  # checked on the open file: a device cannot be swapped in after
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a device, FIFO or socket"
            raise TrustmhError(f"{path}: {kind}, not a set file; a set is a regular .jsonl or .json file")
        data = f.read(MAX_SET_BYTES + 1)
    if len(data) > MAX_SET_BYTES:
        raise TrustmhError(f"{path}: larger than {MAX_SET_BYTES // 2**20} MB, the most a conversation set may be "
                           f"({max(info.st_size, len(data)):,} bytes); split it, or trim it")
    return data


def read_set_text(path: Path) -> str:
    """A set file as text (`read_set_bytes`, then strict UTF-8, naming the byte offset of the first bad byte)."""
    data = read_set_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{path}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8 text; save "
                           "the set as UTF-8") from None


def _strings(value: Any, field: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield field, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{field}.{k}" if field else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{field}[{i}]")


def text_problems(rows: Sequence[Any], where: str) -> list[str]:
    """One line per conversation holding a string that is not text (a lone surrogate), naming row and field."""
    out = []
    for n, row in enumerate(rows):
        for field, text in _strings(row, ""):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                out.append(f"{where} row {n}: field '{field}' holds a lone surrogate (U+{ord(text[exc.start]):04X} "
                           f"at character {exc.start}), not text; write the character itself")
                break
    return out


def size_problems(rows: Sequence[Any], where: str) -> list[str]:
    if len(rows) > MAX_SET_CONVERSATIONS:
        return [f"{where}: {len(rows):,} conversations; a set holds at most {MAX_SET_CONVERSATIONS:,} (split it)"]
    return []


def duplicate_problems(rows: Sequence[Mapping[str, Any]], where: str, identity: Callable[[Mapping[str, Any]], str]
                       ) -> tuple[list[str], list[Mapping[str, Any]]]:
    """(one line per conversation that repeats an earlier one, the distinct conversations), in linear time;
    `identity`: what makes two conversations the same (the generator's `identity`)."""
    first: dict[str, int] = {}
    out, distinct = [], []
    for n, row in enumerate(rows):
        key = hashlib.sha256(identity(row).encode("utf-8")).hexdigest()
        if key in first:
            out.append(f"{where} row {n} ({row.get('id')}): the same conversation as row {first[key]} "
                       f"({rows[first[key]].get('id')}) but for its id")
            continue
        first[key] = n
        distinct.append(row)
    if len(out) > 3:  # a file of copies: one line says how many, not a line per copy
        out = out[:3] + [f"{where}: {len(out) - 3} more conversation(s) repeat an earlier one"]
    return out, distinct
