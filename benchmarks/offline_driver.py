"""One small sub-task driven through a real Inspect eval against the offline driver: wall and CPU per call.

    .venv/bin/python benchmarks/offline_driver.py [--subtask reliability/knowledge] [--items 10] [--calls 5]

Both walk the run's steps (`trustmh.steps`); the eval adds Inspect's task, sample and log machinery on a
canned mockllm model (tests/support/canned.py: outputs with usage, so no tokenizer is fetched). The figure
decides whether the offline drivers could be one eval each (docs/contributing.md#rules, "One driver"). Each
side is called once first (imports, first-call caches), then timed over `--calls` calls.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the canned model is a test helper

from inspect_ai import eval as inspect_eval  # noqa: E402

from canned import canned_model  # noqa: E402
from trustmh.catalogue import get_subtask  # noqa: E402
from trustmh.offline import run_offline  # noqa: E402
from trustmh.run.direct import direct_spec  # noqa: E402
from trustmh.run.tasks import build_task  # noqa: E402

REPLY = "That sounds hard."


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def per_call(fn: Callable[[], object], calls: int) -> tuple[float, float]:
    """(wall ms, CPU ms) per call, after one untimed call."""
    fn()
    wall, cpu = time.perf_counter(), cpu_seconds()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - wall) * 1000 / calls, (cpu_seconds() - cpu) * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subtask", default="reliability/knowledge")
    parser.add_argument("--items", type=int, default=10)
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    ctx = direct_spec(suite="starter", limit=args.items, subtasks=[args.subtask], n_boot=200).context()
    subtask = get_subtask(args.subtask)
    items = subtask.items(ctx)[:args.items]
    log_dir = tempfile.mkdtemp(prefix="trustmh-bench-")

    def offline() -> None:
        run_offline(subtask, ctx, lambda item, prompt: REPLY, items=items)

    def through_inspect() -> None:
        log = inspect_eval(build_task(args.subtask, ctx), model=canned_model(lambda p, m, c: REPLY),
                           log_dir=log_dir, display="none", limit=args.items)[0]
        if log.status != "success":
            raise SystemExit(f"the eval failed: {log.error}")

    for label, fn in (("run_offline", offline), ("inspect eval (mockllm)", through_inspect)):
        wall, cpu = per_call(fn, args.calls)
        print(f"{label}: {len(items)} items, wall {wall:.1f} ms, CPU {cpu:.1f} ms per call")


if __name__ == "__main__":
    main()
