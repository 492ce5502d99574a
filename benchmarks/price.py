"""What the full default suite costs live, in batch mode and with prompt caching, and how a batch run's actual
usage compares with its plan (docs/cost.md#benchmark).

    python benchmarks/price.py [--model openai/gpt-4o-mini] [--judge anthropic/claude-sonnet-4-5]
                               [--prices examples/prices.toml] [--limit 2]

1. `trustmh plan` on the full default suite (`--suite trustmh`, every item the machine's data holds) for one
   model and one judge, at the example price file (dated figures, not current prices): live, batch, cache and
   batch+cache, with `--batch` (conversation turns live) and with `--batch --batch-conversations`.
2. A batch run on the loopback Batch API (tests/support/batch_server.py): the starter suite (`--limit N`)
   with the model under test and the judge as OpenAI models on 127.0.0.1, then its actual usage (batched
   calls and tokens, live calls, cost at the example rates) beside its plan. The server counts tokens with the
   plan's own tokenizer, so the comparison measures the plan, not two tokenizers.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the loopback Batch API is a test helper
sys.path.insert(0, str(ROOT / "benchmarks"))

from plan_accuracy import PATIENT, REPLY, judge_reply  # noqa: E402  (the canned replies, said once)

from batch_server import BatchServer  # noqa: E402
from loopback_server import message_text  # noqa: E402
from trustmh.cli import main  # noqa: E402
from trustmh.run.tokens import Tokenizer  # noqa: E402

LOOP_MODEL, LOOP_JUDGE, LOOP_PATIENT = "openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1-mini"


def plan(args: list[str], out: Path) -> dict[str, Any]:
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["plan", *args, "--out", str(out)]) == 0
    return json.loads((out / "plan.json").read_text())


def money(x: float | None) -> str:
    return "unknown" if x is None else f"{x:,.2f}"


def planned_prices(model: str, judge: str, prices: str, tmp: Path) -> None:
    print(f"## 1. planned price of the full default suite: --model {model} --judge {judge} --prices {prices}")
    base = ["--model", model, "--judge", judge, "--suite", "trustmh", "--prices", prices]
    for label, extra in (("--batch", ["--batch"]),
                         ("--batch --batch-conversations", ["--batch", "--batch-conversations"])):
        data = plan([*base, *extra], tmp / label.replace(" ", "_"))
        t = data["totals"]
        scenarios = t["cost_scenarios"]
        live = scenarios["live"]
        print(f"\n{label}: calls {t['calls']['min']:,}-{t['calls']['max']:,}, input tokens "
              f"{t['input_tokens']['min']:,}-{t['input_tokens']['max']:,}; not run here: "
              f"{', '.join(sorted(data['not_run'])) or 'none'}")
        print("| scenario | expected | max | expected vs live |\n|---|---|---|---|")
        for name, fig in scenarios.items():
            share = (f"{fig['expected'] / live['expected']:.0%}" if fig and live and live["expected"] else "")
            print(f"| {name} | {money(fig and fig['expected'])} | {money(fig and fig['max'])} | {share} |")
        b = data["batch"]
        print(f"wall time live {data['wall_seconds']['min'] / 60:.0f}-{data['wall_seconds']['max'] / 60:.0f} min; "
              f"with batch {b['batched_rounds']} rounds: {b['wall_seconds']['min'] / 3600:.1f} h typical, "
              f"{b['wall_seconds']['max'] / 3600:.0f} h worst")
    cacheable = [s for s in data["prompt_cache"] if s["cacheable"]]
    print(f"\njudge templates: {len(data['prompt_cache'])}; with a shared prefix at or above the provider's minimum: "
          f"{len(cacheable)} ({', '.join(s['template'] for s in cacheable) or 'none'}); median shared prefix "
          f"{sorted(s['prefix_tokens'] for s in data['prompt_cache'])[len(data['prompt_cache']) // 2]:,} tokens")


def respond(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
    model = body.get("model")
    if model == LOOP_JUDGE.split("/")[1]:
        return judge_reply(message_text(messages[-1]))
    if model == LOOP_PATIENT.split("/")[1]:
        return PATIENT
    return REPLY


def loopback_batch_run(prices: str, limit: int, tmp: Path) -> None:
    tok = Tokenizer(LOOP_MODEL)
    args = ["--model", LOOP_MODEL, "--judge", LOOP_JUDGE, "--patient", LOOP_PATIENT, "--suite", "starter",
            "--limit", str(limit), "--prices", prices, "--n-boot", "200", "--batch",
            "--expect-reply-tokens", str(tok.count(REPLY))]
    with BatchServer(respond, delay=1.0, max_requests=20000, max_seconds=3000, prompt_tokens=tok.prompt_tokens,
                     completion_tokens=tok.count) as server:
        os.environ.update({**server.env(), "TRUSTMH_BATCH_TICK": "0.2", "TRUSTMH_BATCH_SEND_DELAY": "1"})
        data = plan(args, tmp / "loop-plan")
        started = time.monotonic()
        with contextlib.redirect_stdout(io.StringIO()):  # Inspect prints its batch status lines
            code = main(["run", *args, "--out", str(tmp / "loop"), "--display", "none"])
        wall = time.monotonic() - started
        results = json.loads((tmp / "loop" / "results.json").read_text())
        server.finish_due()
        counts = (len(server.batches), sum(server.submitted_bodies.values()), sum(server.answered_bodies.values()),
                  sum(server.failed_bodies.values()), sum(server.live_bodies.values()), len(server.twice()))
    u = results["usage"]["totals"]
    scen = data["totals"]["cost_scenarios"]
    print(f"\n## 2. loopback batch run: starter suite --limit {limit}, model {LOOP_MODEL}, judge {LOOP_JUDGE}, "
          f"patient {LOOP_PATIENT} (all on 127.0.0.1), exit {code}, {wall:.0f} s")
    print(f"batches {counts[0]}: requests submitted {counts[1]}, answered {counts[2]}, failed {counts[3]}; live "
          f"calls {counts[4]} (conversation turns and the simulated patient); request bodies answered more than "
          f"once {counts[5]} (identical requests asked at the same moment, before either reply was cached)")
    print("| | planned (min-max, expected cost) | actual |\n|---|---|---|")
    print(f"| calls | {data['totals']['calls']['min']:,}-{data['totals']['calls']['max']:,} | {u['calls']:,} "
          f"({u['batch_calls']:,} batched, {u['cached_calls']:,} answered by the response cache: identical "
          f"requests within the run) |")
    print(f"| input tokens | {data['totals']['input_tokens']['min']:,}-{data['totals']['input_tokens']['max']:,} | "
          f"{u['input_tokens'] + u['batch_input_tokens']:,} ({u['batch_input_tokens']:,} batched) |")
    print(f"| output tokens | expected {data['totals']['output_tokens']['expected']:,} | "
          f"{u['output_tokens'] + u['batch_output_tokens']:,} ({u['batch_output_tokens']:,} batched) |")
    print(f"| cost (example rates) | live {money(scen['live']['expected'])}, batch {money(scen['batch']['expected'])} "
          f"| {money(u['cost'])} |")


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="openai/gpt-4o-mini")
    ap.add_argument("--judge", default="anthropic/claude-sonnet-4-5")
    ap.add_argument("--prices", default=str(ROOT / "examples" / "prices.toml"))
    ap.add_argument("--limit", type=int, default=2)
    a = ap.parse_args()
    print(f"# benchmarks/price.py on {platform.node()} {platform.machine()} {os.cpu_count()} cpus, Python "
          f"{platform.python_version()}, {time.strftime('%Y-%m-%d')}; prices: {a.prices} (an example, not fact)")
    with tempfile.TemporaryDirectory() as tmp:
        planned_prices(a.model, a.judge, a.prices, Path(tmp))
        loopback_batch_run(a.prices, a.limit, Path(tmp))


if __name__ == "__main__":
    main_()
