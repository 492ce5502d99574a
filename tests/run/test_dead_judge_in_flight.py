"""Issue 48: a judge declared dead (`run.calls.JudgeWatch`) while calls of it are in flight sends them no retry: the
watch is checked before each attempt Inspect sends (`inspect_compat.checked_before_each_attempt`), not only when a
call starts.

The judge is an in-process provider that fails every attempt with an error Inspect retries, at once (no back-off):
two calls answer their attempts straight away and use up their retries, which declares the judge dead; every
other call that holds a connection has its first attempt held until then, and fails after it; the rest wait for
a connection. Without the per-attempt check each held call would go through Inspect's retries (`max_retries`
more requests each) and each waiting call would send its first attempt once a connection frees.
"""

from __future__ import annotations

import asyncio
import contextvars
from dataclasses import dataclass, field
from typing import Any

import pytest
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, get_model, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo
from tenacity.wait import wait_none

from trustmh.core import JudgeRequest, RunContext
from trustmh.inspect_compat import safe_replies
from trustmh.run.calls import JUDGE_WATCH, JudgeNotAsked, ModelCallError, judge_once

JUDGE = "dead_judge_in_flight/j"
CALLS = 16
CONNECTIONS = 8  # fewer than the calls: some wait for a connection when the judge is declared dead
FIRST_TO_FAIL = 2  # `calls.DEAD_AFTER`: the calls that fail for good first, and make the judge dead
MAX_RETRIES = 3


class JudgeDown(Exception):
    """What the dead judge answers every attempt with (retried by Inspect, like a 503)."""


@dataclass
class Sent:
    """The requests the judge was sent: each one's prompt, and how many came when the judge was known dead."""

    prompts: list[str] = field(default_factory=list)
    after_death: int = 0


SENT = Sent()


def dead() -> bool:
    return JUDGE in JUDGE_WATCH.dead


def held_in_flight() -> int:
    return sum(p.startswith("held") for p in SENT.prompts)


class DeadJudgeAPI(ModelAPI):
    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        super().__init__(model_name=model_name, base_url=None, api_key=None, config=config or GenerateConfig())

    def should_retry(self, ex: Exception) -> bool:
        return isinstance(ex, JudgeDown)

    def retry_wait(self) -> Any:
        return wait_none()

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        prompt = input[-1].text
        SENT.prompts.append(prompt)
        SENT.after_death += dead()
        # the first two calls fail once every other call holding a connection is in flight; those are held until
        # the first two have used up their retries
        while not (dead() if prompt.startswith("held") else held_in_flight() == CONNECTIONS - FIRST_TO_FAIL):
            await asyncio.sleep(0.001)
        raise JudgeDown("503 (the judge is down)")


@modelapi(name="dead_judge_in_flight")
def dead_judge_in_flight() -> type[ModelAPI]:
    return DeadJudgeAPI


def request(name: str) -> JudgeRequest:
    return JudgeRequest(name=name, prompt=f"{name}: rate the reply", validate=lambda text: True, json=False)


async def ask_concurrently() -> list[BaseException | str]:
    # memoize=False: built inside `safe_replies`, whose relay on the provider's generate asks the watch
    model = get_model(JUDGE, memoize=False, config=GenerateConfig(max_connections=CONNECTIONS))
    ctx = RunContext(timeout=5, max_retries=MAX_RETRIES, cache=False)
    first = [judge_once(model, request(f"first {i}"), ctx, attempt=1) for i in range(FIRST_TO_FAIL)]
    held = [judge_once(model, request(f"held {i}"), ctx, attempt=1) for i in range(CALLS - FIRST_TO_FAIL)]
    # started in this order, so the first two hold a connection
    return await asyncio.gather(*first, *held, return_exceptions=True)


def ask_in_a_clean_context() -> list[BaseException | str]:
    with safe_replies(), JUDGE_WATCH.watching():
        return asyncio.run(ask_concurrently())


@pytest.fixture(scope="module")
def outcomes() -> list[BaseException | str]:
    # a fresh context: an Inspect eval run directly by an earlier test of this worker leaves its generate config
    # active, and its max_connections would replace this judge's 8 (seen in CI: 3 connections, 1 held call)
    return contextvars.Context().run(ask_in_a_clean_context)


def test_no_request_is_sent_once_the_judge_is_declared_dead(outcomes: list[BaseException | str]) -> None:
    assert SENT.after_death == 0


def test_the_calls_that_made_it_dead_were_asked_with_every_retry(outcomes: list[BaseException | str]) -> None:
    assert sum(p.startswith("first") for p in SENT.prompts) == FIRST_TO_FAIL * (MAX_RETRIES + 1)


def test_only_the_held_calls_in_flight_sent_their_first_attempt(outcomes: list[BaseException | str]) -> None:
    assert held_in_flight() == CONNECTIONS - FIRST_TO_FAIL


def test_every_call_fails_naming_the_judge(outcomes: list[BaseException | str]) -> None:
    assert all(isinstance(o, ModelCallError) and JUDGE in str(o) for o in outcomes)


def test_every_call_but_the_first_two_is_stopped_as_not_asked(outcomes: list[BaseException | str]) -> None:
    assert sum(isinstance(o, JudgeNotAsked) for o in outcomes) == CALLS - FIRST_TO_FAIL
