"""`trustmh report`, `gate`, `compare` and `list`: reading finished runs and the catalogue."""

from __future__ import annotations

import argparse
import sys

from trustmh.cli.run import SUITES


def cmd_report(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.report import comparison_report_html
    from trustmh.results import load_items, load_results
    from trustmh.results.leaderboard import leaderboard, leaderboard_csv
    from trustmh.storage import write_text_atomic

    runs = [load_results(d) | {"_folder": str(d)} for d in args.dirs]
    items = [load_items(d) for d in args.dirs]
    board = leaderboard(runs, items)
    write_text_atomic(args.out, comparison_report_html(board, runs, items, certs_dir=args.certificates,
                                                      policy=getattr(args, "policy", None)))
    import json

    write_text_atomic(args.out.with_suffix(".json"), json.dumps(board, indent=2) + "\n")
    write_text_atomic(args.out.with_suffix(".csv"), leaderboard_csv(board))
    print(f"trustmh: wrote {args.out}, {args.out.with_suffix('.json')} and {args.out.with_suffix('.csv')}",
          file=sys.stderr)
    return 0


def cmd_gate(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.gate import run_gate
    from trustmh.gate.clauses import run_pack_gate

    gate = run_pack_gate(args.run_dir, args.policy, args.certificates) or run_gate(args.run_dir, args.policy,
                                                                                   args.certificates)
    for row in gate["checks"]:
        print(f"{row['verdict']:>12}  {row['id']:<32} {row['reason']}")
    for clause in gate.get("clauses", []):
        print(f"{clause['verdict']:>12}  clause {clause['id']:<25} {clause['section']}: {clause['reason']}")
    gate_file, summary_file = gate["outputs"]
    print(f"trustmh gate: {gate['verdict'].upper()} (policy {gate['policy']['version']}, exit "
          f"{gate['exit_code']}); wrote {gate_file} and {summary_file}", file=sys.stderr)
    return int(gate["exit_code"])


def cmd_list(_: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.catalogue import PILLAR_TITLES, PILLARS, SUBTASKS, is_implemented

    print("Sub-tasks (inspect eval trustmh/<task>):")
    for pillar in PILLARS:
        print(f"  {PILLAR_TITLES[pillar]}")
        for info in (s for s in SUBTASKS if s.pillar == pillar):
            mark = "implemented" if is_implemented(info.id) else "not implemented yet"
            extra = " [default mode only]" if info.default_only else ""
            print(f"    {info.id:<40} {info.task_name:<36} {mark}{extra}")
    print("\nSuites:")
    for name, text in SUITES.items():
        print(f"  {name:<12} {text}")
    print("\nDatasets (trustmh data list for details):")
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.data import DATASETS

    for name, ds in DATASETS.items():
        gated = " [gated: user path only]" if ds.gated else ""
        print(f"  {name:<20} {ds.title} ({ds.licence}){gated}")
    print("\nGate policies and regulation packs (trustmh gate RUN --policy NAME):")
    # imported when the command runs, not at start-up (`trustmh --help` stays fast)
    from trustmh.gate.clauses import policy_titles

    for name, title in policy_titles().items():
        print(f"  {name:<20} {title}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    # start-up: the results readers load only when the command runs
    from trustmh.core import TrustmhError
    from trustmh.results import load_results
    from trustmh.results.compare import compare_lines, compare_runs, like_with_like
    from trustmh.storage import run_path

    loaded = []
    for where in (args.run_a, args.run_b):
        folder = run_path(where)
        if folder.is_dir() and (folder / "workers").is_dir() and not (folder / "results.json").exists():
            raise TrustmhError(f"{folder}: a --workers run whose shards were not merged (no results.json); "
                               f"finish it by running the same command again, or `trustmh merge` its workers/*")
        loaded.append(load_results(where))
    why = like_with_like(loaded[0], loaded[1], str(args.run_a), str(args.run_b))
    if why:
        raise TrustmhError(why)
    rows = compare_runs(*loaded)
    for line in compare_lines(rows):
        print(line)
    return 0
