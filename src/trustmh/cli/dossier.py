"""`trustmh dossier` and `trustmh verify`: the release dossier and its check (docs/dossier.md); the work lives
in `trustmh.dossier`, imported when a command runs (start-up stays fast)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustmh import exit_codes
from trustmh.cli.args import CERTIFICATES_DEFAULT
from trustmh.storage import cli_path


def add_dossier_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    dos = sub.add_parser("dossier", help="the release dossier of a run: summary, failing conversations, provenance, "
                         "manifest and one archive, after a leak check (docs/dossier.md)")
    dos.add_argument("run_dir", type=cli_path, metavar="RUN_DIR", help="a finished run directory")
    dos.add_argument("--policy", action="append", required=True, metavar="NAME|FILE",
                     help="a policy or pack (a shipped name or a TOML file); give several to show them side by side")
    dos.add_argument("--out", type=Path, required=True, metavar="DIR",
                     help="the dossier's folder (new, or a previous dossier's, replaced); DIR.tar.gz is written beside it")
    dos.add_argument("--private", action="append", type=Path, default=[], metavar="FILE",
                     help="a text that must not leave (the product's system prompt, any text the team marks private); "
                     "repeatable. The run's system prompt (-O system_prompt) and key values are always searched")
    dos.add_argument("--on-leak", choices=("refuse", "redact"), default="refuse",
                     help="what a private text or key found in the dossier does: refuse the dossier (default), or "
                     "replace it with [REDACTED]; either way one line names the file and the field")
    dos.add_argument("--include-dataset-text", action="store_true",
                     help="keep the text of a publisher's data set in the items, where its licence allows (default: "
                     "left out)")
    dos.add_argument("--certificates", type=Path, metavar="DIR",
                     help=f"judge certificates directory (default: {CERTIFICATES_DEFAULT})")
    ver = sub.add_parser("verify", help="check a release dossier: every digest, every figure from its items and every "
                         "verdict from its policies (exit 0 verified, 1 not)")
    ver.add_argument("dossier", type=Path, metavar="DOSSIER", help="a dossier folder or its .tar.gz")


def cmd_dossier(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.dossier.build import build_dossier

    files, leaks = build_dossier(args.run_dir, args.policy, args.out, private_files=args.private,
                                 on_leak=args.on_leak, include_dataset_text=args.include_dataset_text,
                                 certs_dir=args.certificates)
    for leak in leaks:
        print(f"trustmh dossier: redacted: {leak.line()}", file=sys.stderr)
    print(f"trustmh dossier: wrote {len(files)} files into {args.out} and {args.out.name}.tar.gz beside it; "
          f"check it with `trustmh verify {args.out}`", file=sys.stderr)
    return exit_codes.PASS


def cmd_verify(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.dossier.verify import verify_dossier

    problems = verify_dossier(args.dossier)
    for line in problems:
        print(f"trustmh verify: {line}", file=sys.stderr)
    if problems:
        print(f"trustmh verify: {args.dossier}: NOT VERIFIED ({len(problems)} problem(s))", file=sys.stderr)
        return exit_codes.FAIL
    print(f"trustmh verify: {args.dossier}: verified (every digest, figure and verdict recomputed)", file=sys.stderr)
    return exit_codes.PASS
