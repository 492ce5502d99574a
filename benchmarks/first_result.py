"""Time to a first result on a fresh machine: `git clone`, then `make demo`, with an empty pip cache.

Run:  python3 benchmarks/first_result.py [--repo PATH_OR_URL] [--keep]

Clones the repository (default: this one, its committed HEAD) into a temporary folder, then runs `make install`
(a new `.venv`, every package downloaded: `PIP_CACHE_DIR` is a new empty folder and `PIP_NO_CACHE_DIR=1`) and
`make demo` (the offline demo into `trustmh-out/`), and prints the install time, the demo time and the total with
the machine (nproc, CPU model, Python) and the load average before and after, since a shared machine inflates
wall time. `--keep` leaves the clone (its `trustmh-out/report.html`) for a look.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from demo import load
from throughput import machine  # one description of the machine for every benchmark

REPO = Path(__file__).resolve().parent.parent


def timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    """Run a command with its output in `log`; its wall time in seconds (exits on failure, naming the log)."""
    print(f"$ {' '.join(cmd)}", flush=True)
    t0 = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        rc = subprocess.call(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall = time.perf_counter() - t0
    if rc != 0:
        print(f"first_result: {' '.join(cmd)} failed with exit code {rc}; see {log}", file=sys.stderr)
        sys.exit(1)
    return wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", default=str(REPO), help="what to clone (default: this repository)")
    parser.add_argument("--keep", action="store_true", help="keep the clone and its report")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="trustmh-first-"))
    cache = work / "pip-cache"
    cache.mkdir()
    clone = work / "trustmh"
    # a fresh machine: no pip cache, and no Q4_0 copy of the bundled model yet (trustmh.models.gguf_q4_0)
    env = {**os.environ, "PIP_CACHE_DIR": str(cache), "PIP_NO_CACHE_DIR": "1", "TRUSTMH_MODELS_DIR": str(work / "models")}
    env.pop("VIRTUAL_ENV", None)
    print(f"machine: {machine()}")
    print(f"date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print(f"load average before: {load()}", flush=True)
    try:
        t_clone = timed(["git", "clone", "--quiet", args.repo, str(clone)], work, env, work / "clone.log")
        t_install = timed(["make", "install"], clone, env, work / "install.log")
        t_demo = timed(["make", "demo"], clone, env, work / "demo.log")
        report = clone / "trustmh-out" / "report.html"
        if not report.is_file():
            print(f"first_result: no report at {report}; see {work / 'demo.log'}", file=sys.stderr)
            return 1
        total = t_clone + t_install + t_demo
        print(f"load average after: {load()}")
        print(f"clone   {t_clone:7.1f} s")
        print(f"install {t_install:7.1f} s   (make install: new .venv, empty pip cache, prebuilt wheels only)")
        print(f"demo    {t_demo:7.1f} s   (make demo: the bundled model on the starter suite, offline)")
        print(f"total   {total:7.1f} s   ({total / 60:.1f} min from git clone to {report.relative_to(clone)})")
    finally:
        if args.keep:
            print(f"kept: {clone}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
