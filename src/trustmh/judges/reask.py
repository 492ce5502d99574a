"""The one judge re-ask loop, used by live runs, offline runs, conversations and rescoring.

A judge reply that does not validate (`JudgeRequest.validate`) is asked again with the same request, up to
`MAX_ATTEMPTS` attempts in all. The last reply is kept even when it is still invalid: the sub-task's scorer
then counts it as invalid (never dropped, never a pass). `ask(attempt)` receives the attempt number so that a
caller with a response cache can give every attempt its own cache entry (a cached invalid reply must not come
back on the re-ask).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

from trustmh.core import MAX_ATTEMPTS

T = TypeVar("T")


async def ask_until_valid(ask: Callable[[int], Awaitable[str]], validate: Callable[[str], bool]) -> str:
    """Ask (attempt 1, 2, …) until the reply validates or MAX_ATTEMPTS are spent; return the last reply."""
    text = ""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        text = await ask(attempt)
        if validate(text):
            break
    return text


def ask_until_valid_sync(ask: Callable[[int], str], validate: Callable[[str], bool]) -> str:
    """The same loop for a plain (synchronous) judge function."""

    async def ask_async(attempt: int) -> str:
        return ask(attempt)

    return run_without_loop(ask_until_valid(ask_async, validate))


def run_without_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine that never suspends (its awaits are plain functions) to its result, without an event
    loop, so that synchronous callers work inside or outside a running loop."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    raise RuntimeError("run_without_loop: the coroutine suspended; use an event loop")
