"""The power of each shipped reference to certify a human-level judge (issue 41, docs/statistics.md#certificate-power).

Run: TRUSTMH_REFS_DIR=/path/to/publisher/copies python benchmarks/shipped_reference_power.py [--seed 0]

For every reference `trustmh judge certify` knows and whose publisher files are found under TRUSTMH_REFS_DIR
(crisis study, Moore et al.'s interjections per judged sub-task, MindEval), and each criterion: the humans'
agreement with its interval (`judges.reference_quality.human_agreement`, on the reference's cluster unit)
and the reference's power (`judges.reference_power`): the probability that it certifies a judge as good as
one more of its raters, and the items that would give power 0.8. Nothing is judged; no model is called.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
from pathlib import Path

from trustmh.core import JudgeInfo, RunContext
from trustmh.judges.reference_power import reference_power
from trustmh.judges.reference_quality import FLOORS, KIND_OF, MARGIN, human_agreement
from trustmh.judges.references import ReferenceRequest
from trustmh.pillars.conversation.mindeval_reference import mindeval_reference
from trustmh.pillars.crisis.moore_reference import JUDGED, moore_reference
from trustmh.pillars.crisis.study_reference import crisis_reference


def _find(root: Path, *names: str) -> str | None:
    for name in names:
        if (root / name).is_dir():
            return str(root / name)
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--n-boot", type=int, default=2000)
    args = ap.parse_args(argv)
    root = Path(os.environ.get("TRUSTMH_REFS_DIR", ""))
    ctx = RunContext(seed=args.seed, judge=JudgeInfo(model=None, validated=False), options={})
    builders = []
    crisis = _find(root, "ellisalicante+LLMs-Mental-Health-Crisis", "LLMs-Mental-Health-Crisis")
    if crisis:
        ctx.options["crisis_dir"] = crisis
        builders.append(lambda: crisis_reference(ctx))
    moore = _find(root, "jlcmoore+llms-as-therapists", "llms-as-therapists")
    if moore:
        builders += [lambda s=s: moore_reference(ctx, ReferenceRequest(path=moore, subtask=s)) for s in JUDGED]
    mindeval = _find(root, "SWORDHealth+mind-eval", "mind-eval")
    if mindeval:
        builders.append(lambda: mindeval_reference(ctx, mindeval))
    print(f"# {dt.date.today()} · {platform.node()} · python {platform.python_version()} · seed {args.seed}")
    print("| reference | criterion | items (clusters) | raters | humans' agreement [95% CI] | power | "
          "items for power 0.8 |")
    print("|---|---|---|---|---|---|---|")
    for build in builders:
        ref = build()
        kind = ref.quality_kind or KIND_OF[ref.label_type]
        for name in ref.attributes or ("score",):
            humans = {i: {r: (v or {}).get(name) if ref.attributes else v for r, v in row.items()}
                      for i, row in ref.humans.items()}
            agree = human_agreement(humans, kind, seed=args.seed, n_boot=args.n_boot, clusters=ref.clusters)
            labels = [v for row in humans.values() for v in row.values() if v is not None]
            shares = tuple(float(labels.count(v)) for v in sorted(set(labels), key=str)) if kind == "labels" else ()
            power = reference_power(kind, agree["n_items"], agree["n_raters"], agree["value"], floor=FLOORS[kind],
                                    margin=MARGIN, seed=args.seed, shares=shares or (0.5, 0.5))
            ci = agree["ci"]
            paired = [i for i, row in humans.items() if sum(v is not None for v in row.values()) >= 2]
            clusters = len(set((ref.clusters or {}).get(i, i) for i in paired))
            print(f"| {ref.name} | {name} | {agree['n_items']} ({clusters}) | {agree['n_raters']} | "
                  f"{agree['statistic']} {agree['value']:.2f} [{ci[0]:.2f}, {ci[1]:.2f}] | "
                  f"{'–' if power['power'] is None else format(power['power'], '.2f')} | "
                  f"{power['items_for_target'] or 'none ≤ 20,000'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
