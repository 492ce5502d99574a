"""`trustmh rescore --format siri2`: the released SIRI-2 results of the mental-health-benchmark-tutorial
repository (nine models × three prompts × two temperatures, ten runs each) rescored from their per-item means.

Layout under `--from DIR` (the repository): `instrument/siri2_expert_scores.csv`,
`experiment-results/model_scores_by_condition.csv` (per condition and reply, the mean of the ten ratings) and,
to compare with, `experiment-results/siri2_total_scores.csv` (the published totals, two decimals). Each
condition's total is Σ |mean rating − expert mean| over the 48 validated replies (item 14 left out), with the
figures of `siri2_scoring`; a condition that lacks a mean for any reply of the expert file (48 in the real one) is named and its total not compared.
Writes `siri2_rescore.json` and `siri2_rescore.md` (a table) under `--out`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.rows import RowProblem, RowReport
from trustmh.json_clean import clean_json
from trustmh.pillars.clinical.norms import COMPILED_FROM, norms_json
from trustmh.pillars.clinical.siri2_data import (
    EXPERT_FILE,
    MEANS_FILE,
    TOTALS_FILE,
    load_condition_means,
    load_experts,
    load_published_totals,
)
from trustmh.pillars.clinical.siri2_scoring import expert_floor, siri2_figures
from trustmh.storage import write_text_atomic

TOLERANCE = 0.005  # the published totals carry two decimals: equal when ours rounds to the same


def rescore_siri2(source: Path, out: Path, *, seed: int = 0, n_boot: int = 2000) -> int:
    if not source.is_dir():
        raise TrustmhError(f"--from {source}: not a directory (give the tutorial repository's folder)")
    for rel in (EXPERT_FILE, MEANS_FILE):
        if not (source / rel).is_file():
            raise TrustmhError(f"--from {source}: no {rel} (expected the mental-health-benchmark-tutorial layout)")
    report = RowReport()
    experts = load_experts(source / EXPERT_FILE, report)
    means = load_condition_means(source / MEANS_FILE, report)
    totals_path = source / TOTALS_FILE
    published = load_published_totals(totals_path, report) if totals_path.is_file() else None
    rows: list[dict[str, Any]] = []
    for key in sorted(means):
        model, temperature, prompt = key
        by_reply = means[key]
        fig = siri2_figures({r: [v] for r, v in by_reply.items()}, experts,
                            clusters={r: r[:-1] for r in by_reply}, seed=seed, n_boot=n_boot)
        fig.pop("per_reply", None)
        missing = sorted(set(experts) - set(by_reply))
        complete = not missing and not fig["unknown_replies"]
        if not complete:
            what = [f"no mean for {', '.join(missing)}"] if missing else []
            what += [f"{', '.join(fig['unknown_replies'])} without an expert score"] if fig["unknown_replies"] else []
            report.add(RowProblem(MEANS_FILE, -1, "/".join(key), "; ".join(what), "total not compared"))
        pub = None if published is None else published.get(key)
        rows.append({"model": model, "temperature": temperature, "prompt": prompt,
                     "total": fig["total_sum"], "mae": fig["mae"], "ci_items": fig["ci_items"],
                     "inappropriate_bias": fig["inappropriate_bias"],
                     "inappropriate_bias_ci": fig["inappropriate_bias_ci"], "n_replies": fig["n_replies"],
                     "published": pub,
                     "reproduced": None if pub is None or not complete else abs(fig["total_sum"] - pub) <= TOLERANCE})
    if published is not None:
        for key in sorted(set(published) - set(means)):
            report.add(RowProblem(TOTALS_FILE, -1, "/".join(key), "published total without per-item means",
                                  "not reproduced"))
    compared = [r for r in rows if r["reproduced"] is not None]
    result = {
        "source": str(source), "seed": seed, "n_boot": n_boot, "conditions": rows,
        "n_conditions": len(rows), "n_compared": len(compared), "n_reproduced": sum(r["reproduced"] for r in compared),
        "tolerance": TOLERANCE, "n_expert_replies": len(experts),
        "expert_floor": expert_floor(list(experts.values())),
        "human_norms": norms_json(), "norms_source": COMPILED_FROM,
        **report.as_json(),
        "notes": ["total: sum over the 48 validated replies of |per-item mean rating - expert mean| (item 14 "
                  "excluded), from the released per-item means of ten runs; compared with the published total "
                  f"at two decimals (|difference| <= {TOLERANCE})",
                  "ci_items: seeded percentile bootstrap over scenarios; inappropriate_bias: mean (rating - expert "
                  "mean) over replies with expert mean < 0",
                  "expert_floor: sum of SD x sqrt(2/pi), one expert's expected total against the panel mean"],
    }
    report.log()
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "siri2_rescore.json", json.dumps(clean_json(result), indent=2) + "\n")
    write_text_atomic(out / "siri2_rescore.md", siri2_table(result))
    print(f"trustmh: wrote {out / 'siri2_rescore.json'} ({len(rows)} conditions; {result['n_reproduced']}/"
          f"{len(compared)} published totals reproduced to 0.01; {len(report.problems)} rows flagged)",
          file=sys.stderr)
    return 0


def _num(x: float | None, digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def siri2_table(result: dict[str, Any]) -> str:
    lines = ["| model | temperature | prompt | total (trustmh) | published | reproduced | MAE | bias on inappropriate |",
             "|---|---|---|---|---|---|---|---|"]
    for r in sorted(result["conditions"], key=lambda r: r["total"]):
        rep = {True: "yes", False: "NO", None: "not compared"}[r["reproduced"]]
        lines.append(f"| {r['model']} | {r['temperature']} | {r['prompt']} | {_num(r['total'])} | "
                     f"{_num(r['published'])} | {rep} | {_num(r['mae'], 3)} | {_num(r['inappropriate_bias'], 2)} |")
    lines.append("")
    lines.append(f"{result['n_reproduced']} of {result['n_compared']} published totals reproduced; expert floor "
                 f"{_num(result['expert_floor'])}.")
    if result["unusable_rows"]:
        lines.append("")
        lines.append("Rows not used: " + "; ".join(result["unusable_rows"]))
    return "\n".join(lines) + "\n"
