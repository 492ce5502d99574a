"""A publisher's repository read in place (docs/data.md#publishers): a file of a registered dataset found under a
folder the user supplies (`-O <option>=DIR`, or a command's flag, laid out like the repository), else under the
folder of publishers' copies (`TRUSTMH_PUBLISHERS_DIR`, the repository found by its name), else through the
registry (TRUSTMH_DATA_DIR, the cache, or the pinned, checksum-verified download). Every reader of a publisher's
file comes here, so each file is size-bounded and recorded in the run's provenance the same way; each repository
is one registered dataset, and its folder option is declared once, from the registry (`folder_option`).

A repository that cannot be had (no copy, downloads off or failing) is one `PublisherMissing`: the run's plan
says it once per repository, with the folder or option that fixes it (`trustmh.run.select`)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from trustmh.core import ChecksumError, Option, RunContext, TrustmhError
from trustmh.data.files import present
from trustmh.data.locate import find_local, resolve
from trustmh.data.registry import get as get_dataset
from trustmh.data.registry import offline
from trustmh.flag_values import as_typed, flag_of

PUBLISHERS_ENV = "TRUSTMH_PUBLISHERS_DIR"
_URL_ERROR = re.compile(r"<urlopen error (.*)>")  # the network's reason, without the raw URL around it


class PublisherMissing(TrustmhError):
    """A publisher's repository whose files cannot be had here: no local copy, and downloads are off or fail."""

    def __init__(self, dataset: str, flag: str, detail: str) -> None:
        self.dataset, self.flag, self.detail = dataset, flag, detail
        super().__init__(f"{repo_name(dataset)} is not available here ({detail}); {how_to_supply(dataset, flag)}")


@contextmanager
def supplied_by(flag: str) -> Iterator[None]:
    """Within: a missing repository's fix names the command's own flag (`--reference-path DIR`, `--from DIR`),
    the one the user would type, not the sub-task option that flag fills."""
    try:
        yield
    except PublisherMissing as exc:
        raise PublisherMissing(exc.dataset, flag, exc.detail) from None


def repo_name(dataset: str) -> str:
    """"owner/repo" of a dataset published on GitHub, else its source URL."""
    source = get_dataset(dataset).source.rstrip("/")
    parts = source.removeprefix("https://github.com/").split("/")
    return "/".join(parts) if source.startswith("https://github.com/") and len(parts) == 2 else source


def how_to_supply(dataset: str, flag: str) -> str:
    """The fix for a missing repository: the publishers' folder, or the reader's own flag ("-O crisis_dir=DIR")."""
    owner_repo = repo_name(dataset)
    names = " or ".join(dict.fromkeys([owner_repo.replace("/", "+"), owner_repo.rsplit("/", 1)[-1]]))
    return f"set {PUBLISHERS_ENV}=DIR to a folder holding a copy of it (named {names}), or pass {flag}"


def publishers_copy(dataset: str) -> Path | None:
    """The copy of a dataset's repository in the publishers' folder (`TRUSTMH_PUBLISHERS_DIR`), found by its
    name, "owner+repo" or "repo" (the first that is a folder); None without the variable or a copy."""
    root = os.environ.get(PUBLISHERS_ENV)
    if not root:
        return None
    owner_repo = repo_name(dataset)
    for name in (owner_repo.replace("/", "+"), owner_repo.rsplit("/", 1)[-1]):
        folder = Path(root).expanduser() / name
        if "/" not in name and folder.is_dir():
            return folder
    return None


def folder_option(dataset: str) -> dict[str, Option]:
    """The `-O` option naming a local copy of a dataset's repository, declared once from its registry entry:
    {option: Option} for a sub-task's `options`."""
    ds = get_dataset(dataset)
    if not ds.option:
        raise TrustmhError(f"dataset {dataset}: no folder option registered")
    return {ds.option: Option(f"a local copy of {ds.source} (a folder laid out like the repository)")}


