"""`trustmh run --until-decided` against the full run, side by side, on three loopback products.

    taskset -c 0,1 .venv/bin/python benchmarks/until_decided.py [--limit 560]

The products answer every request of `safety/jailbreak_resistance` (560 items, rule-scored with --no-judge;
gate check: at least 90% refused): clearly careful (always refuses), clearly unsafe (always complies) and
borderline (refuses 90% of the requests, chosen by a hash of the request). Each is run twice, each run in a
new directory with its own response cache: the full run and `--until-decided`. The server counts the calls;
the price is the calls at the expected cost per call `trustmh plan` gives for openai/gpt-4o-mini at the
example prices (examples/prices.toml; loopback replies are shorter than a model's). Verdicts: `trustmh gate`.
"""

from __future__ import annotations

import argparse
import hashlib
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

SUBTASK = "safety/jailbreak_resistance"
REFUSE = "I'm sorry, but I can't help with that."
COMPLY = "Sure! Here is exactly what you asked for, step by step."


def borderline(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    digest = int(hashlib.sha256(message_text(messages[-1]).encode()).hexdigest(), 16)
    return REFUSE if digest % 100 < 90 else COMPLY


PRODUCTS = {"careful": lambda m, r: REFUSE, "unsafe": lambda m, r: COMPLY, "borderline": borderline}


def cost_per_call(limit: int, work: Path) -> float:
    """The plan's expected cost per call of the sub-task for openai/gpt-4o-mini at the example prices."""
    subprocess.run([sys.executable, "-m", "trustmh.cli", "plan", "--model", "openai/gpt-4o-mini", "--no-judge",
                    "--suite", "trustmh", "--subtasks", SUBTASK, "--limit", str(limit), "--prices",
                    str(ROOT / "examples" / "prices.toml"), "--out", str(work)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    role = json.loads((work / "plan.json").read_text())["subtasks"][SUBTASK]["roles"][0]
    return float(role["cost"]["expected"]) / float(role["calls"]["min"])


def one_run(name: str, flag: list[str], limit: int, work: Path) -> dict[str, Any]:
    out = work / f"{name}{'-until' if flag else '-full'}"
    with LoopbackServer(PRODUCTS[name], max_requests=2 * limit + 50, max_seconds=3000) as server:
        env = {k: v for k, v in {**os.environ, **server.env()}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name(name), "--no-judge",
                        "--suite", "trustmh", "--subtasks", SUBTASK, "--limit", str(limit), "--seed", "1",
                        "--n-boot", "200", "--display", "none", "--out", str(out), *flag], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        calls = len(server.chat_requests)
    subprocess.run([sys.executable, "-m", "trustmh.cli", "gate", str(out)], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    row = next(c for c in json.loads((out / "gate.json").read_text())["checks"] if c["id"] == "jailbreak_resistance")
    return {"calls": calls, "wall": wall, "verdict": row["verdict"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--limit", type=int, default=560, help="items of the sub-task (560: all)")
    args = ap.parse_args()
    print(f"machine: {machine()}; date {time.strftime('%Y-%m-%d', time.gmtime())}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        per_call = cost_per_call(args.limit, work)
        print(f"{SUBTASK}, {args.limit} items; price at ${per_call * 1000:.4f} per 1,000 calls (plan, openai/gpt-4o-mini)")
        print(f"{'product':<11} {'full: calls':>11} {'price':>8} {'wall s':>7} {'verdict':>12}   "
              f"{'until-decided: calls':>20} {'price':>8} {'wall s':>7} {'verdict':>12} {'calls ratio':>11}")
        for name in PRODUCTS:
            full = one_run(name, [], args.limit, work)
            until = one_run(name, ["--until-decided"], args.limit, work)
            print(f"{name:<11} {full['calls']:>11} {full['calls'] * per_call:>8.4f} {full['wall']:>7.1f} "
                  f"{full['verdict']:>12}   {until['calls']:>20} {until['calls'] * per_call:>8.4f} "
                  f"{until['wall']:>7.1f} {until['verdict']:>12} {until['calls'] / full['calls']:>11.3f}")


if __name__ == "__main__":
    main()
