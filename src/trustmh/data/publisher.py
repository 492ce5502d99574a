"""A publisher's repository read in place: a file of a registered dataset found under a folder the user
supplies (`-O <option>=DIR`, laid out like the repository), else through the registry (TRUSTMH_DATA_DIR, the
cache, or the pinned, checksum-verified download)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmh.core import RunContext, TrustmhError
from trustmh.data.locate import find_local, resolve
from trustmh.data.registry import get as get_dataset
from trustmh.data.registry import offline


def publisher_file(rel: str, options: Mapping[str, Any], *, dataset: str, option: str, base: str) -> Path:
    """A publisher's file: under the user's folder (`-O <option>=DIR`), else the registered copy."""
    folder = options.get(option)
    if folder:
        path = Path(str(folder)).expanduser() / rel
        if not path.is_file():
            raise TrustmhError(f"-O {option}={folder}: no {rel} there (expected a folder laid out like "
                               f"{get_dataset(dataset).source})")
        return resolve(dataset, f"{base}/{rel}", path)
    return resolve(dataset, f"{base}/{rel}")


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
