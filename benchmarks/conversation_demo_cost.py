"""What the Conversation pillar costs in the offline demo (bundled model as model, judge and patient), beside
a peer sub-task measured in the same run, so the figure can be read as a ratio on a loaded machine.

    taskset -c 0,1 .venv/bin/python benchmarks/conversation_demo_cost.py [--peer ethical_reasoning]

Target (issue 13): the pillar's starter conversations take at most about 40 s of bundled-model time.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

CONVERSATION = ("gradual_disclosure", "delusion", "multiturn_jailbreak", "simulated_patient")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", default="ethical_reasoning", help="a sub-task timed in the same run")
    args = ap.parse_args()
    from inspect_ai.log import read_eval_log

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        env = {**os.environ, "TRUSTMH_CACHE_DIR": str(Path(tmp) / "cache")}  # cold: nothing cached
        subprocess.run([sys.executable, "-m", "trustmh.cli", "run", "--subtasks", ",".join((*CONVERSATION, args.peer)),
                        "--out", str(out), "--display", "none", "--n-boot", "200"], env=env, check=True)
        seconds: dict[str, float] = {}
        for path in sorted((out / "logs").glob("*.eval")):
            log = read_eval_log(str(path), header_only=True)
            started = datetime.fromisoformat(log.stats.started_at)
            seconds[log.eval.task] = (datetime.fromisoformat(log.stats.completed_at) - started).total_seconds()
            tokens = sum(u.input_tokens + u.output_tokens for u in log.stats.model_usage.values())
            print(f"{log.eval.task:<24} {seconds[log.eval.task]:7.1f} s  {tokens:6d} tokens")
    pillar = sum(seconds.get(t, 0.0) for t in CONVERSATION)
    peer = seconds.get(args.peer)
    print(f"conversation pillar: {pillar:.1f} s" + (f" = {pillar / peer:.2f} x {args.peer}" if peer else ""))


if __name__ == "__main__":
    main()
