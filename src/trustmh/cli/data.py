"""`trustmh data list|fetch|verify`.

* `list`: one row per registered dataset: name, title, licence, gated, files, where found.
* `fetch NAME... | --all`: download what is missing into the cache (verified); gated datasets are explained.
* `verify [NAME...]`: recompute the sha256 of every local file (data dir and cache) and compare it with the
  registry (or the hash pinned at first download); exit 1 on any mismatch, naming file and both hashes.

Exit codes: 0 ok, 1 a download failed or a checksum mismatched, 2 bad input (one-line error on stderr).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from trustmh.core import TrustmhError
from trustmh.data import locate, registry
from trustmh.data.download import fetch_file
from trustmh.data.locate import expected_sha256
from trustmh.data.registry import DATASETS, Dataset, cache_dir, data_dir
from trustmh.digest import sha256_file

Emit = Callable[[str], None]


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def _build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="trustmh data", description="Registered datasets: list, download, verify.")
    p.add_argument("--data-dir", metavar="DIR", help="overrides $TRUSTMH_DATA_DIR for this command")
    p.add_argument("--cache-dir", metavar="DIR", help="overrides $TRUSTMH_CACHE_DIR for this command")
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    sub.add_parser("list", help="list the registered datasets and where their files are")
    f = sub.add_parser("fetch", help="download missing files of the named datasets into the cache")
    f.add_argument("names", nargs="*", metavar="NAME", help="registered datasets (`trustmh data list`)")
    f.add_argument("--all", action="store_true", help="every registered dataset (gated ones are explained)")
    v = sub.add_parser("verify", help="recompute sha256 of every local file and compare with the registry")
    v.add_argument("names", nargs="*", metavar="NAME", help="registered datasets (default: every one)")
    v.add_argument("-v", "--verbose", action="store_true", help="print a line for every file checked")
    return p


def _select(names: Sequence[str]) -> list[Dataset]:
    unknown = [n for n in names if n not in DATASETS]
    if unknown:
        raise _UsageError(f"unknown dataset(s): {', '.join(unknown)} (known: {', '.join(DATASETS)})")
    return [DATASETS[n] for n in dict.fromkeys(names)]


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _where(ds: Dataset) -> str:
    if ds.gated:
        return f"user path only ({ds.user_option})"
    if not ds.files:
        return "-"
    places: dict[str, int] = {}
    found = 0
    for df in ds.files:
        hit = locate.find_local(ds, df)
        if hit is not None:
            found += 1
            places[hit[1]] = places.get(hit[1], 0) + 1
    if found == 0:
        return "missing"
    where = " + ".join(places)
    return where if found == len(ds.files) else f"{where} ({found}/{len(ds.files)}; rest missing)"


def cmd_list(out: Emit) -> int:
    rows = [("name", "title", "licence", "gated", "files", "where found")]
    for ds in DATASETS.values():
        rows.append((ds.name, _clip(ds.title, 52), _clip(ds.licence, 30), "yes" if ds.gated else "no",
                     str(len(ds.files)), _where(ds)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for i, r in enumerate(rows):
        out("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
        if i == 0:
            out("  ".join("-" * w for w in widths))
    root = data_dir()
    out(f"\ndata dir: {root if root is not None else '(TRUSTMH_DATA_DIR not set)'}   cache: {cache_dir()}")
    return 0


def cmd_fetch(names: Sequence[str], all_: bool, out: Emit, err: Emit) -> int:

    if all_ and names:
        raise _UsageError("give dataset names or --all, not both")
    if not all_ and not names:
        raise _UsageError("fetch needs dataset names or --all")
    selected = list(DATASETS.values()) if all_ else _select(names)
    if registry.offline():
        raise TrustmhError("TRUSTMH_OFFLINE=1 is set: fetch would need the network; unset it to download")
    failures = 0
    for ds in selected:
        if ds.gated:
            msg = f"{ds.name}: gated, not downloadable: {ds.access}; then pass {ds.user_option}"
            if all_:
                out(f"skip {msg}")
            else:
                err(f"error: {msg}")
                failures += 1
            continue
        got = have = 0
        for df in ds.files:
            hit = locate.find_local(ds, df)
            if hit is not None:
                have += 1
                if hit[1] == "cache":  # cheap and catches a corrupted cache early
                    try:
                        locate.check_file(ds.name, df, hit[0], "in the download cache")
                    except TrustmhError as exc:
                        err(f"error: {exc}")
                        failures += 1
                continue
            if not df.downloadable and df.optional:
                continue  # e.g. licence texts copied into the reference data: nothing to fetch
            try:
                path = fetch_file(ds, df)
            except TrustmhError as exc:
                err(f"error: {exc}")
                failures += 1
                continue
            got += 1
            out(f"fetched {ds.name}: {df.relpath} -> {path}")
        out(f"{ds.name}: {got} downloaded, {have} already present, licence: {ds.licence}")
    return 1 if failures else 0


def cmd_verify(names: Sequence[str], verbose: bool, out: Emit, err: Emit) -> int:
    selected = _select(names) if names else list(DATASETS.values())
    root = data_dir()
    if root is not None and not root.is_dir():
        raise TrustmhError(f"TRUSTMH_DATA_DIR={root} is not a folder")
    ok = bad = unpinned = checked_missing = 0
    for ds in selected:
        for df in ds.files:
            places: list[tuple[Path, str, str | None]] = []
            if root is not None and (root / df.relpath).is_file():
                places.append((root / df.relpath, "data dir", df.sha256))
            cached = cache_dir() / df.relpath
            if cached.is_file():
                places.append((cached, "cache", expected_sha256(df)))
            if not places:
                checked_missing += 1
                continue
            for path, where, expected in places:
                if expected is None:
                    unpinned += 1
                    if verbose:
                        out(f"unpinned  {ds.name}: {path} ({where}): no known sha256")
                    continue
                actual = sha256_file(path)  # recomputed on purpose: verify never trusts a cached hash
                if actual == expected:
                    ok += 1
                    if verbose:
                        out(f"ok        {ds.name}: {path}")
                else:
                    bad += 1
                    err(f"MISMATCH  {ds.name}: {path} ({where}): expected sha256 {expected}, actual {actual}")
    out(f"verify: {ok} ok, {bad} mismatched, {unpinned} without a known hash, {checked_missing} not present")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    def out(s: str) -> None:
        print(s)

    def err(s: str) -> None:
        print(s, file=sys.stderr)

    parser = _build_parser()
    saved = {k: os.environ.get(k) for k in ("TRUSTMH_DATA_DIR", "TRUSTMH_CACHE_DIR")}
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # --help
            return int(exc.code or 0)
        if args.cmd is None:
            raise _UsageError("choose a command: list, fetch or verify")
        if args.data_dir:
            os.environ["TRUSTMH_DATA_DIR"] = args.data_dir
        if args.cache_dir:
            os.environ["TRUSTMH_CACHE_DIR"] = args.cache_dir
        if args.cmd == "list":
            return cmd_list(out)
        if args.cmd == "fetch":
            return cmd_fetch(args.names, args.all, out, err)
        return cmd_verify(args.names, args.verbose, out, err)
    except _UsageError as exc:
        err(f"trustmh data: error: {exc}")
        return 2
    except TrustmhError as exc:
        err(f"trustmh data: error: {exc}")
        return 2
    finally:
        for k, v in saved.items():  # the overrides apply to this command only
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


if __name__ == "__main__":
    raise SystemExit(main())
