"""Registry of every dataset trustmh reads (docs/data.md#registry) and where its files are found.

The entries live in `registry.json` next to this module (generated once by `tools/gen_data_registry.py`
from the reference data's MANIFEST.sha256 and the specs; the manifest is never read at run time).

`resolve(name, relpath, user_path=None)` looks, in order, at:

1. an explicit user path (returned as given; the only source for gated datasets);
2. `$TRUSTMH_DATA_DIR/<relpath>` (checked against the registered sha256);
3. the cache, `$TRUSTMH_CACHE_DIR/<relpath>` (default `~/.cache/trustmh`; checked against the registered
   sha256 or, for files whose hash is not known in advance, against the hash pinned at first download);
4. a download from the registered publisher URL, verified before it is moved into the cache
   (see `trustmh.data.download`; `TRUSTMH_OFFLINE=1` forbids it).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, TypeVar, cast

from trustmh.core import TrustmhError, truthy
from trustmh.digest import sha256_file

DEFAULT_CACHE = Path("~/.cache/trustmh")
T = TypeVar("T")


@dataclass(frozen=True)
class DataFile:
    relpath: str  # path under TRUSTMH_DATA_DIR (e.g. "external/USMLE-Mental/USMLE-mental.jsonl")
    sha256: str | None = None  # None: not known in advance (trust on first use when downloadable)
    url: str | None = None  # direct publisher URL (pinned commit)
    archive_url: str | None = None  # publisher zip that holds this file ...
    member: str | None = None  # ... under this member name
    optional: bool = False  # not needed by any sub-task (licence texts, unused splits, figures)
    note: str | None = None
    git_blob: str | None = None  # git's object id of the file (sha1 of "blob <size>\0" + bytes), checked on download

    @property
    def downloadable(self) -> bool:
        return self.url is not None or self.archive_url is not None

    @property
    def tofu(self) -> bool:
        """Downloadable without a known hash: the hash is pinned at the first verified download."""
        return self.sha256 is None and self.downloadable


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    licence: str
    source: str
    gated: bool = False
    files: tuple[DataFile, ...] = field(default_factory=tuple)
    notes: str = ""
    access: str | None = None  # gated: where to request access
    option: str | None = None  # the `-O` key of the sub-task option that reads a user's copy
    hf_repo: str | None = None
    revision: str | None = None
    download_error: str | None = None  # why no download is possible (shown as is)

    @property
    def urls(self) -> tuple[str, ...]:
        """Every publisher URL this dataset may be downloaded from."""
        seen: dict[str, None] = {}
        for f in self.files:
            for u in (f.url, f.archive_url):
                if u:
                    seen[u] = None
        return tuple(seen)

    @property
    def user_option(self) -> str:
        """How a user supplies their own copy: the `-O` option that reads it, else the data folder."""

        if self.option:
            return f"-O {self.option}=PATH"
        return "TRUSTMH_DATA_DIR=FOLDER (a folder laid out like ../shared/data)"

    def file(self, relpath: str) -> DataFile | None:
        for f in self.files:
            if f.relpath == relpath:
                return f
        return None

    def files_under(self, relpath: str) -> tuple[DataFile, ...]:
        prefix = relpath.rstrip("/") + "/"
        return tuple(f for f in self.files if f.relpath.startswith(prefix))


def _load() -> dict[str, Dataset]:
    text = resources.files("trustmh.data").joinpath("registry.json").read_text(encoding="utf-8")
    raw: dict[str, Any] = json.loads(text)
    out: dict[str, Dataset] = {}
    for d in raw["datasets"]:
        files = tuple(
            DataFile(
                relpath=f["relpath"], sha256=f.get("sha256"), git_blob=f.get("git_blob"), url=f.get("url"),
                archive_url=f.get("archive_url"), member=f.get("member"),
                optional=bool(f.get("optional", False)), note=f.get("note"),
            )
            for f in d.get("files", [])
        )
        out[d["name"]] = Dataset(
            name=d["name"], title=d["title"], licence=d["licence"], source=d["source"],
            gated=bool(d.get("gated", False)), files=files, notes=d.get("notes", ""),
            access=d.get("access"), option=d.get("option"), hf_repo=d.get("hf_repo"),
            revision=d.get("revision"), download_error=d.get("download_error"),
        )
    return out


DATASETS: dict[str, Dataset] = _load()


# --- locations -------------------------------------------------------------------------------------------


def data_dir() -> Path | None:
    value = os.environ.get("TRUSTMH_DATA_DIR")
    return Path(value).expanduser() if value else None


def cache_dir() -> Path:
    value = os.environ.get("TRUSTMH_CACHE_DIR")
    return Path(value).expanduser() if value else DEFAULT_CACHE.expanduser()


def offline() -> bool:
    return truthy(os.environ.get("TRUSTMH_OFFLINE", ""))


def get(name: str) -> Dataset:
    try:
        return DATASETS[name]
    except KeyError:
        raise TrustmhError(f"unknown dataset {name!r}; known: {', '.join(sorted(DATASETS))}") from None


def norm_relpath(relpath: str | os.PathLike[str]) -> str:
    p = PurePosixPath(str(relpath).replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts:
        raise TrustmhError(f"data relpath must be relative and stay inside the data folder: {relpath}")
    return str(p).removeprefix("./")


# --- hashing (lazy, once per file per process) -----------------------------------------------------------

_HASHES: dict[tuple[str, int, int], str] = {}
_PARSED: dict[tuple[str, int, int, str], Any] = {}


def git_blob_id(data: bytes) -> str:
    """Git's object id of a file's bytes: sha1(b"blob <size>\\0" + bytes) (what `git hash-object` prints)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def git_blob_id_stream(fh: BinaryIO, size: int) -> str:
    """`git_blob_id` of `size` bytes read from `fh` (streamed); an error if the stream holds another size."""
    h = hashlib.sha1(b"blob %d\0" % size)
    seen = 0
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        h.update(chunk)
        seen += len(chunk)
    if seen != size:
        raise TrustmhError(f"git blob id: expected {size} bytes, read {seen}")
    return h.hexdigest()


def git_blob_id_file(path: Path) -> str:
    """`git_blob_id` of a file, streamed."""
    with open(path, "rb") as fh:
        return git_blob_id_stream(fh, path.stat().st_size)


def read_once(path: Path, parse: Callable[[Path], T]) -> T:
    """`parse(path)`, computed once per process per version of the file (keyed like `cached_sha256`): a plan
    reads one dataset for several sub-tasks and conditions. The value is shared by every caller: never
    mutate it."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, f"{parse.__module__}.{parse.__qualname__}")
    if key not in _PARSED:
        _PARSED[key] = parse(path)
    return cast(T, _PARSED[key])


def cached_sha256(path: Path) -> str:
    """sha256 of a file, computed once per process (keyed by path, size and mtime, so an edit is seen)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    digest = _HASHES.get(key)
    if digest is None:
        digest = _HASHES[key] = sha256_file(path)
    return digest
