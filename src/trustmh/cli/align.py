"""`trustmh align`: judge-versus-human reliability (MentalAlign).

    trustmh align --mentalalign DIR | --human FILE --judge FILE [--judge FILE ...]
                  [--mode faithful|default] [--seed N] [--out FILE.json] [--sensitivity] [--html FILE]
                  [--stability-seeds N] [--n-boot N] [--no-html]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trustmh.align import load_mentalalign, load_tidy, run_align, write_outputs
from trustmh.align.default import DefaultConfig
from trustmh.align.html import render_html
from trustmh.cli.args import MAX_N_BOOT, MAX_STABILITY_SEEDS, MIN_N_BOOT, at_least
from trustmh.core import TrustmhError
from trustmh.pillars.mentalbench.ratings import ST

USAGE = ("trustmh align (--mentalalign DIR | --human FILE --judge FILE [--judge FILE ...]) "
         "[--mode faithful|default] [--seed N] [--out FILE.json] [--sensitivity] [--html FILE] "
         "[--stability-seeds N] [--n-boot N] [--no-html] [--keep-misaligned] [--no-self-exclusion] "
         "[--strict-scores]")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trustmh align", usage=USAGE,
                                description="How far LLM judges agree with human experts (docs/align.md#align).")
    p.add_argument("--mentalalign", metavar="DIR", help="the mentalalign/ folder (Human_Judge/, LLMs_as_a_judge/)")
    p.add_argument("--human", metavar="FILE", help="tidy long table (CSV or Parquet) of human ratings")
    p.add_argument("--judge", metavar="FILE", action="append", default=[],
                   help="tidy long table of one judge's ratings (repeatable)")
    p.add_argument("--mode", choices=("faithful", "default"), default="faithful",
                   help="faithful: the authors' analysis (default); default: trustmh's cleaned one "
                   "(docs/align.md#default-mode)")
    p.add_argument("--seed", type=at_least(0, "--seed"), default=42, help="bootstrap seed (default 42)")
    p.add_argument("--out", metavar="FILE.json", help="write FILE.json, FILE.csv and FILE.html")
    p.add_argument("--html", metavar="FILE", help="HTML page path (default: FILE.html beside --out)")
    p.add_argument("--no-html", action="store_true", help="do not write the HTML page")
    p.add_argument("--sensitivity", action="store_true", help="add the faithful sensitivity panel (docs/align.md#sensitivity-panel)")
    p.add_argument("--stability-seeds", type=at_least(0, "--stability-seeds", MAX_STABILITY_SEEDS), default=0, metavar="N",
                   help="label stability over bootstrap seeds 0..N-1 (e.g. 200; default 0: not computed, "
                   "which keeps align interactive)")
    p.add_argument("--keep-misaligned", action="store_true",
                   help="default mode: keep rows whose human and judge contexts differ (docs/align.md#default-mode)")
    p.add_argument("--no-self-exclusion", action="store_true",
                   help="default mode: let judges rate their own family's replies (docs/align.md#default-mode)")
    p.add_argument("--strict-scores", action="store_true",
                   help="default mode: the authors' strict parse, human ratings of 0 and 6 kept "
                   "(docs/align.md#default-mode)")
    p.add_argument("--n-boot", type=at_least(MIN_N_BOOT, "--n-boot", MAX_N_BOOT), default=1000, metavar="N", help="bootstrap replicates (default 1000)")
    return p


def _summary(result: dict) -> str:
    lines = [f"mode={result['mode']} seed={result['seed']} cells={len(result['cells'])}"]
    head = f"{'judge':10} {'attribute':16} {'level':8} {'icc_c1':>7} {'c1 CI':>17} {'icc_a1':>7} {'label':>12}"
    lines.append(head)

    def f(x: float | None) -> str:
        return "   —   " if x is None else f"{x:7.3f}"

    for c in result["cells"]:
        label = c.get("category") if result["mode"] == "faithful" else c.get("trust_label")
        ci = f"[{f(c.get('c1_lo')).strip()}, {f(c.get('c1_hi')).strip()}]"
        lines.append(f"{c['judge']:10} {c['attribute']:16} {str(c.get('level')):8} {f(c.get('icc_c1'))} "
                     f"{ci:>17} {f(c.get('icc_a1'))} {str(label):>12}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:

        if args.mentalalign and (args.human or args.judge):
            raise TrustmhError("give either --mentalalign DIR or --human FILE --judge FILE, not both")
        if args.mentalalign:
            data = load_mentalalign(args.mentalalign)
        elif args.human and args.judge:
            data = load_tidy(args.human, args.judge)
        else:
            raise TrustmhError("no input: give --mentalalign DIR, or --human FILE with at least one --judge FILE")

        for name, ratings in [("human ratings", data.human), *data.judges.items()]:
            n_out = int((ratings.status == ST["out_of_range"]).sum())
            if n_out:  # counted in the data-quality table and left out of every statistic
                print(f"trustmh align: warning: {name}: {n_out} score(s) outside the 1-5 scale (or not whole "
                      "numbers) are left out; see the data-quality table", file=sys.stderr)
        if args.n_boot < 10:
            raise TrustmhError("--n-boot must be at least 10")
        if args.stability_seeds < 0:
            raise TrustmhError("--stability-seeds must be >= 0")
        if args.out and Path(args.out).suffix.lower() != ".json":
            raise TrustmhError(f"--out must name a .json file, got {args.out}")
        from threadpoolctl import threadpool_limits


        switches = args.keep_misaligned or args.no_self_exclusion or args.strict_scores
        if switches and args.mode != "default":
            raise TrustmhError("--keep-misaligned, --no-self-exclusion and --strict-scores apply to --mode default")
        config = DefaultConfig(valid_only=not args.strict_scores, drop_misaligned=not args.keep_misaligned,
                               self_exclusion=not args.no_self_exclusion, n_boot=args.n_boot,
                               stability_seeds=args.stability_seeds)
        # the analysis multiplies many small matrices: threads only add overhead there
        with threadpool_limits(limits=1):
            result = run_align(data, mode=args.mode, seed=args.seed, n_boot=args.n_boot,
                               stability_seeds=args.stability_seeds, sensitivity=args.sensitivity,
                               default_config=config if args.mode == "default" else None, keep_internals=True)
        if args.out:
            paths = write_outputs(result, args.out, args.html, write_html=not args.no_html)
            print(_summary(result))
            print("wrote " + ", ".join(str(p) for p in paths.values()))
        else:
            if args.html and not args.no_html:

                Path(args.html).write_text(render_html(result), encoding="utf-8")
            print(_summary(result))
    except TrustmhError as e:
        print(f"trustmh align: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
