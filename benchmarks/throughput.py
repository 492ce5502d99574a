"""Throughput against an endpoint of fixed latency: how close each client gets to the concurrency bound.

    taskset -c 0,1 .venv/bin/python benchmarks/throughput.py [--quick] [--samples N] [--concurrency 8,32,128]

The loopback OpenAI-compatible server (tests/support/loopback_server.py) answers every chat request after L seconds
(default 0.2), so C requests in flight can at best give C / L requests per second (the bound). For each C,
in one run, on the same rule-scored samples (`reliability/knowledge` MCQs, no judge):

* lean: an async httpx client, C requests in flight (what the endpoint allows with almost no client work);
* inspect: bare Inspect `eval` (generate + match scorer, Inspect's default settings);
* inspect-tuned: the same with what `trustmh run` sets (`trustmh.run.inspect_eval.log_settings`: no realtime sample
  buffer, a log write every 50 samples, no running metric) and Inspect's response cache on, as trustmh has
  it: Inspect's own floor for the work trustmh does per sample;
* trustmh-1w / trustmh-2w: `trustmh run` as a user runs it, in one process and with `--workers 2`
  (each worker gets C/2 connections, so both keep at most C requests in flight);
* sequential: one call after another (how the original benchmark called models; run once, independent of C).

req/s is measured by the server: answered requests / (last answer - first request) of that client, so
process start-up and result writing are outside it; `wall` is the whole command. CPU ms per sample is the
CPU time (user + system) of the measured process tree divided by the samples: `all` for the whole command
(Python start-up, planning, reading the logs back, the report), `calls` for the span of its calls only (what
each further sample costs; sampled every 50 ms). The server runs in this process and its CPU is not counted
(it shares the same cores, though).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the loopback server is a test helper

from loopback_server import LoopbackServer, message_text  # noqa: E402

SERVICE = "loop"
SEQUENTIAL_SAMPLES = 20


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    # a valid MCQ answer, so every sample is scored (none re-asked)
    return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"


# ------------------------------------------------------------------------------------ measured clients

def _prompts(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _body(prompt: dict[str, Any]) -> dict[str, Any]:
    return {"model": "lean", "messages": prompt["messages"], "max_tokens": 64, "temperature": 0.0}


def inner_lean(args: argparse.Namespace) -> None:
    import httpx

    prompts = _prompts(args.prompts)
    base, key = os.environ[f"{SERVICE.upper()}_BASE_URL"], os.environ[f"{SERVICE.upper()}_API_KEY"]

    async def go() -> None:
        limits = httpx.Limits(max_connections=args.c, max_keepalive_connections=args.c)
        async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60,
                                     headers={"Authorization": f"Bearer {key}"}) as client:
            sem = asyncio.Semaphore(args.c)

            async def one(p: dict[str, Any]) -> str:
                async with sem:
                    for attempt in range(3):  # as any client would: retry a dropped connection
                        try:
                            r = await client.post("/chat/completions", json=_body(p))
                            break
                        except httpx.TransportError:
                            if attempt == 2:
                                raise
                    r.raise_for_status()
                    return str(r.json()["choices"][0]["message"]["content"])

            await asyncio.gather(*(one(p) for p in prompts))

    asyncio.run(go())


def inner_sequential(args: argparse.Namespace) -> None:
    import httpx

    prompts = _prompts(args.prompts)[:SEQUENTIAL_SAMPLES]
    base, key = os.environ[f"{SERVICE.upper()}_BASE_URL"], os.environ[f"{SERVICE.upper()}_API_KEY"]
    with httpx.Client(base_url=base, timeout=60, headers={"Authorization": f"Bearer {key}"}) as client:
        for p in prompts:
            client.post("/chat/completions", json=_body(p)).raise_for_status()


def inner_inspect(args: argparse.Namespace, tuned: bool = False) -> None:
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import CachePolicy, ChatMessageUser, GenerateConfig
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    from trustmh.run.config import RunOptions, resolve
    from trustmh.run.inspect_eval import log_settings

    samples = [Sample(id=p["id"], input=[ChatMessageUser(content=m["content"]) for m in p["messages"]],
                      target=p["target"]) for p in _prompts(args.prompts)]
    solver = generate(cache=CachePolicy(expiry=None, per_epoch=True)) if tuned else generate()
    task = Task(dataset=MemoryDataset(samples), solver=solver, scorer=match(),
                config=GenerateConfig(max_tokens=64, temperature=0.0))
    # exactly what `trustmh run --display none` gives Inspect
    settings = log_settings(resolve(RunOptions(display="none")), "none") if tuned else {}
    with tempfile.TemporaryDirectory() as tmp:
        eval(task, model=f"openai-api/{SERVICE}/inspect{'-tuned' if tuned else ''}", max_connections=args.c,
             display="none", log_dir=tmp, **settings)


# ------------------------------------------------------------------------------------------ harness

def trustmh_command(c: int, n: int, out: Path, workers: int) -> list[str]:
    cmd = [sys.executable, "-m", "trustmh.cli", "run", "--model", f"openai-api/{SERVICE}/trustmh-{workers}w",
           "--suite", "trustmh", "--subtasks", "knowledge", "--limit", str(n), "--no-judge",
           "--max-connections", str(max(1, c // workers)), "--display", "none", "--out", str(out)]
    return cmd + (["--workers", str(workers)] if workers > 1 else [])


class TreeCPU:
    """Samples the CPU time of a process tree (alive processes, plus children they have waited for) every
    `interval` seconds, so the CPU spent between two instants can be read back."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.samples: list[tuple[float, float]] = []
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _total(self) -> float:
        import psutil

        total = 0.0
        try:
            procs = [self.root, *self.root.children(recursive=True)]
        except psutil.Error:
            return self.samples[-1][1] if self.samples else 0.0
        for p in procs:
            try:
                t = p.cpu_times()
                total += t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                pass
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((time.monotonic(), self._total()))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def at(self, t: float) -> float:
        """CPU seconds used by time t (linear between samples)."""
        prev = (0.0, 0.0)
        for ts, cpu in self.samples:
            if ts >= t:
                if prev[0] == 0.0:
                    return cpu
                return prev[1] + (cpu - prev[1]) * (t - prev[0]) / max(ts - prev[0], 1e-9)
            prev = (ts, cpu)
        return prev[1]


