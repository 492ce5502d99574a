"""`trustmh plan` on the full default suite: wall time, CPU and peak memory, against a baseline commit.

    .venv/bin/python benchmarks/plan_speed.py [--baseline a116beb] [--repeat 2] [-- PLAN ARGUMENTS...]

Runs `trustmh plan --model openai/gpt-4o-mini --judge anthropic/claude-sonnet-4-5 --out DIR` (or the arguments
after `--`) from this tree and from the baseline commit (`git archive` into a temporary folder, run with
the same Python and packages), alternately, REPEAT times each; prints wall seconds, CPU seconds (user + system)
and the peak resident memory of each process, the machine and the load average, and whether both trees
printed the same table and wrote the same plan.json (a faster plan must plan the same run). No API key and
no network are needed (a data file that is not here is reported as not computed, as in a run).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from throughput import machine  # noqa: E402

DEFAULT_PLAN = ["--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5"]
TARGET_WALL_S, TARGET_PEAK_MB = 10.0, 300.0  # issue 48's targets on a quiet machine


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def baseline_tree(rev: str, into: Path) -> Path:
    """The baseline commit's files (src/ is what runs)."""
    archive = into / "baseline.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", "-o", str(archive), rev, "src"], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "baseline", filter="data")
    return into / "baseline"


def measured(tree: Path, plan_args: list[str], out: Path) -> tuple[float, float, float, str, str]:
    """(wall s, CPU s, peak MB, stdout, plan.json) of one `trustmh plan` from `tree`: the child's own CPU and
    peak memory (its rusage, read by wait4)."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    argv = [sys.executable, "-m", "trustmh.cli", "plan", *plan_args, "--out", str(out)]
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
        proc = subprocess.Popen(argv, env=env, stdout=so, stderr=se, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        code = os.waitstatus_to_exitcode(status)
        proc.returncode = code  # reaped here: Popen must not wait for it again
        so.seek(0), se.seek(0)
        stdout, stderr = so.read(), se.read()
    if code != 0:
        sys.exit(f"{tree}: trustmh plan exit {code}\n{stderr[-2000:]}")
    peak_mb = usage.ru_maxrss / 1024  # kB on Linux
    return wall, usage.ru_utime + usage.ru_stime, peak_mb, stdout, (out / "plan.json").read_text(encoding="utf-8")


def main() -> None:
    argv = sys.argv[1:]
    plan_args = DEFAULT_PLAN
    if "--" in argv:
        plan_args, argv = argv[argv.index("--") + 1:], argv[:argv.index("--")]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", default="a116beb", help="the commit to compare with (default: issue 48's)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of each tree, alternately")
    args = ap.parse_args(argv)
    print(f"machine: {machine()}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(f"plan: trustmh plan {shlex.join(plan_args)}; TRUSTMH_DATA_DIR={os.environ.get('TRUSTMH_DATA_DIR', '')}")
    print(f"load average before: {load()}\n", flush=True)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        trees = {f"baseline {args.baseline}": baseline_tree(args.baseline, tmp), "this tree": ROOT}
        outputs: dict[str, set[tuple[str, str]]] = {name: set() for name in trees}
        best: dict[str, tuple[float, float, float]] = {}
        print(f"{'tree':<20} {'wall s':>7} {'CPU s':>7} {'peak MB':>8}")
        for k in range(args.repeat):
            for t, (name, tree) in enumerate(trees.items()):
                wall, cpu, peak, stdout, plan_json = measured(tree, plan_args, tmp / f"out-{k}-{t}")
                outputs[name].add((stdout, plan_json))
                print(f"{name:<20} {wall:>7.1f} {cpu:>7.1f} {peak:>8.0f}", flush=True)
                if name not in best or wall < best[name][0]:
                    best[name] = (wall, cpu, peak)
        print(f"\nload average after: {load()}")
        base, ours = best[f"baseline {args.baseline}"], best["this tree"]
        print(f"fastest: wall {base[0]:.1f} -> {ours[0]:.1f} s, CPU {base[1]:.1f} -> {ours[1]:.1f} s, peak "
              f"{base[2]:.0f} -> {ours[2]:.0f} MB (targets: <= {TARGET_WALL_S:g} s, <= {TARGET_PEAK_MB:g} MB on a "
              "quiet machine)")
        same = len({o for seen in outputs.values() for o in seen}) == 1
        print(f"the same table and plan.json from both trees, every run: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
