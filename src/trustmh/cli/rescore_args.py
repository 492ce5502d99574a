"""`trustmh rescore`'s arguments: every format with the folder or file its `--from` names (docs/reproducing.md
lists the same formats; tests/cli/test_help.py holds the two together). Kept apart from `cli/rescore.py`, which
loads the scorers, so that `trustmh --help` stays fast."""

from __future__ import annotations

import argparse
from pathlib import Path

from trustmh.cli.args import MAX_LIMIT, add_batch_arguments, at_least, model_name
from trustmh.core import SEED_MAX

# --format NAME -> what its --from names and what is scored
FORMATS: dict[str, str] = {
    "trustmh-original": "a copy of the original TrustMH-Bench repository: its released Ethics and Privacy "
                        "outputs",
    "mentalbench": "the published MentalBench replies (a CSV, Parquet or JSON file, or a folder holding one), "
                   "re-judged by your --judge",
    "crisis-original": "a copy of the crisis study's repository (ellisalicante/LLMs-Mental-Health-Crisis): its "
                       "judges' and humans' appropriateness scores",
    "mindeval": "a copy of MindEval's repository (SWORDHealth/mind-eval): its clinicians' ratings",
    "moore-interjections": "a copy of Moore et al.'s repository (jlcmoore/llms-as-therapists): its interjection "
                           "results",
    "siri2": "a copy of the MindBench.ai tutorial repository (MattMatt27/mental-health-benchmark-tutorial): its "
             "SIRI-2 totals",
    "moore-stigma": "a copy of Moore et al.'s repository (jlcmoore/llms-as-therapists): its stigma answers",
}


def formats_help() -> str:
    """The formats as `rescore --help` lists them, one line each."""
    return "formats (--format NAME, and what --from names):\n" + "\n".join(
        f"  {name:<20} {what}" for name, what in FORMATS.items())


def add_rescore_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    res = sub.add_parser("rescore", help="score outputs produced elsewhere with trustmh's scorers "
                         "(docs/reproducing.md)", epilog=formats_help(),
                         formatter_class=argparse.RawDescriptionHelpFormatter,
                         description="Score outputs published elsewhere (a study's released replies, judges' "
                         "and humans' ratings) with trustmh's own scorers, writing the files a run writes. "
                         "See docs/reproducing.md.")
    res.add_argument("--format", dest="fmt", required=True, choices=list(FORMATS), metavar="NAME",
                     help="what --from holds (listed below)")
    res.add_argument("--from", dest="source", required=True, type=Path, metavar="PATH",
                     help="the published outputs: a folder laid out like the publisher's repository, or for "
                     "mentalbench a file (listed below)")
    res.add_argument("--out", required=True, type=Path, metavar="DIR", help="where the results go")
    res.add_argument("--mode", choices=["faithful", "default"], default="faithful",
                     help="trustmh-original and mentalbench: faithful reads the replies as the publisher did (default); "
                     "default uses trustmh's parsing (docs/reproducing.md)")
    res.add_argument("--seed", type=at_least(0, "--seed", SEED_MAX), default=0, metavar="N",
                     help="seed of the bootstrap intervals (default 0)")
    res.add_argument("--judge", action="append", default=[], type=model_name("--judge"), metavar="MODEL",
                     help="judge model(s): the MentalBench judges (mentalbench), or trustmh's crisis-escalation "
                     "judge re-judging the crisis study's human-rated answers (crisis-original)")
    res.add_argument("--limit", type=at_least(1, "--limit", MAX_LIMIT), metavar="N",
                     help="mentalbench: judge the first N contexts only")
    add_batch_arguments(res, conversations=False, calls="the judge's calls (mentalbench and "
                        "crisis-original with --judge; the other formats ask no judge)")
