"""`trustmh judge certify` and `trustmh review export|import` (docs/judges.md).

    trustmh judge certify --judge MODEL [--judge MODEL ...] --reference crisis-study|mentalalign|FILE.csv
    trustmh judge probe --judge MODEL --reference NAME|FILE.csv [--subtask ID] [--limit N] ...  (bias battery)
                          [--reference-path PATH] [--limit N] [--subtask ID] [--certificates DIR] [--seed N] ...
    trustmh review export RUN_DIR [--subtasks ID,...] --n N --seed S [--oversample-disagreements] [--raters N]
                                  [--out FILE]
    trustmh review adjudicate RUN_DIR labels.csv [labels.csv ...] [--out FILE]  (conversations: a third rater)
    trustmh review import RUN_DIR labels.csv [labels.csv ...] [--certificates DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from trustmh import exit_codes
from trustmh.certify.probe_battery import TOLERANCE, probes_help
from trustmh.certify.registry import reference_sources
from trustmh.cli.args import (
    CERTIFICATES_DEFAULT,
    MAX_LIMIT,
    MAX_N_BOOT,
    MAX_RETRIES,
    MAX_TIMEOUT,
    MIN_N_BOOT,
    add_batch_arguments,
    agreement,
    at_least,
    model_name,
)
from trustmh.core import SEED_MAX, TrustmhError
from trustmh.data.publisher import supplied_by
from trustmh.exit_codes import VERDICT_EXIT
from trustmh.flag_values import FlagValue
from trustmh.judges.evidence import ASSUMED_AGREEMENT

if TYPE_CHECKING:
    from trustmh.judges.references import ReferenceRequest, ReferenceSource
    from trustmh.run.config import RunSpec


def _certs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--certificates", metavar="DIR",
                   help=f"certificates directory (default: {CERTIFICATES_DEFAULT})")


def _judged_reference_args(c: argparse.ArgumentParser) -> None:
    """What `judge certify` and `judge probe` share: the judge, the reference items, the run's bounds."""
    c.add_argument("--judge", action="append", required=True, metavar="MODEL", type=model_name("--judge"),
                   help="judge model (repeat for an ensemble, as in `trustmh run`)")
    c.add_argument("--reference", required=True, metavar="NAME|FILE.csv",
                   help="a reference named below, or your own tidy CSV of human labels "
                   "(docs/judges.md#reference-csv)")
    c.add_argument("--reference-path", metavar="PATH",
                   help="where the named reference's files are (each reference below says what; default: "
                   "the copy in $TRUSTMH_PUBLISHERS_DIR or $TRUSTMH_DATA_DIR, else a download)")
    c.add_argument("--subtask", metavar="ID", help="the judged sub-task (required with a CSV)")
    c.add_argument("--judge-key", metavar="KEY", help="CSV: the score field holding the judge's label")
    c.add_argument("--label-type", choices=("binary", "ordinal", "categorical"),
                   help="CSV: the labels' type (required: declared, never guessed from the labels; a label that "
                   "does not fit it is refused, naming file, row and column)")
    _seed_args(c)
    c.add_argument("--limit", type=at_least(1, "--limit", MAX_LIMIT), metavar="N",
                   help="judge at most N reference items (stratified, seeded)")
    c.add_argument("-O", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="sub-task / judge options, as in `trustmh run` (e.g. ensemble=median)")
    add_batch_arguments(c, conversations=False, calls="the judge's calls (the reference's replies are "
                        "fixed: no model is run but the judge)")
    c.add_argument("--work", metavar="DIR", help="where the judge's Inspect logs go (resume: same DIR; "
                   "default: <certificates>/work/<reference>)")
    c.add_argument("--timeout", type=at_least(1, "--timeout", MAX_TIMEOUT), default=120, metavar="SECONDS",
                   help="seconds per judge request (default 120)")
    c.add_argument("--max-retries", type=at_least(0, "--max-retries", MAX_RETRIES), default=3, metavar="N",
                   help="retries of a failed judge request (default 3)")
    _certs_arg(c)


def _seed_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=at_least(0, "--seed", SEED_MAX), default=0, metavar="N",
                   help="seed of the sampled items and the bootstrap intervals (default 0)")
    p.add_argument("--n-boot", type=at_least(MIN_N_BOOT, "--n-boot", MAX_N_BOOT), default=2000, metavar="N",
                   help="bootstrap replicates for the intervals (default 2000)")


