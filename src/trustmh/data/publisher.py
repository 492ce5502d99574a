"""A publisher's repository read in place: a file of a registered dataset found under a folder the user
supplies (`-O <option>=DIR`, or a command's flag, laid out like the repository), else through the registry
(TRUSTMH_DATA_DIR, the cache, or the pinned, checksum-verified download). Every reader of a publisher's file
comes here, so each file is size-bounded and recorded in the run's provenance the same way; each repository is
one registered dataset, and its folder option is declared once, from the registry (`folder_option`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmh.core import Option, RunContext, TrustmhError
from trustmh.data.locate import find_local, resolve
from trustmh.data.registry import get as get_dataset
from trustmh.data.registry import offline


def folder_option(dataset: str) -> dict[str, Option]:
    """The `-O` option naming a local copy of a dataset's repository, declared once from its registry entry:
    {option: Option} for a sub-task's `options`."""
    ds = get_dataset(dataset)
    if not ds.option:
        raise TrustmhError(f"dataset {dataset}: no folder option registered")
    return {ds.option: Option(f"a local copy of {ds.source} (a folder laid out like the repository)")}


def publisher_file(rel: str, options: Mapping[str, Any], *, dataset: str, option: str, base: str) -> Path:
    """A publisher's file: under the user's folder (`-O <option>=DIR`), else the registered copy."""
    folder = options.get(option)
    return file_in_folder(folder or None, rel, dataset=dataset, base=base, given_as=f"-O {option}={folder}")


def file_in_folder(folder: str | Path | None, rel: str, *, dataset: str, base: str, given_as: str) -> Path:
    """A publisher's file under `folder` (a copy of the repository the user gave as `given_as`, e.g.
    "--from DIR"), size-bounded and recorded; with no folder, the registered copy."""
    if folder:
        path = Path(str(folder)).expanduser() / rel
        if not path.is_file():
            raise TrustmhError(f"{given_as}: no {rel} there (expected a folder laid out like "
                               f"{get_dataset(dataset).source})")
        return resolve(dataset, f"{base}/{rel}", path)
    return resolve(dataset, f"{base}/{rel}")


def local_publisher_file(rel: str, options: Mapping[str, Any], *, dataset: str, option: str,
                         base: str) -> Path | None:
    """`publisher_file` without a download: None when neither the user's folder nor a local registered copy
    (TRUSTMH_DATA_DIR, the cache) is there."""
    if options.get(option):
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
    """Why the publisher's files cannot be had without the network when downloads are off, else None."""
    if options.get(option):
        return None
    ds = get_dataset(dataset)
    absent = [rel for rel in files if (df := ds.file(f"{base}/{rel}")) is None or find_local(ds, df) is None]
    if absent and offline():
        return (f"the publisher's file {absent[0]} is not available locally and downloads are off "
                f"(TRUSTMH_OFFLINE=1): pass -O {option}=DIR (a copy of {ds.source}) or put it under "
                f"TRUSTMH_DATA_DIR/{base}/")
    return None
