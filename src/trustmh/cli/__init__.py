"""The `trustmh` command line: every command and its options (each command's work lives in its own module)."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path
from typing import Any

from trustmh import exit_codes
from trustmh.cli.args import CERTIFICATES_DEFAULT
from trustmh.cli.dossier import add_dossier_commands, cmd_dossier, cmd_verify
from trustmh.cli.rescore_args import add_rescore_command
from trustmh.cli.results import cmd_compare, cmd_gate, cmd_list, cmd_report
from trustmh.cli.run import add_run_commands, cmd_merge, cmd_plan, cmd_run
from trustmh.core import TrustmhError
from trustmh.run.secrets import console_redacted, redact, secret_values
from trustmh.storage import cli_path

DESCRIPTION = ("How far a language model can be trusted in mental-health conversations, and how far an LLM judge "
               "can be trusted to score them. Start with `trustmh run` (the bundled model, offline) or "
               "`trustmh plan --model M --judge J` (what a run would cost, before any call); `trustmh COMMAND "
               "--help` for each command.")


def gate_epilog() -> str:
    """The shipped policies and packs `--policy NAME` takes, each with its one-line title."""
    # imported only when `trustmh gate` is parsed: keeps start-up fast (the policies read the catalogue)
    from trustmh.gate.clauses import policy_titles

    rows = [f"  {name:<18} {title}" for name, title in policy_titles().items()]
    return "shipped policies and regulation packs (--policy NAME):\n" + "\n".join(rows) + "\n\n" + \
        exit_codes.help_text()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; `command` is the command being run (its help may need more than start-up loads)."""
    parser = argparse.ArgumentParser(prog="trustmh", description=DESCRIPTION, epilog=exit_codes.help_text(),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    add_run_commands(sub)

    rep = sub.add_parser("report", help="comparison report (leaderboard) across run directories")
    rep.add_argument("dirs", nargs="+", type=cli_path, metavar="RUN_DIR", help="run directories (paths or URLs)")
    rep.add_argument("--out", type=cli_path, default=Path("trustmh-comparison.html"), metavar="FILE",
                     help="the page (a path or a URL; default trustmh-comparison.html); its .json and .csv "
                     "exports are written beside it")
    rep.add_argument("--certificates", metavar="DIR", help=f"judge certificates directory (docs/judges.md; default "
                     f"{CERTIFICATES_DEFAULT})")
    rep.add_argument("--policy", type=Path, metavar="NAME|FILE", help="the gate section and the transcript browser's "
                     "clause filter under this policy or pack (default: trustmh's default policy)")

    add_rescore_command(sub)

    gate = sub.add_parser("gate", help="release gate: pass / fail / insufficient evidence against a policy "
                          "(exit 0 / 1 / 3; 2: could not run)",
                          epilog=gate_epilog() if command == "gate" else None,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    gate.add_argument("run_dir", type=cli_path, metavar="RUN_DIR", help="a run directory (a path or a URL) or its results.json")
    gate.add_argument("--policy", type=Path, metavar="NAME|FILE", help="policy file (TOML) or a shipped policy's or pack's name (listed "
                      "below and by `trustmh list`); default: trustmh's documented starting point, not clinical "
                      "advice")
    gate.add_argument("--certificates", type=Path, metavar="DIR",
                      help=f"judge certificates directory (default: {CERTIFICATES_DEFAULT})")

    add_dossier_commands(sub)

    comp = sub.add_parser("compare", help="two runs' figures, with the judge's drift on the anchor items apart "
                          "from the model's change (docs/judge-probes.md#compare)")
    comp.add_argument("run_a", type=cli_path, metavar="EARLIER_RUN", help="the earlier run directory (a path or a URL)")
    comp.add_argument("run_b", type=cli_path, metavar="LATER_RUN", help="the later run directory")

    sub.add_parser("align", help="judge-versus-human reliability (see `trustmh align --help`)", add_help=False)
    sub.add_parser("judge", help="judge certificates: judge certify (see `trustmh judge --help`)", add_help=False)
    sub.add_parser("review", help="human review of judged items: review export | adjudicate | import", add_help=False)
    sub.add_parser("data", help="datasets: list | fetch | verify (see `trustmh data --help`)", add_help=False)
    sub.add_parser("list", help="sub-tasks, datasets and suites")
    sub.add_parser("sets", help="conversation sets: sets check FILE (see `trustmh sets --help`)", add_help=False)
    return parser


def cmd_rescore(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (the rescore formats load Inspect and the pillars)
    from trustmh.cli.rescore import cmd_rescore as rescore

    return rescore(args)


def main(argv: list[str] | None = None) -> int:
    # a key that a provider quotes in an error never reaches the console, whatever the display
    with console_redacted():
        return _main(list(sys.argv[1:] if argv is None else argv))


def _main(argv: list[str]) -> int:
    # --debug (anywhere on the line) shows the traceback of an error; without it an error is one line
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        if argv and argv[0] == "align":
            # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
            from trustmh.cli.align import main as align_main

            return align_main(argv[1:])
        if argv and argv[0] in ("judge", "review"):
            # imported on use: keeps start-up fast (it loads Inspect)
            from trustmh.cli.judges import main as judges_main

            return judges_main(argv)
        if argv and argv[0] == "data":
            # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
            from trustmh.cli.data import main as data_main

            return data_main(argv[1:])
        if argv and argv[0] == "sets":
            # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
            from trustmh.cli.sets import main as sets_main

            return sets_main(argv[1:])
        args = build_parser(argv[0] if argv else None).parse_args(argv)
        args.argv = argv  # what a launcher hands on to its shards (`--workers`)
        handlers: dict[str, Any] = {"run": cmd_run, "plan": cmd_plan, "merge": cmd_merge, "report": cmd_report,
                                    "rescore": cmd_rescore, "gate": cmd_gate, "list": cmd_list,
                                    "compare": cmd_compare, "dossier": cmd_dossier,
                                    "verify": cmd_verify}
        return int(handlers[args.command](args))
    except TrustmhError as exc:
        if debug:
            traceback.print_exc()
        print(f"trustmh: error: {redact(str(exc), secret_values())}", file=sys.stderr)
        return exit_codes.COULD_NOT_RUN
    except KeyboardInterrupt:
        print("trustmh: interrupted (run the same command again to continue)", file=sys.stderr)
        return exit_codes.INTERRUPTED
    except Exception as exc:  # noqa: BLE001  an unexpected failure: one line, the traceback under --debug
        if debug:
            traceback.print_exc()
        # imported on an error only, not at start-up: Inspect's own errors for the user (a missing API key)
        from trustmh.inspect_compat import inspect_error_line

        plain = inspect_error_line(exc)
        if plain is not None:  # Inspect's message for the user, its console markup taken out: one plain line
            print(f"trustmh: error: {redact(plain, secret_values())}", file=sys.stderr)
            return exit_codes.COULD_NOT_RUN
        print(f"trustmh: error: {type(exc).__name__}: {redact(str(exc), secret_values())} (run again with "
              "--debug for the traceback)", file=sys.stderr)
        return exit_codes.COULD_NOT_RUN

