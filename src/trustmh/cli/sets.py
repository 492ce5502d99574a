"""`trustmh sets check FILE...`: is a conversation set usable (docs/conversations.md#own-sets).

Checks an authored set (`.jsonl`, one conversation per line) or a set file (`.json`, a design header and its
conversations): every field of every conversation, stimulus ids, decisive turns (distinct, none in more than two
conversations, how many), controls and hard negatives, the share of risk said without a keyword-list word,
near-duplicates, the header's counts, the shape of a set scored on care (lengths, decisive positions, "?" shares,
styles and help reactions on both sides) and the shortcut measures (`shortcuts`: a held-out bag-of-words AUC and
the best single-feature rule, refused past their thresholds). One line per problem; exit 0 when there is none,
1 when there is, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustmh.cli.args import at_least
from trustmh.core import TrustmhError
from trustmh.pillars.conversation.authored_sets import (
    MIN_DISTINCT_DECISIVE,
    check_file,
    read_jsonl,
    set_counts,
)
from trustmh.pillars.conversation.generator import read_set
from trustmh.pillars.conversation.set_files import MAX_SET_CONVERSATIONS, read_set_bytes
from trustmh.pillars.conversation.shortcuts import measures


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trustmh sets", description="Conversation sets: check a set file.")
    sub = p.add_subparsers(dest="action", required=True)
    check = sub.add_parser("check", help="check a set file; one line per problem, exit 1 if any")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE", help="an authored .jsonl or a set .json")
    check.add_argument("--min-distinct", type=at_least(0, "--min-distinct", MAX_SET_CONVERSATIONS),
                       default=MIN_DISTINCT_DECISIVE, metavar="N",
                       help=f"distinct decisive turns a set needs among its risk conversations (default "
                            f"{MIN_DISTINCT_DECISIVE}, what the gate's conversation checks are sized on)")
    return p


def _summary(path: Path) -> str:
    rows = read_jsonl(path)[0] if path.suffix == ".jsonl" else read_set(path)[1]
    c = set_counts(rows)
    share = c["share_risk_turns_without_keywords"]
    return (f"{path}: ok: {len(rows)} conversations, {c['risk']} risk ({c['distinct_decisive_turns']} distinct "
            f"decisive turns, at most {c['max_conversations_per_decisive_turn']} per turn, "
            f"{'-' if share is None else f'{share:.0%}'} without a keyword-list word), {c['controls']} controls "
            f"({c['hard_negatives']} hard negatives), {c['stimuli']} stimuli\n{_shortcut_line(rows)}")


def _shortcut_line(rows: list) -> str:
    lengths = [len(r["turns"]) for r in rows]
    positions = {int(r["decisive_turn"]) for r in rows}
    shape = f"  shape: {min(lengths)} to {max(lengths)} patient turns, decisive turn at {len(positions)} positions"
    found = measures(rows)
    if found is None:
        return shape + "; shortcuts: no controls, no measures"
    t = found["thresholds"]
    return (f"{shape}; shortcuts ({found['split']}): bag-of-words AUC {found['bow_auc']:.3f} (at most "
            f"{t['bow_auc']}), best single-feature rule {found['best_rule']} balanced accuracy "
            f"{found['best_rule_balanced_accuracy']:.3f} (at most {t['best_rule_balanced_accuracy']})")


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    failed = False
    for path in args.files:
        try:  # a file the reader refuses (a device, a directory, past the size bound) is bad usage, as in a run
            read_set_bytes(path)
        except TrustmhError as exc:
            print(f"trustmh: {exc}", file=sys.stderr)
            return 2
        found = check_file(path, args.min_distinct)
        for line in found:
            print(line, file=sys.stderr)
        if found:
            failed = True
        else:
            print(_summary(path))
    return 1 if failed else 0