def measure(server: LoopbackServer, cmd: list[str], env: dict[str, str], samples: int) -> dict[str, float]:
    first = len(server.requests)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    tree = TreeCPU(proc.pid)
    _, stderr = proc.communicate()
    tree.stop()
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"failed ({proc.returncode}): {shlex.join(cmd)}\n{stderr[-2000:]}")
    done = [r for r in server.requests[first:] if r.status == 200 and r.finished is not None]
    if len(done) < samples:
        sys.exit(f"only {len(done)} of {samples} requests answered: {shlex.join(cmd)}\n{stderr[-2000:]}")
    start, end = min(r.started for r in done), max(r.finished or 0.0 for r in done)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"rps": len(done) / (end - start), "cpu_ms": 1000 * cpu / samples,
            "cpu_ms_calls": 1000 * (tree.at(end) - tree.at(start)) / len(done), "wall": wall, "n": len(done)}


def write_prompts(n: int, path: Path) -> int:
    """The rendered prompts of the first n `reliability/knowledge` items, exactly as `trustmh run` sends them."""
    from trustmh.core import JudgeInfo, RunContext
    from trustmh.run.tasks import build_task

    ctx = RunContext(mode="default", seed=0, suite="trustmh", limit=n, judge=JudgeInfo(None, False, 0),
                     options={"model": "bench"})
    task = build_task("reliability/knowledge", ctx)
    rows = [{"id": str(s.id), "target": s.target,
             "messages": [{"role": m.role, "content": m.text} for m in s.input]} for s in task.dataset]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"{os.cpu_count()} CPUs ({cpus} usable by this process), {model}; Python {platform.python_version()}; "
            f"load average {load}")


