"""Where a run directory lives: a local path, or an fsspec URL (`s3://bucket/run`, `gs://…`, `memory://…`).

`run_path(x)` gives a `pathlib.Path` for a local path (and for a `file://` URL), so local runs keep exactly
today's behaviour, and a `Url` for anything else: a small object with the part of the `Path` interface the
run directory code uses (`/`, `name`, `exists`, `is_dir`, `read_text`, `unlink`, `glob`, `rglob`…), backed by
the URL's fsspec filesystem, built with Inspect's own options so that trustmh and Inspect's log writer see
the same objects. `write_text_atomic` writes either kind without ever leaving a half-written file: a local
temporary name then `os.replace`; on an object store one upload (an object becomes visible only when its
upload completes); on any other fsspec filesystem a `name.tmp-…` then `mv`.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import io
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any
from urllib.parse import unquote, urlparse

from trustmh.core import TrustmhError

# Filesystems whose writes are whole-object uploads: a reader sees the old object or the new one, never a part.
OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "oci", "r2"})


def is_url(where: str | Path) -> bool:
    """A URL with a filesystem scheme (not a Windows drive letter, not a plain path)."""
    text = str(where)
    scheme = urlparse(text).scheme if "://" in text else ""
    return len(scheme) > 1


def run_path(where: str | Path | Url) -> Path | Url:
    """The run directory (or a file in one) `where` names: a Path for local paths and file:// URLs, else a Url."""
    if isinstance(where, Url | Path):
        return where
    if is_url(where):
        if where.startswith("file://"):
            return Path(unquote(urlparse(where).path))
        return Url(where)
    return Path(where)


def cli_path(value: str) -> Path | Url:
    """argparse type of `--out` and run-directory arguments; an empty one is refused (it would name the
    current directory, and a run would write its files among whatever is there)."""
    if not value.strip():
        import argparse

        raise argparse.ArgumentTypeError("expected a directory (a path or a URL), got an empty string")
    return run_path(value)


def _install_hint(protocol: str) -> str | None:
    """The package that provides `protocol`'s fsspec filesystem (s3fs, gcsfs, adlfs…), when fsspec knows it."""
    from fsspec.registry import known_implementations

    impl = known_implementations.get(protocol)
    if impl is None:
        return None
    return impl["class"].split(".", 1)[0]


def fs_options(url: str) -> dict[str, Any]:
    """The fsspec options Inspect uses for `url` (so trustmh's run files and Inspect's logs agree). Storage's
    one touch of Inspect's private API (`inspect_ai._util`; the others are `trustmh.inspect_compat`'s): here,
    so that the ground floor does not import the Inspect adapter, which stands above the models."""
    try:
        from inspect_ai._util.file import default_fs_options
    except ImportError:  # pragma: no cover  a moved helper must not make storage unusable
        return {"use_listings_cache": False}
    return dict(default_fs_options(url))


def filesystem(url: str) -> Any:
    """The fsspec filesystem of `url`, with Inspect's options for it; a one-line TrustmhError naming the URL
    when its filesystem is unknown or not installed."""
    import fsspec

    protocol = url.split("://", 1)[0]
    options = fs_options(url)
    try:
        fs, _ = fsspec.core.url_to_fs(url, **options)
    except ImportError:
        package = _install_hint(protocol) or protocol
        raise TrustmhError(f"{url}: install {package} for {protocol}:// run directories (pip install {package}; "
                           "it is not installed)") from None
    except ValueError as exc:
        raise TrustmhError(f"{url}: unknown filesystem {protocol!r} ({_first_line(exc)}); use a local path or "
                           "an fsspec URL such as s3://bucket/run") from None
    return fs


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def describe(exc: BaseException) -> str:
    """An error of a filesystem, in one line."""
    return f"{type(exc).__name__}: {_first_line(exc)}"


