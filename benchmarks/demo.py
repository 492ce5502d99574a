"""Wall time of the offline demo (`make demo`), in total and per sub-task, with where it goes.

Run:  .venv/bin/python benchmarks/demo.py [--out DIR] [-- extra `trustmh run` arguments]
      .venv/bin/python benchmarks/demo.py --read DIR     (report on an existing run directory)

Runs `trustmh run --out DIR` (no model argument: the bundled model on the starter suite, itself as the judge)
in a child process, then reads the Inspect logs back: per sub-task the wall time (the log's started/completed
times), the calls of the model under test and of the judge (count, prompt and generated tokens, seconds
inside the provider). Prints the machine (nproc, CPU model), the load average before and after, and the CPU
time of the run (user + system of the child), since a shared machine inflates wall time.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from throughput import machine  # one description of the machine for every benchmark


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def run_demo(out: Path, extra: list[str]) -> tuple[float, float, int]:
    """Run the demo in a child; (wall s, CPU s of the child, exit code)."""
    trustmh = Path(sys.executable).with_name("trustmh")
    cmd = [str(trustmh), "run", "--out", str(out), *extra]
    print(f"command: {' '.join(cmd)}", flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.call(cmd, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, rc


def subtask_rows(out: Path) -> list[dict[str, Any]]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    rows = []
    for info in list_eval_logs(str(out / "logs")):
        log = read_eval_log(info)
        sid = (log.eval.metadata or {}).get("trustmh_subtask", log.eval.task)
        started, completed = log.stats.started_at, log.stats.completed_at
        wall = None
        if started and completed:
            from datetime import datetime

            wall = (datetime.fromisoformat(completed) - datetime.fromisoformat(started)).total_seconds()
        calls: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for sample in log.samples or []:
            for event in sample.events:
                if event.event != "model":
                    continue
                who = "judge" if event.role and event.role.startswith("grader") else "model"
                c = calls[who]
                c["calls"] += 1
                usage = event.output.usage
                if usage is not None:
                    c["in_tok"] += usage.input_tokens
                    c["out_tok"] += usage.output_tokens
                c["seconds"] += event.output.time or 0.0
                c["cached"] += 1 if event.cache == "read" else 0
        rows.append({"subtask": sid, "wall": wall, "samples": len(log.samples or []), "calls": calls,
                     "started": started})
    rows.sort(key=lambda r: r["started"] or "")
    return rows


def report(out: Path) -> None:
    import json

    rows = subtask_rows(out)
    head = (f"{'sub-task':38s} {'wall s':>7s} {'samples':>7s} | {'model calls':>11s} {'in tok':>7s} "
            f"{'out tok':>7s} {'gen s':>6s} | {'judge calls':>11s} {'in tok':>7s} {'out tok':>7s} {'judge s':>7s}")
    print(head)
    print("-" * len(head))
    totals: dict[str, float] = defaultdict(float)
    for r in rows:
        m, j = r["calls"].get("model", {}), r["calls"].get("judge", {})
        wall = r["wall"] or 0.0
        totals["wall"] += wall
        for k, c in (("m", m), ("j", j)):
            for f in ("calls", "in_tok", "out_tok", "seconds"):
                totals[k + f] += c.get(f, 0)
        print(f"{r['subtask']:38s} {wall:7.1f} {r['samples']:7d} | {int(m.get('calls', 0)):11d} "
              f"{int(m.get('in_tok', 0)):7d} {int(m.get('out_tok', 0)):7d} {m.get('seconds', 0):6.1f} | "
              f"{int(j.get('calls', 0)):11d} {int(j.get('in_tok', 0)):7d} {int(j.get('out_tok', 0)):7d} "
              f"{j.get('seconds', 0):7.1f}")
    print("-" * len(head))
    print(f"{'sum of sub-tasks':38s} {totals['wall']:7.1f} {'':7s} | {int(totals['mcalls']):11d} "
          f"{int(totals['min_tok']):7d} {int(totals['mout_tok']):7d} {totals['mseconds']:6.1f} | "
          f"{int(totals['jcalls']):11d} {int(totals['jin_tok']):7d} {int(totals['jout_tok']):7d} "
          f"{totals['jseconds']:7.1f}")
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    missing = []
    for sid, res in results["subtasks"].items():
        if res.get("value") is None and not res.get("reason"):
            missing.append(sid)
    shown = len(results["subtasks"])
    print(f"results.json: {shown} sub-tasks; "
          f"{sum(1 for r in results['subtasks'].values() if r.get('value') is not None)} with a value, "
          f"{sum(1 for r in results['subtasks'].values() if r.get('value') is None and r.get('reason'))} "
          f"with a reason, {len(missing)} with neither{': ' + ', '.join(missing) if missing else ''}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="run directory (default: a fresh temporary one)")
    parser.add_argument("--read", type=Path, help="only report on this existing run directory")
    parser.add_argument("extra", nargs="*", help="further `trustmh run` arguments (after --)")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    if args.read:
        report(args.read)
        return
    tmp = None
    out = args.out
    if out is None:
        tmp = tempfile.mkdtemp(prefix="trustmh-demo-")
        out = Path(tmp) / "out"
    print(f"load average before: {load()}", flush=True)
    wall, cpu, rc = run_demo(out, args.extra)
    print(f"load average after:  {load()}")
    print(f"demo: wall {wall:.1f} s, CPU {cpu:.1f} s (user+sys of the run), exit code {rc}")
    report(out)
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
