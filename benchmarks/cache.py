"""The response cache: model and judge calls, and wall time, of a re-run against the first run.

    taskset -c 0,1 .venv/bin/python benchmarks/cache.py [--limit 100] [--latency 0.2]

Runs `trustmh run` three times against the loopback OpenAI-compatible server (every reply waits L seconds;
the server counts the calls), on a rule-scored sub-task and a judged one:

1. first run: a new run directory, an empty cache (TRUSTMH_CACHE_DIR, shared by runs);
2. cached re-run: a NEW run directory with the same configuration: every answer comes from the cache;
3. continued run: the SAME command again in the first run directory: finished sub-tasks are reused as they
   are (no sample is run again).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the loopback server is a test helper
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import machine  # noqa: E402

from loopback_server import LoopbackServer, message_text  # noqa: E402

SUBTASKS = "knowledge,ethical_reasoning"


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "sc1" in text:  # the ethics judge
        return '{"sc1": 4, "sc2": 3, "sc3": 5, "sc4": 3, "sc5": 4}'
    if "Scenario:" in text:  # the ethics question
        return '```json\n{"choice": "B", "reasoning": "Synthetic reasoning."}\n```'
    return "Answer: A" if len(text) % 2 else "Answer: B"


def command(server: LoopbackServer, out: Path, limit: int) -> list[str]:
    return [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--judge",
            server.model_name("judge"), "--suite", "trustmh", "--subtasks", SUBTASKS, "--limit", str(limit),
            "--seed", "1", "--display", "none", "--out", str(out)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=100, help="items per sub-task")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server waits before each reply")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(f"sub-tasks {SUBTASKS} (the second judged), --limit {args.limit}, latency L = "
          f"{args.latency * 1000:.0f} ms\n")
    with tempfile.TemporaryDirectory() as tmp_name, \
            LoopbackServer(respond, latency=args.latency, max_requests=20 * args.limit + 100,
                           max_seconds=1200) as server:
        tmp = Path(tmp_name)
        env = {k: v for k, v in os.environ.items() if k != "INSPECT_CACHE_DIR"}
        env.update(server.env())
        env["TRUSTMH_CACHE_DIR"] = str(tmp / "cache")
        runs = [("first run (empty cache)", tmp / "a"), ("cached re-run, new run directory", tmp / "b"),
                ("same command again (continued run)", tmp / "a")]
        results = []
        print(f"{'run':<36} {'model calls':>11} {'judge calls':>11} {'wall s':>7}")
        for label, out in runs:
            before = len(server.completed())
            t0 = time.perf_counter()
            proc = subprocess.run(command(server, out, args.limit), env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                sys.exit(f"{label}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
            calls = server.completed()[before:]
            judge = sum(1 for r in calls if (r.json or {}).get("model") == "judge")
            print(f"{label:<36} {len(calls) - judge:>11} {judge:>11} {wall:>7.1f}", flush=True)
            data = json.loads((out / "results.json").read_text(encoding="utf-8"))
            results.append({k: v for k, v in data["subtasks"].items()})
        same = all(r == results[0] for r in results[1:])
        print(f"\nresults identical across the three runs: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
