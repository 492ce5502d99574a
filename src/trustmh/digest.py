"""The one digest of every file identity the project records (registry pins, run manifests, references, review
labels, certificates), so that a reader can recompute any recorded hash with standard tools
(docs: data.md, "How hashes are computed").

* **One file**: the sha256 of its bytes, hex (what `sha256sum FILE` prints).
* **A set of files**: the sha256, hex, of the UTF-8 text made of one line per file,
  `<sha256 of the file>  <name>\\n` (two spaces, as `sha256sum` prints), the lines sorted by name, then by
  hash (code-point order, which is `LC_ALL=C sort`'s byte order). The name is the file's base name. A file's
  hash has a fixed length and a name holds no newline, so no two different sets share their text:
  unlike bytes run together, where `a|bc` and `ab|c` are the same. For files under one folder:
  `cd DIR && sha256sum a.csv b.csv | LC_ALL=C sort -k2 | sha256sum`.

A set of one file is a set: its digest is not the file's own hash. Which kinds are single files and which are
sets is listed on the data page.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from trustmh.core import TrustmhError


def sha256_bytes(data: bytes) -> str:
    """sha256 hex of a file's bytes already read (the hash of exactly what was parsed)."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    """sha256 hex of a file's bytes (streamed), always recomputed: `sha256sum FILE`."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def listing_sha256(named: Iterable[tuple[str, str]]) -> str:
    """The set digest of files already hashed, given as (name, sha256 hex) pairs (see the module's recipe)."""
    lines = []
    for name, sha in named:
        if "\n" in name or "\\" in name:  # sha256sum would escape such a name: its listing would differ
            raise TrustmhError(f"file name {name!r}: a newline or backslash cannot be part of a recorded hash")
        lines.append((name, sha))
    return hashlib.sha256("".join(f"{sha}  {name}\n" for name, sha in sorted(lines)).encode("utf-8")).hexdigest()


def files_sha256(paths: Iterable[Path]) -> str:
    """The set digest of files on disk, each named by its base name (see the module's recipe)."""
    return listing_sha256((Path(p).name, sha256_file(Path(p))) for p in paths)


def named_sha256(files: Mapping[str, str | None]) -> str:
    """The set digest of {path: sha256 hex} (a run's provenance record), each named by its path's base name."""
    unhashed = sorted(key for key, sha in files.items() if sha is None)
    if unhashed:  # a folder or a missing file: nothing to recompute
        raise TrustmhError(f"{unhashed[0]}: not a file read, so no part of a recorded hash")
    return listing_sha256((Path(key).name, str(sha)) for key, sha in files.items())
