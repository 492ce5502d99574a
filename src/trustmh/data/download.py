"""Checksum-verified downloads into the cache.

* Only URLs registered in `registry.json` are ever requested (publisher repositories at pinned commits).
* A download is streamed to a temporary file next to its destination, hashed, checked, and only then
  renamed into place (`os.replace`, atomic), so a failed or mismatching download leaves nothing at the
  final path and no temporary file behind.
* Files whose sha256 is not known in advance (ESConv.json, full ELEPHANT sets, the crisis data, the
  TrustMH zips) are pinned at their first verified download: the observed hash is stored in
  `<cache>/pins.json` and every later read or download must match it (trust on first use).
* A file registered with a git blob id (a file of a publisher's GitHub repository at a pinned commit, e.g.
  MentalBench-100k.zip) is also checked against it before the rename: sha1 of `blob <size>\0` + the bytes.
  Its sha256, when not registered, is then pinned at that first download, which the blob id has verified.
* `TRUSTMH_OFFLINE=1` forbids any network access.
* Zip members: the zip is downloaded (pinned on first use) into `<cache>/_archives/`, and each registered
  member is extracted the same way (temporary file, checked against its registered sha256, renamed).
"""

from __future__ import annotations

import functools
import hashlib
import json
import ssl
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

from trustmh import __version__
from trustmh.core import ChecksumError, TrustmhError
from trustmh.data.registry import (
    DATASETS,
    DataFile,
    Dataset,
    cache_dir,
    git_blob_id_stream,
    offline,
)
from trustmh.digest import sha256_file
from trustmh.storage import atomic_file, write_text_atomic

PINS_FILE = "pins.json"
ARCHIVES_DIR = "_archives"
TIMEOUT_S = 60