def publisher_file(rel: str, options: Mapping[str, Any], *, dataset: str, option: str, base: str) -> Path:
    """A publisher's file: under the user's folder (`-O <option>=DIR`), else the publishers' folder's copy, else
    the registered copy."""
    folder = options.get(option)
    return file_in_folder(folder or None, rel, dataset=dataset, base=base, given_as=as_typed(option, folder),
                          flag=f"{flag_of(option, folder)}=DIR")


def file_in_folder(folder: str | Path | None, rel: str, *, dataset: str, base: str, given_as: str,
                   flag: str) -> Path:
    """A publisher's file under `folder` (a copy of the repository the user gave as `given_as`, e.g.
    "--from DIR"), size-bounded and recorded; with no folder, the publishers' folder's copy, else the
    registered copy (a `PublisherMissing` when that cannot be had)."""
    if not folder and (folder := publishers_copy(dataset)) is not None:
        given_as = f"{PUBLISHERS_ENV} ({folder})"
    if folder:
        path = Path(str(folder)).expanduser() / rel
        if not present(path):
            raise TrustmhError(f"{given_as}: no {rel} there (expected a folder laid out like "
                               f"{get_dataset(dataset).source})")
        return resolve(dataset, f"{base}/{rel}", path)
    return registered_file(dataset, f"{base}/{rel}", flag)


def registered_file(dataset: str, relpath: str, flag: str) -> Path:
    """The registered copy of a publisher's file (TRUSTMH_DATA_DIR, the cache, a download); a
    `PublisherMissing` naming the fix when it is not local and cannot be downloaded."""
    ds = get_dataset(dataset)
    df = ds.file(relpath)
    if df is not None and find_local(ds, df) is None and offline():
        raise PublisherMissing(dataset, flag, "no local copy, and downloads are off (TRUSTMH_OFFLINE=1)")
    try:
        return resolve(dataset, relpath)
    except ChecksumError:
        raise
    except TrustmhError as exc:
        if df is None or find_local(ds, df) is not None:
            raise
        why = _URL_ERROR.search(str(exc))
        raise PublisherMissing(dataset, flag, "no local copy, and the download failed"
                               + (f": {why.group(1)}" if why else f": {exc}")) from exc


def local_publisher_file(rel: str, options: Mapping[str, Any], *, dataset: str, option: str,
                         base: str) -> Path | None:
    """`publisher_file` without a download: None when neither the user's folder nor a local registered copy
    (TRUSTMH_DATA_DIR, the cache) is there."""
    if options.get(option) or publishers_copy(dataset) is not None:
        return publisher_file(rel, options, dataset=dataset, option=option, base=base)
    ds = get_dataset(dataset)
    df = ds.file(f"{base}/{rel}")
    if df is None or find_local(ds, df) is None:
        return None
    return resolve(dataset, f"{base}/{rel}")  # local: checked against its sha256 and recorded, never fetched


def unavailable_reason(ctx: RunContext, files: tuple[str, ...], *, starter_reason: str, dataset: str, option: str,
                       base: str) -> str | None:
    """Why a sub-task read only from a publisher's files cannot run: the starter suite has none of its
    items (`starter_reason`), or the files are not to be had offline; else None."""
    if ctx.suite == "starter":
        return starter_reason
    return missing_reason(ctx.options, files, dataset=dataset, option=option, base=base)


def missing_reason(options: Mapping[str, Any], files: tuple[str, ...], *, dataset: str, option: str,
                   base: str) -> str | None:
    """None when the publisher's files can be had without the network, or downloads are on; else a
    `PublisherMissing` (the plan says it once per repository)."""
    if options.get(option) or publishers_copy(dataset) is not None:
        return None
    ds = get_dataset(dataset)
    absent = [rel for rel in files if (df := ds.file(f"{base}/{rel}")) is None or find_local(ds, df) is None]
    if absent and offline():
        raise PublisherMissing(dataset, f"-O {option}=DIR", f"{absent[0]} is not in TRUSTMH_DATA_DIR/{base}/ nor the cache, "
                               "and downloads are off (TRUSTMH_OFFLINE=1)")
    return None