def main() -> None:
    # the server's listen backlog (5 by default) drops connections when C of them open at once
    ThreadingHTTPServer.request_queue_size = 1024
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples (about 1-2 minutes)")
    ap.add_argument("--samples", type=int, default=None, help="samples per client and C (default 600; 200 quick)")
    ap.add_argument("--concurrency", default="8,32,128", help="comma-separated C values")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds the server waits before each reply")
    ap.add_argument("--clients", default="lean,inspect,inspect-tuned,trustmh-1w,trustmh-2w,sequential")
    ap.add_argument("--inner", choices=["lean", "sequential", "inspect", "inspect-tuned"], help=argparse.SUPPRESS)
    ap.add_argument("--prompts", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("-c", type=int, default=8, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.inner:
        if args.inner == "inspect-tuned":
            inner_inspect(args, tuned=True)
        else:
            {"lean": inner_lean, "sequential": inner_sequential, "inspect": inner_inspect}[args.inner](args)
        return

    n_wanted = args.samples or (200 if args.quick else 600)
    cs = [int(c) for c in args.concurrency.split(",")]
    clients = args.clients.split(",")
    print(f"machine: {machine()}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        n = write_prompts(n_wanted, tmp / "prompts.jsonl")
        print(f"latency L = {args.latency * 1000:.0f} ms, {n} samples per client and C "
              f"({SEQUENTIAL_SAMPLES} for the sequential loop)\n")
        total = (len(cs) * len(clients) + 2) * (n + 10)
        # bounded: the server stops itself after this many requests or seconds
        with LoopbackServer(respond, latency=args.latency, max_requests=total, max_seconds=1800,
                            service=SERVICE) as server:
            env = {k: v for k, v in os.environ.items() if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
            env.update(server.env())
            seq: dict[str, float] | None = None
            print(f"{'':>4} {'':<13} {'':>7} {'':>8} {'CPU ms per sample':^21}")
            print(f"{'C':>4} {'client':<13} {'req/s':>7} {'of bound':>8} {'all':>10} {'calls':>10} {'wall s':>7}")
            for c in cs:
                bound = c / args.latency
                print(f"{c:>4} {'bound C/L':<13} {bound:>7.1f} {1:>8.2f}")
                for index, client in enumerate(clients):
                    inner = [sys.executable, __file__, "--prompts", str(tmp / "prompts.jsonl"), "-c", str(c)]
                    # every measurement calls the server: a fresh response cache each
                    # (a client listed twice is measured twice, each time against the server)
                    env["INSPECT_CACHE_DIR"] = str(tmp / f"cache-{c}-{index}-{client}")
                    if client in ("lean", "inspect", "inspect-tuned"):
                        res = measure(server, [*inner, "--inner", client], env, n)
                    elif client.startswith("trustmh-"):
                        workers = int(client.removeprefix("trustmh-").removesuffix("w"))
                        out = tmp / f"out-{c}-{index}-{workers}"
                        res = measure(server, trustmh_command(c, n, out, workers), env, n)
                    elif client == "sequential":
                        if seq is None:
                            seq = measure(server, [*inner, "--inner", "sequential"], env, SEQUENTIAL_SAMPLES)
                        res = seq
                    else:
                        sys.exit(f"unknown client {client!r}")
                    print(f"{c:>4} {client:<13} {res['rps']:>7.1f} {res['rps'] / bound:>8.2f} "
                          f"{res['cpu_ms']:>10.1f} {res['cpu_ms_calls']:>10.1f} {res['wall']:>7.1f}", flush=True)


if __name__ == "__main__":
    main()
