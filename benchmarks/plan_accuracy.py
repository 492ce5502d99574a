"""`trustmh plan` against what the run then asks: planned and actual calls, input tokens and wall time, per role,
for a canned run of every pillar against the loopback server (fixed latency): the starter suite, then
MentalBench on its starter contexts (`--suite mentalbench -O mentalbench_starter=1`).

    python benchmarks/plan_accuracy.py [--limit 2] [--latency 0.05] [--max-connections 4]

The model under test answers every prompt with the same short paragraph (so sub-tasks that expect a format
re-ask it: the actual calls fall between the plan's minimum and maximum), the judge with one JSON object the
judges accept, the simulated patient with a sentence. The server counts input tokens with the plan's own
tokenizer (`trustmh.run.tokens.Tokenizer`), so the comparison measures the plan, not two tokenizers. Planned wall
time assumes the server's latency per call; actual wall time is the span of the run's calls.
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
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "support"))  # the loopback server is a test helper

from loopback_server import LoopbackServer, message_text  # noqa: E402
from trustmh.cli import main  # noqa: E402
from trustmh.run.tokens import Tokenizer  # noqa: E402

REPLY = ("I'm sorry you're going through this; it sounds exhausting. It could help to talk it over with someone "
         "you trust, and a counsellor or doctor can support you further. What feels hardest right now?")
PATIENT = "I don't know, it's just been a lot lately and I can't really sleep."


def judge_reply(prompt: str) -> str:
    if '"refused"' in prompt:
        return '{"label": "safe_redirect", "helpful": 1, "rationale": "ok"}'
    if '"comprehensiveness"' in prompt:  # the CPsyCoun scales (safety 0-1, not 1-5)
        return '{"comprehensiveness": 2, "professionalism": 2, "authenticity": 2, "safety": 1, "rationale": "ok"}'
    return json.dumps({"label": 0, "rationale": "ok", "appropriateness": 4, "risk_check": True,
                       "resources_offered": True, "professional_help": True, "followup": True, "explanation": "ok",
                       "empathy": 4, "helpfulness": 4, "safety": 5, "fluency": 5, "risk_asked": True,
                       "resources": True, "human_escalation": True, "escalates": 1, "toxicity": 0,
                       "asker_wrong": 0, "endorses": 0, "leak": 0, "severity": 0, "addressed_utterance": "",
                       "evidence": "ok", "comprehensiveness": 2, "professionalism": 2, "authenticity": 2,
                       "sc1": 4, "sc2": 4, "sc3": 4, "sc4": 4, "sc5": 4, "confirmation": 0, "harm_enablement": 0,
                       "safety_intervention": True, "impersonation": False, "clinical_accuracy": 5,
                       "ethical_conduct": 5, "assessment_and_response": 5, "therapeutic_alliance": 5,
                       "ai_communication": 5, "discloses_ai": True, "claims_human": False,
                       "claims_credentials": False, "states_limits": True, "romantic_or_sexual": False,
                       "crisis_resource": True, "trusted_adult": True, "Guidance": 4, "Informativeness": 4,
                       "Relevance": 4, "Safety": 5, "Empathy": 4, "Helpfulness": 4, "Understanding": 4,
                       "Explanation": "ok"})


def respond(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    model = request.get("model")
    if model == "judge":
        return judge_reply(message_text(messages[-1]))
    if model == "patient":
        return PATIENT
    return REPLY


# (name, arguments) of each pass: the starter suite has every pillar but MentalBench, which has its own suite
PASSES = [("starter", ["--suite", "starter", "--patient", "openai-api/loop/patient"]),
          ("mentalbench", ["--suite", "mentalbench", "-O", "mentalbench_starter=1"])]


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--limit", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--max-connections", type=int, default=4)
    a = ap.parse_args()
    tok = Tokenizer("openai-api/loop/mut")
    with tempfile.TemporaryDirectory() as tmp, LoopbackServer(
            respond, max_requests=20000, max_seconds=3000, latency=a.latency, prompt_tokens=tok.prompt_tokens,
            completion_tokens=tok.count) as server:
        os.environ.update(server.env())
        common = ["--model", server.model_name("mut"), "--judge", server.model_name("judge"), "--limit", str(a.limit), "--n-boot", "200",
                  "--max-connections", str(a.max_connections), "--latency", str(a.latency),
                  "--expect-reply-tokens", str(tok.count(REPLY))]
        plans, results, codes, spans, walls = [], [], [], [], []
        for name, suite in PASSES:
            seen = len(server.completed())
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(["plan", *common, *suite, "--out", f"{tmp}/{name}-plan"]) == 0
            plans.append(json.loads(Path(f"{tmp}/{name}-plan/plan.json").read_text()))
            started = time.monotonic()
            codes.append(main(["run", *common, *suite, "--out", f"{tmp}/{name}", "--display", "none", "--no-cache"]))
            walls.append(time.monotonic() - started)
            done = server.completed()[seen:]
            spans.append((max(r.finished or 0 for r in done) - min(r.started for r in done)) if done else 0.0)
            results.append(json.loads(Path(f"{tmp}/{name}/results.json").read_text()))
        usage = list(server.usage)
    planned: dict[str, Counter[str]] = {k: Counter() for k in ("min", "max", "in_min", "in_max")}
    for sub in (s for plan in plans for s in plan["subtasks"].values()):
        for row in sub["roles"]:
            who = row["model"].rsplit("/", 1)[-1]
            planned["min"][who] += row["calls"]["min"]
            planned["max"][who] += row["calls"]["max"]
            planned["in_min"][who] += row["input_tokens"]["min"]
            planned["in_max"][who] += row["input_tokens"]["max"]
    calls = Counter(m for m, _, _ in usage)
    tokens: Counter[str] = Counter()
    for m, p, _ in usage:
        tokens[m] += p
    print(f"# plan accuracy: every pillar (starter suite + MentalBench starter), --limit {a.limit}, loopback "
          f"latency {a.latency}s, --max-connections {a.max_connections}; run exits {codes}")
    print(f"# {platform.node()} {platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d')}")
    print(f"{'role':<9} {'calls planned':>15} {'actual':>7} {'input planned':>19} {'actual':>9} {'error vs min':>13}")
    for who in sorted(set(calls) | set(planned["min"])):
        err = (planned["in_min"][who] - tokens[who]) / tokens[who] * 100 if tokens[who] else float("nan")
        print(f"{who:<9} {planned['min'][who]:>7}-{planned['max'][who]:<7} {calls[who]:>7} "
              f"{planned['in_min'][who]:>9}-{planned['in_max'][who]:<9} {tokens[who]:>9} {err:>12.1f}%")
    lo = sum(p["wall_seconds"]["min"] for p in plans)
    hi = sum(p["wall_seconds"]["max"] for p in plans)
    print(f"wall time: planned {lo:.1f}-{hi:.1f} s; actual span of calls {sum(spans):.1f} s "
          f"(whole commands {sum(walls):.1f} s)")
    print("re-asks (actual calls above the planned minimum), per sub-task and role:")
    for res in results:
        for sid, rows in res["usage"]["subtasks"].items():
            for row in rows:
                p = row.get("planned")
                if p and row["calls"] != p["calls"]["min"]:
                    inside = p["calls"]["min"] <= row["calls"] <= p["calls"]["max"]
                    print(f"  {sid:<38} {row['role']:<8} {row['calls']:>4} of {p['calls']['min']}-"
                          f"{p['calls']['max']}{'' if inside else '  OUTSIDE THE PLANNED RANGE'}")


if __name__ == "__main__":
    main_()
