"""Scale-out through the Ray launcher: 1, 2 and 4 shards (`trustmh run --workers N --engine ray`) on a local
Ray cluster, against the loopback OpenAI-compatible server at a fixed latency, next to a single-process
`trustmh run` on the same items and the same shards as local processes (`--workers N`). Prints wall time (whole command: Python start-up, Ray connection, shards,
merge), requests per second, and whether the merged result equals the single-process one.

    .venv/bin/python benchmarks/scale.py [--shards 1,2,4] [--limit 400] [--latency 0.2] [--max-connections 8]

It re-runs itself in a network namespace whose only interface is loopback (`unshare`, root or user
namespaces), so that Ray, which announces the machine's own address otherwise, stays on 127.0.0.1.

Each shard is a process with its own `--max-connections` connections, so the bound on req/s grows with the
shards (N × C / L) until the CPU is the limit: on 2 cores, Inspect's per-sample CPU cost caps it first.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from loopback_server import LoopbackServer, message_text  # noqa: E402
from ray_cluster import (  # noqa: E402
    CLIENT_ENV,
    IN_NETNS,
    RayCluster,
    loopback_only,
    netns_command,
    netns_unavailable,
)


def _respond(messages, request) -> str:  # noqa: ANN001
    return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"


def comparable(out: Path) -> tuple[dict, list[str]]:
    """results.json without its timestamp, and the sorted lines of items.jsonl."""
    data = json.loads((out / "results.json").read_text())
    data.pop("created", None)
    return data, sorted((out / "items.jsonl").read_text().splitlines())


def _timed(cmd: list[str], env: dict[str, str], server: LoopbackServer) -> tuple[float, int]:
    before = len(server.completed())
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return wall, len(server.completed()) - before


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--limit", type=int, default=400, help="knowledge items (one call each)")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server waits per reply")
    ap.add_argument("--max-connections", type=int, default=8, help="per process (per shard)")
    args = ap.parse_args()
    if not loopback_only():
        if os.environ.get(IN_NETNS):
            raise SystemExit("scale.py: the network namespace made for Ray has an interface besides loopback")
        # Ray announces the machine's own address: measure in a network namespace with loopback only
        why = netns_unavailable()
        if why:
            raise SystemExit(f"scale.py runs only where no traffic can leave loopback: {why}")
        raise SystemExit(subprocess.run(netns_command([sys.executable, *sys.argv])).returncode)
    counts = [int(n) for n in args.shards.split(",")]
    with contextlib.suppress(AttributeError):
        print(f"CPUs available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f}")
    total = args.limit * (2 + 2 * len(counts)) + 50
    with tempfile.TemporaryDirectory() as tmp, \
            LoopbackServer(_respond, latency=args.latency, max_requests=total, max_seconds=3600) as server:
        env = {**os.environ, **server.env(), **CLIENT_ENV}
        env.setdefault("TRUSTMH_DATA_DIR", str(ROOT.parent / "shared" / "data"))
        base = [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite",
                "trustmh", "--subtasks", "knowledge", "--limit", str(args.limit), "--no-judge", "--display",
                "none", "--n-boot", "200", "--no-cache", "--max-connections", str(args.max_connections)]
        single = Path(tmp) / "single"
        wall, calls = _timed([*base, "--out", str(single)], env, server)
        bound = args.max_connections / args.latency
        print(f"latency {args.latency * 1000:.0f} ms, {args.max_connections} connections per process, "
              f"{calls} calls per run")
        print(f"{'run':<28}{'wall s':>8}{'req/s':>8}{'bound':>8}  merged == single")
        print(f"{'single process':<28}{wall:>8.1f}{calls / wall:>8.1f}{bound:>8.0f}  (reference)", flush=True)
        t0 = time.perf_counter()
        # as many CPUs as the most shards, so that Ray runs them all at once (each mostly waits on the server)
        with RayCluster(env, num_cpus=max(counts), max_seconds=3600) as address:
            print(f"local Ray cluster started in {time.perf_counter() - t0:.1f} s (not counted below)", flush=True)
            for n in counts:
                # the peer, measured in the same run: the same shards as local processes (--workers N)
                for engine in ("local", "ray"):
                    out = Path(tmp) / f"{engine}{n}"
                    extra = ["--engine", "ray", "--ray-address", address] if engine == "ray" else []
                    wall, calls = _timed([*base, "--workers", str(n), *extra, "--out", str(out)], env, server)
                    same = comparable(out) == comparable(single)
                    label = f"{engine}, {n} shard(s)"
                    print(f"{label:<28}{wall:>8.1f}{calls / wall:>8.1f}{bound * n:>8.0f}  {same}", flush=True)


if __name__ == "__main__":
    main()