class Url:
    """A location on an fsspec filesystem, with the part of pathlib's interface that run directories use.
    The filesystem is looked up at each use (fsspec caches instances; Inspect closes its S3 sessions after
    an eval, so a kept instance could be a closed one)."""

    def __init__(self, url: str) -> None:
        scheme, rest = url.split("://", 1)
        self.protocol = scheme.lower()
        self.url = f"{self.protocol}://{rest.rstrip('/')}" if rest.strip("/") else f"{self.protocol}://{rest}"

    # --- naming
    def __str__(self) -> str:
        return self.url

    def __repr__(self) -> str:
        return f"Url({self.url!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Url) and other.url == self.url

    def __hash__(self) -> int:
        return hash(self.url)

    def __truediv__(self, name: str | PurePosixPath) -> Url:
        return Url(f"{self.url}/{str(name).strip('/')}")

    @property
    def name(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def parent(self) -> Url:
        return Url(self.url.rsplit("/", 1)[0])

    def with_suffix(self, suffix: str) -> Url:
        return Url(str(PurePosixPath(self.url).with_suffix(suffix)).replace(":/", "://", 1))

    def relative_to(self, other: Url) -> PurePosixPath:
        if not self.url.startswith(other.url + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.url[len(other.url) + 1:])

    def resolve(self) -> Url:
        return self

    @property
    def fs(self) -> Any:
        return filesystem(self.url)

    @property
    def path(self) -> str:
        """The filesystem's own name for this location (the URL without its scheme, as fsspec strips it)."""
        return str(self.fs._strip_protocol(self.url))

    @property
    def object_store(self) -> bool:
        return self.protocol in OBJECT_STORES

    # --- reading
    def exists(self) -> bool:
        return bool(self.fs.exists(self.path))

    def is_dir(self) -> bool:
        return bool(self.fs.isdir(self.path))

    def is_file(self) -> bool:
        return bool(self.fs.isfile(self.path))

    def read_text(self, encoding: str = "utf-8") -> str:
        return bytes(self.fs.cat_file(self.path)).decode(encoding)

    def open(self, mode: str = "r", encoding: str = "utf-8") -> io.StringIO:
        """The file's text, for readers that iterate lines (`trustmh.data.files.read_jsonl`)."""
        if mode != "r":
            raise ValueError("Url.open reads text only; write with write_text (atomic)")
        return io.StringIO(self.read_text(encoding), newline="")

    def _children(self, paths: list[str]) -> list[Url]:
        base = self.path.rstrip("/") + "/"
        return sorted(self / p[len(base):] for p in paths if p.startswith(base) and len(p) > len(base))

    def glob(self, pattern: str) -> list[Url]:
        """Entries directly in this directory whose names match `pattern`."""
        fs = self.fs
        try:
            names = fs.ls(self.path, detail=False)
        except FileNotFoundError:
            return []
        return [u for u in self._children([str(n).rstrip("/") for n in names]) if fnmatch.fnmatch(u.name, pattern)]

    def rglob(self, pattern: str = "*") -> list[Url]:
        """Every file under this directory (object stores have no directories to list) matching `pattern`."""
        try:
            found = self.fs.find(self.path)
        except FileNotFoundError:
            return []
        return [u for u in self._children([str(n) for n in found]) if fnmatch.fnmatch(u.name, pattern)]

    def __lt__(self, other: Url) -> bool:
        return self.url < other.url

    # --- writing
    def mkdir(self, parents: bool = True, exist_ok: bool = True) -> None:
        if self.object_store:
            return  # prefixes, not directories; making one could create a bucket, which a run never should
        self.fs.makedirs(self.path, exist_ok=True)

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        """Write atomically: readers see the previous content or all of `text`, never a part."""
        write_bytes_atomic(self, text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self.fs.rm_file(self.path)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def rmtree(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(self.path, recursive=True)


def write_bytes_atomic(target: Url, data: bytes) -> None:
    fs = target.fs
    if target.object_store:
        fs.pipe_file(target.path, data)  # one upload: the object appears only once it is complete
        return
    if not target.parent.exists():
        target.parent.mkdir()
    tmp = f"{target.parent.path}/.{target.name}.tmp-{uuid.uuid4().hex}"
    try:
        fs.pipe_file(tmp, data)
        fs.mv(tmp, target.path)
    except BaseException:
        with contextlib.suppress(Exception):
            fs.rm_file(tmp)
        raise


def with_umask(path: str | Path) -> None:
    """Give a file the permissions a plain `open()` would under the user's umask (0644 by default):
    mkstemp, which atomic writes use, creates 0600, so colleagues and web servers could not read reports."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


# A write that failed for want of room: a one-line error naming the file, never a traceback.
_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def no_room(exc: OSError, path: Path | str) -> TrustmhError | None:
    """The one-line error of a write to `path` refused for lack of space (full disk, quota, file size
    limit); None for any other OSError."""
    if exc.errno not in _NO_ROOM:
        return None
    return TrustmhError(f"{path}: cannot write ({exc.strerror or exc}); free some space and run the same command "
                        "again (what was finished is kept)")


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """The one atomic write of a local file: yields a temporary name in the same folder to write, then gives
    it the user's umask and renames it into place; on any error the temporary is removed and `path` is
    untouched (a full disk is a one-line TrustmhError naming `path`). For writers that open a file by name;
    `atomic_file` gives an open file."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        yield Path(tmp)
        with_umask(tmp)
        os.replace(tmp, path)
    except OSError as exc:
        err = no_room(exc, path)
        if err is None:
            raise
        raise err from None
    finally:
        if tmp is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


@contextlib.contextmanager
def atomic_file(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """`atomic_path`, with the temporary file open in `mode`."""
    with atomic_path(path) as tmp, open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8", "newline": ""})) as fh:
        yield fh


def write_text_atomic(target: Path | Url, text: str) -> None:
    """Write `text` to a local path (`atomic_file`) or to a URL (see `Url.write_text`)."""
    if isinstance(target, Url):
        target.write_text(text)
        return
    with atomic_file(target) as fh:
        fh.write(text)


def write_texts_together(texts: dict[Path, str]) -> None:
    """Several local files that must appear together: every temporary is written first, then all are renamed
    (a failure while writing leaves none of them new)."""
    staged: list[tuple[str, Path]] = []
    current: Path | None = None
    try:
        for path, text in texts.items():
            current = path
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            staged.append((tmp, path))
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
            with_umask(tmp)
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        err = no_room(exc, current or "?")
        if err is None:
            raise
        raise err from None
    finally:
        for tmp, _ in staged:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def rmtree(target: Path | Url) -> None:
    """Remove a directory and everything in it; nothing happens when it does not exist."""
    if isinstance(target, Url):
        target.rmtree()
    else:
        shutil.rmtree(target, ignore_errors=True)


def check_writable(out: Url) -> None:
    """A clear one-line error, before any model call, when the URL `out` cannot hold a run directory: its
    filesystem is not installed, its bucket does not exist, or writing there is refused."""
    probe = out / f".trustmh-write-test.{uuid.uuid4().hex}"
    try:
        if out.is_file():
            raise TrustmhError(f"--out {out}: is a file, not a directory; choose a directory for the run")
        probe.write_text("")
        probe.unlink(missing_ok=True)
    except TrustmhError:
        raise
    except Exception as exc:  # noqa: BLE001  each filesystem raises its own kinds (botocore, gcsfs, OSError…)
        raise TrustmhError(f"--out {out}: cannot write there ({describe(exc)}); check the bucket, the "
                           "credentials and the endpoint, or choose another --out") from None


def iter_files(out: Path | Url) -> Iterator[Path | Url]:
    """Every file under a run directory, in name order."""
    if isinstance(out, Url):
        yield from out.rglob("*")
    else:
        yield from sorted(p for p in out.rglob("*") if p.is_file())
