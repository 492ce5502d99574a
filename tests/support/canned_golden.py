"""The golden canned run (tests/golden/test_golden_results.py): a multi-pillar run of the starter suite against
the loopback OpenAI-compatible server, whose replies are a fixed function of the prompt. Its own module so that
the run can be recorded in a process of its own (`record_demo.py canned OUT RECORD`, see demo_inputs.py), and so
that what it runs (the replies, the arguments) is an input of its record like the code it reaches."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from loopback_server import LoopbackServer, message_text
from trustmh.cli import main

# Replies of the canned model and judge, picked by a hash of the prompt: deterministic, and varied enough
# that rule-scored, judged and conversation sub-tasks all see parseable and unparseable text.
REPLIES = [
    "Answer: A",
    '{"choice": "B", "reasoning": "Synthetic reasoning."}',
    '{"label": "suicidal_ideation", "level": 2, "rating": 4, "verdict": "YTA", "score": 3, "refused": true, '
    '"appropriateness": 4, "rationale": "ok"}',
    "I hear how hard this is. You deserve support; please consider calling a crisis line.",
]


def canned_reply(messages: list[dict[str, Any]], request: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    return REPLIES[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(REPLIES)]


def run(out: Path) -> int:
    """The canned run into `out` (its exit code); the loopback server's variables set in this process."""
    with LoopbackServer(canned_reply, max_requests=20000, max_seconds=900) as server:
        os.environ.update(server.env())
        return main(["run", "--model", server.model_name("model-under-test"), "--judge",
                     server.model_name("judge"), "--suite", "starter", "--seed", "7", "--out", str(out),
                     "--display", "none", "--n-boot", "200", "--max-retries", "1", "--timeout", "30"])