def registered_urls() -> frozenset[str]:
    return frozenset(u for ds in DATASETS.values() for u in ds.urls)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process: making one loads the system's certificates (about 0.1 s of CPU), which
    urllib otherwise does for every request, and a plan may ask for a missing file once per sub-task."""
    return ssl.create_default_context()


def http_get(url: str) -> Iterator[bytes]:
    """Stream the body of `url` in chunks. Tests replace this function; it is the only network access."""
    req = urllib.request.Request(url, headers={"User-Agent": f"trustmh/{__version__}"})
    # URL checked against the registry
    with urllib.request.urlopen(req, timeout=TIMEOUT_S, context=_tls_context()) as resp:
        while True:
            chunk = resp.read(1 << 20)
            if not chunk:
                break
            yield chunk


# --- trust-on-first-use pins ---------------------------------------------------------------------------


def _pins_path() -> Path:
    return cache_dir() / PINS_FILE


def load_pins() -> dict[str, str]:
    p = _pins_path()
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TrustmhError(f"{p}: unreadable pin file ({exc}); delete it to pin hashes afresh") from exc
    if not isinstance(data, dict):
        raise TrustmhError(f"{p}: expected a JSON object of key -> sha256; delete it to pin hashes afresh")
    return {str(k): str(v) for k, v in data.items()}


def save_pin(key: str, digest: str) -> None:
    pins = load_pins()
    pins[key] = digest
    write_text_atomic(_pins_path(), json.dumps(pins, indent=1, sort_keys=True))


# --- writing ---------------------------------------------------------------------------------------------


def _write_verified(chunks: Iterator[bytes], dest: Path, expected: str | None, what: str,
                    pin_key: str | None = None, git_blob: str | None = None) -> str:
    """Write `chunks` to `dest` via a temporary file; check the sha256 (and the git blob id when given);
    rename. Returns the sha256."""
    with atomic_file(dest, "wb") as fh, tempfile.TemporaryFile() as copy:
        h = hashlib.sha256()
        size = 0
        for chunk in chunks:
            h.update(chunk)
            fh.write(chunk)
            size += len(chunk)
            if git_blob is not None:  # a second copy: the blob id needs the size before the bytes
                copy.write(chunk)
        actual = h.hexdigest()
        if git_blob is not None:
            copy.seek(0)
            blob = git_blob_id_stream(copy, size)
            if blob != git_blob.lower():
                raise ChecksumError(
                    f"checksum mismatch for {what}: expected git blob id {git_blob} (registered), actual {blob}; "
                    f"nothing was written to {dest}"
                )
        if expected is not None and actual != expected:
            kind = "pinned at first download" if pin_key and expected else "registered"
            raise ChecksumError(
                f"checksum mismatch for {what}: expected sha256 {expected} ({kind}), actual {actual}; "
                f"nothing was written to {dest}"
            )
    if expected is None and pin_key is not None:
        save_pin(pin_key, actual)
    return actual


def download(url: str, dest: Path, expected: str | None, pin_key: str | None = None,
             git_blob: str | None = None) -> Path:
    """Download a registered URL to `dest`, verified against `expected` or the pin under `pin_key`."""
    if url not in registered_urls():
        raise TrustmhError(f"refusing to download {url}: not a registered publisher URL")
    if offline():
        raise TrustmhError(
            f"TRUSTMH_OFFLINE=1: not downloading {url}; put the file at {dest} or under TRUSTMH_DATA_DIR, "
            f"or unset TRUSTMH_OFFLINE and run `trustmh data fetch`"
        )
    if expected is None and pin_key is not None:
        expected = load_pins().get(pin_key)
    try:
        _write_verified(http_get(url), dest, expected, url, pin_key, git_blob)
    except TrustmhError:
        raise
    except OSError as exc:  # URLError and HTTPError are OSErrors
        raise TrustmhError(f"download of {url} failed: {exc}") from exc
    return dest


def archive_path(url: str) -> Path:
    tag = hashlib.sha256(url.encode()).hexdigest()[:12]
    return cache_dir() / ARCHIVES_DIR / f"{tag}-{url.rsplit('/', 1)[-1]}"


def _find_member(zf: zipfile.ZipFile, member: str) -> zipfile.ZipInfo:
    names = {i.filename: i for i in zf.infolist() if not i.is_dir()}
    if member in names:
        return names[member]
    # Tolerate an extra top folder in the zip, but never guess between several candidates.
    hits = [i for n, i in names.items() if n.endswith("/" + member) and "__MACOSX" not in n]
    if len(hits) == 1:
        return hits[0]
    raise TrustmhError(f"{zf.filename}: member {member} not found (or ambiguous) in the archive")


def extract_member(zip_file: Path, member: str, dest: Path, expected: str | None, what: str) -> Path:
    try:
        with zipfile.ZipFile(zip_file) as zf:
            info = _find_member(zf, member)
            with zf.open(info) as src:
                _write_verified(iter(lambda: src.read(1 << 20), b""), dest, expected, what)
    except zipfile.BadZipFile as exc:
        raise TrustmhError(f"{zip_file}: not a valid zip ({exc}); delete it and fetch again") from exc
    return dest


def _ensure_archive(url: str) -> Path:
    zpath = archive_path(url)
    pin_key = "archive:" + url
    if zpath.is_file():
        pinned = load_pins().get(pin_key)
        if pinned is not None:
            actual = sha256_file(zpath)
            if actual != pinned:
                raise ChecksumError(
                    f"checksum mismatch for cached archive {zpath}: expected sha256 {pinned} (pinned at "
                    f"first download), actual {actual}; delete it and fetch again"
                )
        return zpath
    return download(url, zpath, None, pin_key=pin_key)


def fetch_file(ds: Dataset, df: DataFile) -> Path:
    """Download one registered file into the cache (verified) and return its path."""
    dest = cache_dir() / df.relpath
    if ds.gated:
        raise TrustmhError(f"dataset {ds.name} is gated: {ds.access}; pass {ds.user_option}")
    if not df.downloadable:
        if ds.download_error:
            raise TrustmhError(f"dataset {ds.name}: {ds.download_error}")
        raise TrustmhError(
            f"dataset {ds.name}: {df.relpath} has no registered download; put it under TRUSTMH_DATA_DIR "
            f"at {df.relpath} or pass {ds.user_option} (source: {ds.source})"
        )
    if df.url is not None:
        return download(df.url, dest, df.sha256, pin_key=None if df.sha256 else df.relpath, git_blob=df.git_blob)
    assert df.archive_url is not None and df.member is not None
    zpath = _ensure_archive(df.archive_url)
    return extract_member(zpath, df.member, dest, df.sha256, f"{df.member} in {df.archive_url}")