def references_help() -> str:
    """The references `--reference NAME` takes, one a line with what `--reference-path` names for it."""
    rows = [f"  {name:<20} {source.help}" for name, source in reference_sources().items() if source.subtask]
    return "references (--reference NAME):\n" + "\n".join(rows)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trustmh", description="judge certificates and human review (docs/judges.md)")
    top = p.add_subparsers(dest="group", required=True)
    judge = top.add_parser("judge", help="judge certificates", description="Measure an LLM judge against "
                           "people's labels before trusting its scores (docs/judges.md).").add_subparsers(
        dest="action", required=True)
    c = judge.add_parser("certify", help="measure a judge against a human-labelled reference set",
                         description="Measure a judge against a reference set labelled by people, and write a "
                         "certificate that `trustmh run`, `report` and `gate` read (docs/judges.md#certify).",
                         epilog=references_help() + "\n\n" + exit_codes.help_text(),
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    _judged_reference_args(c)
    c.add_argument("--threshold", action="append", metavar="METRIC=VALUE",
                   help="override a threshold (docs/judges.md#thresholds); repeatable")
    pr = judge.add_parser("probe", help="bias battery: does the judge follow length, order, authority, a user's "
                          "certainty or its own family? (docs/judge-probes.md)",
                          description="Vary stored replies in one thing at a time and see whether the judge's "
                          "verdict follows the change (docs/judge-probes.md).",
                          epilog=probes_help() + "\n\n" + references_help(),
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    _judged_reference_args(pr)
    pr.add_argument("--tolerance", type=float, default=TOLERANCE, metavar="EFFECT",
                    help=f"largest tolerated effect of a probe (default {TOLERANCE:g}; docs/judge-probes.md#tolerances)")
    review = top.add_parser("review", help="human review of a run's judged items", description="Your own "
                            "people label a sample of a run's judged items; their labels measure the run's judge "
                            "(docs/judges.md#review).").add_subparsers(dest="action", required=True)
    e = review.add_parser("export", help="a stratified random sample of judged items as an offline HTML page")
    e.add_argument("run_dir", metavar="RUN_DIR", help="the run directory whose judged items are sampled")
    e.add_argument("--subtasks", "--subtask", metavar="LIST", help="comma-separated sub-task ids (default: every judged sub-task)")
    e.add_argument("--n", type=at_least(1, "--n", MAX_LIMIT), help="items to sample (or --for-gate)")
    e.add_argument("--for-gate", metavar="POLICY", help="draw, per judged sub-task, the two-rater labels the "
                   "policy's checks need (the count `trustmh plan --policy POLICY` states; "
                   "docs/judges.md#labels-for-the-gate)")
    e.add_argument("--round", type=at_least(1, "--round", 1000), default=1, metavar="K",
                   help="labelling round K: K > 1 draws the next labels, disjoint from rounds 1..K-1 (default 1)")
    e.add_argument("--assume-agreement", type=agreement, default=ASSUMED_AGREEMENT, metavar="A",
                   help=f"with --for-gate: the judge-human agreement assumed (default {ASSUMED_AGREEMENT})")
    e.add_argument("--seed", type=at_least(0, "--seed", SEED_MAX), required=True, metavar="N",
                   help="seed of the sample (stated, so that the sample can be drawn again)")
    e.add_argument("--oversample-disagreements", action="store_true",
                   help="draw items where ensemble members, or the rule and the judge, disagree at twice the rate")
    e.add_argument("--raters", type=at_least(2, "--raters", 26), default=2, metavar="N",
                   help="conversation sub-tasks: the team's size; each conversation goes to two of them (default 2)")
    e.add_argument("--out", metavar="FILE", help="the labelling page (default: RUN_DIR/review/review.html)")
    a = review.add_parser("adjudicate", help="conversations whose two raters disagree: a third rater's page")
    a.add_argument("run_dir", metavar="RUN_DIR", help="the run directory the labels were exported from")
    a.add_argument("labels", nargs="+", metavar="LABELS.csv", help="the two raters' labels saved from the "
                   "review page")
    a.add_argument("--out", metavar="FILE", help="the third rater's page (default: RUN_DIR/review/adjudicate.html)")
    i = review.add_parser("import", help="judge-vs-human agreement from exported labels; writes certificates",
                          description="Measure the run's judge against the labels of your own people and write a "
                          "certificate per judged sub-task: one line each on stdout (docs/judges.md#review).",
                          epilog=exit_codes.help_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    i.add_argument("run_dir", metavar="RUN_DIR", help="the run directory the labels were exported from")
    i.add_argument("labels", nargs="+", metavar="LABELS.csv", help="the labels saved from the review page "
                   "(several files: several people)")
    _seed_args(i)
    i.add_argument("--threshold", action="append", metavar="METRIC=VALUE",
                   help="override a threshold (docs/judges.md#thresholds); repeatable")
    i.add_argument("--json", action="store_true",
                   help="print the review's summary as JSON on stdout (it is always written to "
                   "RUN_DIR/review/review.json)")
    _certs_arg(i)
    return p


def _options(pairs: list[str]) -> dict[str, str]:
    out = {}
    for kv in pairs:
        if "=" not in kv:
            raise TrustmhError(f"-O {kv!r}: expected KEY=VALUE")
        k, v = kv.split("=", 1)
        out[k.strip()] = v
    return out


def _reference_spec(args: argparse.Namespace) -> tuple[ReferenceSource, ReferenceRequest, RunSpec]:
    """The reference the command names and the run that judges it (`judge certify`, `judge probe`)."""
    # imported when the command runs, not at start-up: they load Inspect and scipy (`--help` stays fast)
    from trustmh.certify.measure import certification_spec
    from trustmh.certify.registry import find_reference, reference_run
    from trustmh.judges.references import ReferenceRequest

    # the path remembers its flag: a reader's message about it names `--reference-path`
    path = FlagValue(args.reference_path, "--reference-path") if args.reference_path else None
    source, request = find_reference(args.reference, ReferenceRequest(
        path=path, subtask=args.subtask, label_type=args.label_type, judge_key=args.judge_key))
    spec = certification_spec(args.judge, reference_run(source, request), seed=args.seed,
                              options=_options(args.option), limit=args.limit, n_boot=args.n_boot,
                              timeout=args.timeout, max_retries=args.max_retries, batch=args.batch,
                              prompt_cache=not args.no_prompt_cache)
    return source, request, spec


def cmd_probe(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`--help` stays fast)
    from trustmh.certify.probe import PROBE_EXIT, probe_line, run_probe
    from trustmh.judges.certificates import certificates_dir

    source, request, spec = _reference_spec(args)
    if not 0 < args.tolerance < 1:
        raise TrustmhError(f"--tolerance {args.tolerance:g}: expected a number between 0 and 1")
    ref = source.load(spec.context(), request)
    if ref.measured is not None:
        raise TrustmhError(f"--reference {source.name}: measured its own way, with no stored replies to vary; "
                           "probe the judge on another reference of its sub-task or on a CSV")
    certs = certificates_dir(args.certificates)
    work = Path(args.work) if args.work else certs / "work" / f"{ref.name}-probe"
    record, path = run_probe(ref, spec, certs_dir=certs, work=work, tolerance=args.tolerance)
    print(f"{record['subtask']}: judge {', '.join(record['judges'])}, bias battery on {ref.name} "
          f"(n = {len(record['items'])}): {record['verdict'].upper()} ({record['reason']})")
    for name, probe in record["probes"].items():
        print("  " + probe_line(name, probe))
    print(f"probe record: {path}")
    return PROBE_EXIT.get(record["verdict"], 1)


def cmd_certify(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`--help` stays fast)
    from trustmh.catalogue import lookup
    from trustmh.certify.measure import certify
    from trustmh.judges.certificates import (
        REPLY,
        certificates_dir,
        certifies_unit,
        parse_thresholds,
        single_reply_line,
        threshold_gaps,
    )

    source, request, spec = _reference_spec(args)
    certs = certificates_dir(args.certificates)
    ref = source.load(spec.context(), request)
    parse_thresholds(args.threshold, ref.label_type)  # a misspelt --threshold is refused before any call
    work = Path(args.work) if args.work else certs / "work" / ref.name
    cert, path = certify(ref, spec, certs_dir=certs, work=work, thresholds=args.threshold)
    print(f"{cert['subtask']}: judge {', '.join(cert['judges'])} on {cert['reference']['name']} "
          f"(n = {cert['n']}): {cert['verdict'].upper()}")
    def num(x: object) -> str:
        return "—" if x is None else f"{float(x):.3f}"  # type: ignore[arg-type]

    for metric, gap in threshold_gaps(cert).items():
        fig = cert["agreement"].get(metric, {})
        side = "min" if "min" in gap else "max"
        ci = fig.get("ci") or [None, None]
        weakest = f" [weakest attribute: {fig['attribute']}]" if fig.get("attribute") else ""
        print(f"  {metric}{weakest}: {num(fig.get('value'))} (95% CI {num(ci[0])} to {num(ci[1])}); "
              f"{'lower' if side == 'min' else 'upper'} bound {num(gap['bound'])} vs {side} {gap[side]:g}: "
              f"{'met' if gap['margin'] is not None and gap['margin'] >= 0 else 'short'} by {num(abs(gap['margin']) if gap['margin'] is not None else None)}")
    for attr, figs in (cert.get("per_attribute") or {}).items():
        parts = [f"{m} {num(f.get('value'))}" for m, f in figs["agreement"].items()]
        print(f"  {attr} (n = {figs['n']}): {', '.join(parts)}: {figs['verdict']}")
    quality = cert.get("reference_quality") or {}
    if quality:  # docs/references.md#the-rule
        criteria = quality.get("criteria") or {}
        rule = (f" (floor {quality['floor']:g} at the humans' lower bound, margin {quality['margin']:g})"
                if "floor" in quality and "margin" in quality else "")
        single = len(criteria) <= 1 and quality.get("reason")
        print(f"  reference quality: {quality['status']}{rule}" + (f": {quality['reason']}" if single else ""))
        for name, crit in criteria.items() if not single else ():
            print(f"    {name}: {crit['status']}: {crit['reason']}")
    if not certifies_unit(cert, getattr(lookup(cert["subtask"]), "judged_unit", REPLY)):
        print(f"  supporting evidence only: {single_reply_line(cert, cert['subtask'])}")
    if cert.get("trial"):
        print(f"trial: {cert['trial']}")
    print(f"{'trial' if cert.get('trial') else 'certificate'}: {path}")
    return VERDICT_EXIT.get(cert["verdict"], exit_codes.FAIL)


def cmd_export(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`--help` stays fast)
    from trustmh.certify.review import export_review

    subtasks = [s.strip() for s in args.subtasks.split(",")] if args.subtasks else None
    out = export_review(Path(args.run_dir), n=args.n, seed=args.seed, subtasks=subtasks,
                        oversample=args.oversample_disagreements, out=Path(args.out) if args.out else None,
                        raters=args.raters, for_gate=args.for_gate, round_=args.round,
                        agreement=args.assume_agreement)
    print(f"review page (round {args.round}): {out}")
    return 0


def cmd_adjudicate(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`--help` stays fast)
    from trustmh.certify.review import adjudicate_review

    out, n = adjudicate_review(Path(args.run_dir), [Path(p) for p in args.labels],
                               out=Path(args.out) if args.out else None)
    print(f"{n} conversation(s) where the two raters disagree, for a third rater: {out}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`--help` stays fast)
    from trustmh.certify.review import import_review
    from trustmh.judges.certificates import certificates_dir
    from trustmh.judges.reference_quality import CERTIFIED

    summary = import_review(Path(args.run_dir), [Path(p) for p in args.labels], seed=args.seed, n_boot=args.n_boot,
                            certs_dir=certificates_dir(args.certificates), thresholds=args.threshold)
    if args.json:
        json.dump(summary, sys.stdout, indent=2)
        print()
    verdicts = []
    for sid, entry in summary["subtasks"].items():  # one line each, with why a review cannot certify
        quality = entry.get("reference_quality") or {}
        why = f": {quality['reason']}" if quality.get("status") != CERTIFIED and quality.get("reason") else ""
        print(f"{sid}: {entry['verdict']} (n = {entry['n']}){why}", file=sys.stderr if args.json else sys.stdout)
        verdicts.append(entry["verdict"])
    if not args.json:
        print(f"review summary: {Path(args.run_dir) / 'review' / 'review.json'}")
    return exit_codes.worst_verdict_exit(verdicts)


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    if args.group == "judge":
        command = cmd_probe if args.action == "probe" else cmd_certify
        if Path(args.reference).is_file():  # a CSV: the sub-task's own options name its files
            return command(args)
        with supplied_by("--reference-path DIR"):  # a named reference: its publisher's repository
            return command(args)
    return {"export": cmd_export, "adjudicate": cmd_adjudicate, "import": cmd_import}[args.action](args)
