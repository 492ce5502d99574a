"""Reading a large sub-task's records back from its Inspect log: peak memory and CPU.

    .venv/bin/python benchmarks/collect_memory.py [--samples 20000]

At the end of a run (and in `trustmh merge`) every sub-task's records are read back from its `.eval` log. A
MentalBench run of 100,000 responses, or a long run's largest sub-task, is one log with that many samples,
each carrying its whole transcript. This script makes such a log (a short `trustmh run` against the loopback
server, its samples then copied under new ids up to --samples) and, each in a fresh process, reads the
records back:

* full: `read_eval_log(path)`, every sample with its transcript, then the records (how trustmh read them
  before, and what most Inspect tooling does);
* trustmh: `trustmh.run.collect.records_from_log` on the header, as `trustmh run` and `trustmh merge` do now
  (the transcript fields are left unparsed, `TRANSCRIPT_FIELDS`).

It prints the peak resident memory (VmHWM) and CPU seconds of each, and checks that both give the same
records.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
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

SEED_SAMPLES = 40


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"


def make_log(tmp: Path, n: int) -> Path:
    """A `.eval` log of n scored samples: a short real run, its samples copied under new ids."""
    from inspect_ai.log import read_eval_log, write_eval_log

    out = tmp / "run"
    with LoopbackServer(respond, max_requests=SEED_SAMPLES * 3, max_seconds=300) as server:
        env = os.environ | server.env() | {"INSPECT_CACHE_DIR": str(tmp / "cache")}
        cmd = [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("mem"), "--suite",
               "trustmh", "--subtasks", "knowledge", "--limit", str(SEED_SAMPLES), "--no-judge", "--display",
               "none", "--out", str(out)]
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    source = next((out / "logs").glob("*.eval"))
    log = read_eval_log(str(source))
    seeds = log.samples or []
    samples = []
    for i in range(n):
        sample = seeds[i % len(seeds)].model_copy(deep=True)
        sample.id = f"{sample.id}-copy{i}"
        samples.append(sample)
    log.samples = samples
    log.eval.dataset.samples = n
    log.eval.dataset.sample_ids = [s.id for s in samples]
    big = tmp / "big.eval"
    write_eval_log(log, str(big))
    return big


def peak_resident_mb() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the
    parent across fork and exec, so a child of the process that built a large log would report that."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux; an upper bound


def inner(method: str, path: str) -> None:
    from inspect_ai.log import read_eval_log

    from trustmh.run.collect import records_from_log

    t0 = time.process_time()
    if method == "full":
        recs, n_errors, _ = records_from_log(read_eval_log(path))
    else:
        recs, n_errors, _ = records_from_log(read_eval_log(path, header_only=True))
    cpu = time.process_time() - t0
    digest = hashlib.sha256(json.dumps([r.to_dict() for r in recs],
                                       sort_keys=True, default=str).encode()).hexdigest()[:16]
    peak_mb = peak_resident_mb()
    print(json.dumps({"records": len(recs), "errors": n_errors, "cpu": cpu, "peak_mb": peak_mb, "digest": digest}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--samples", type=int, default=20000, help="samples in the log (default 20000)")
    ap.add_argument("--inner", choices=["full", "trustmh"], help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        inner(args.inner, args.log)
        return
    print(f"machine: {machine()}")
    print(f"command: {' '.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        big = make_log(tmp, args.samples)
        print(f"log: {args.samples} samples, {big.stat().st_size / 2**20:.1f} MB on disk "
              f"(made in {time.perf_counter() - t0:.0f} s)\n")
        print(f"{'method':<8} {'records':>8} {'peak MB':>8} {'CPU s':>7}  digest")
        seen = {}
        for method in ("full", "trustmh"):
            done = subprocess.run([sys.executable, __file__, "--inner", method, "--log", str(big)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{method:<8} failed: {done.stderr.strip().splitlines()[-1] if done.stderr else done.returncode}")
                continue
            res = json.loads(done.stdout.strip().splitlines()[-1])
            seen[method] = res
            print(f"{method:<8} {res['records']:>8} {res['peak_mb']:>8.0f} {res['cpu']:>7.1f}  {res['digest']}")
        if len(seen) == 2:
            same = seen["full"]["digest"] == seen["trustmh"]["digest"]
            print(f"\nsame records: {'yes' if same else 'NO'}; peak memory trustmh/full = "
                  f"{seen['trustmh']['peak_mb'] / seen['full']['peak_mb']:.2f}")
            if not same:
                sys.exit(1)


if __name__ == "__main__":
    main()
