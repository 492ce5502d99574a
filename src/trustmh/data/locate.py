"""Where a registered dataset's files are found, verified and recorded.

`resolve(name, relpath)` returns a local path for one file of a registered dataset, looking in order at: an
explicit user path, `TRUSTMH_DATA_DIR`, the download cache, then a checksum-verified download
(`trustmh.data.download`). Every file resolved is recorded with its sha256 for the run's provenance.
"""

from __future__ import annotations

import os
from pathlib import Path

from trustmh.core import ChecksumError, TrustmhError
from trustmh.data.download import fetch_file, load_pins
from trustmh.data.files import MAX_DATA_FILE_BYTES, check_input_file
from trustmh.data.registry import (
    DataFile,
    Dataset,
    cache_dir,
    cached_sha256,
    data_dir,
    get,
    git_blob_id_file,
    norm_relpath,
)


def expected_sha256(df: DataFile) -> str | None:
    """The registered hash, else the hash pinned at first download (trust on first use), else None."""
    if df.sha256:
        return df.sha256
    if df.tofu:
        return load_pins().get(df.relpath)
    return None


def check_file(dataset: str, df: DataFile, path: Path, where: str, *, use_pin: bool = True) -> None:
    """Raise `TrustmhError` if `path` does not have the expected sha256 (no-op when none is known)."""
    expected = df.sha256 or (expected_sha256(df) if use_pin else None)
    if expected is None:
        if df.git_blob:  # a copy of a file known by its git blob id only (e.g. MentalBench-100k.zip)
            actual = git_blob_id_file(path)
            if actual != df.git_blob.lower():
                raise ChecksumError(
                    f"dataset {dataset}: checksum mismatch for {path} ({where}): expected git blob id "
                    f"{df.git_blob}, actual {actual}. Replace it with the publisher's file (or delete it and run "
                    f"`trustmh data fetch {dataset}`)."
                )
        return
    actual = cached_sha256(path)
    if actual != expected:
        raise ChecksumError(
            f"dataset {dataset}: checksum mismatch for {path} ({where}): expected sha256 {expected}, "
            f"actual {actual}. Replace it with the publisher's file (or delete it and run "
            f"`trustmh data fetch {dataset}`)."
        )


def find_local(dataset: Dataset, df: DataFile) -> tuple[Path, str] | None:
    """Where a registered file exists locally, without hashing: (path, "data dir" | "cache")."""
    root = data_dir()
    if root is not None and (root / df.relpath).is_file():
        return root / df.relpath, "data dir"
    cached = cache_dir() / df.relpath
    if cached.is_file():
        return cached, "cache"
    return None


# --- resolve ---------------------------------------------------------------------------------------------


def _gated_error(ds: Dataset) -> TrustmhError:
    return TrustmhError(
        f"dataset {ds.name} ({ds.title}) is gated and is only read from a path you supply: "
        f"{ds.access or 'request access at ' + ds.source}, then pass {ds.user_option}."
    )


def _resolve_file(ds: Dataset, df: DataFile) -> Path:
    root = data_dir()
    if root is not None:
        p = root / df.relpath
        if p.is_file():
            check_input_file(p, MAX_DATA_FILE_BYTES, str(p))  # bounded before it is hashed
            # Files without a registered hash in the data dir are the user's own copy: not pinned.
            check_file(ds.name, df, p, f"in TRUSTMH_DATA_DIR={root}", use_pin=False)
            return p
    cached = cache_dir() / df.relpath
    if cached.is_file():
        check_input_file(cached, MAX_DATA_FILE_BYTES, str(cached))
        check_file(ds.name, df, cached, "in the download cache")
        return cached
    return fetch_file(ds, df)


# Provenance of every file this process resolved: {dataset: {relpath or user path: sha256}}; written into
# results.json so a number can be traced to the exact bytes it came from.
_RESOLVED: dict[str, dict[str, str | None]] = {}


def resolved_files() -> dict[str, dict[str, str | None]]:
    return {name: dict(sorted(files.items())) for name, files in sorted(_RESOLVED.items())}


def reset_resolved() -> None:
    """Start a new provenance record (one per run or rescore)."""
    _RESOLVED.clear()


def _record(name: str, key: str, path: Path) -> Path:
    _RESOLVED.setdefault(name, {})[key] = cached_sha256(path) if path.is_file() else None
    return path


def resolve(name: str, relpath: str, user_path: str | os.PathLike[str] | None = None) -> Path:
    """Local path of `relpath` (relative to the data-dir layout) of dataset `name`.

    `relpath` may also name a folder holding registered files (e.g. the Ethics `outputs` folder): every
    registered file under it is made available and checked, and the folder is returned.
    """
    path = _resolve(name, relpath, user_path)
    return _record(name, f"user path {path}" if user_path is not None else relpath, path)


def _resolve(name: str, relpath: str, user_path: str | os.PathLike[str] | None) -> Path:
    ds = get(name)
    if user_path is not None:
        p = Path(user_path).expanduser()
        if not p.exists():
            raise TrustmhError(f"dataset {name}: the path you supplied does not exist: {p}")
        # a device (/dev/zero), a pipe or a huge file: refused by its stat, before any reader starts on it
        check_input_file(p, MAX_DATA_FILE_BYTES, f"dataset {name}: the path you supplied ({p})")
        return p
    if ds.gated:
        raise _gated_error(ds)
    rel = norm_relpath(relpath)
    df = ds.file(rel)
    if df is not None:
        return _resolve_file(ds, df)
    members = ds.files_under(rel)
    if not members:
        raise TrustmhError(
            f"dataset {name}: {rel} is not a registered file or folder of this dataset "
            f"(see `trustmh data list`); pass {ds.user_option} to use your own copy."
        )
    root = data_dir()
    if root is not None and all((root / f.relpath).is_file() for f in members):
        for f in members:
            check_file(name, f, root / f.relpath, f"in TRUSTMH_DATA_DIR={root}", use_pin=False)
        return root / rel
    for f in members:
        path = cache_dir() / f.relpath
        if path.is_file():
            check_file(name, f, path, "in the download cache")
        else:
            fetch_file(ds, f)
    return cache_dir() / rel
