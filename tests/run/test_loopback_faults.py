"""The loopback server's random faults are drawn by content (tests/support/loopback_server.py): a request meets
the faults its seed, its body and its body's attempt number give it, whatever order concurrent requests arrive in,
so a run under faults is the same run each time."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from loopback_server import LoopbackServer

KINDS = ("429", "500", "cut", "html", "empty", "half_json")  # every kind but "hang", which waits
BODIES = [{"model": "m", "messages": [{"role": "user", "content": f"question {i}"}]} for i in range(6)]


def post(server: LoopbackServer, body: dict[str, Any]) -> None:
    request = urllib.request.Request(f"{server.base_url}/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Authorization": f"Bearer {server.api_key}",
                                              "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            response.read()
    except (urllib.error.URLError, ConnectionError, OSError):  # a fault answered it
        pass


def faults_by_content(order: list[int], seed: int = 3) -> dict[tuple[str, int], str | None]:
    """(the body's question, its attempt number) -> the fault it met, each body sent in `order`."""
    with LoopbackServer(fault_rate=0.5, fault_seed=seed, fault_kinds=KINDS, max_requests=len(order)) as server:
        for i in order:
            post(server, BODIES[i])
        seen: dict[str, int] = {}
        met = {}
        for record in server.chat_requests:
            question = record.last_user_text
            seen[question] = seen.get(question, 0) + 1
            met[(question, seen[question])] = server.faults.get(record.chat_number or 0)
    return met


FORWARD = [0, 1, 2, 3, 4, 5] * 3  # each body three times: its first, second and third attempts
BACKWARD = FORWARD[::-1]


def test_a_request_meets_the_same_fault_whatever_the_arrival_order() -> None:
    assert faults_by_content(FORWARD) == faults_by_content(BACKWARD)


def test_a_repeat_of_the_same_body_draws_afresh() -> None:
    met = faults_by_content(FORWARD)
    # were the attempt number not drawn from, each body would meet one fault (or none) on every attempt
    assert any(len({met[(f"question {i}", a)] for a in (1, 2, 3)}) > 1 for i in range(6))


def test_another_seed_draws_other_faults() -> None:
    assert faults_by_content(FORWARD, seed=3) != faults_by_content(FORWARD, seed=4)
