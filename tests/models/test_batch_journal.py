"""Batch mode through Inspect's OpenAI provider against the loopback Batch API (tests/support/batch_server.py):
a partly failed batch re-asks only its failed requests, an expired batch is submitted again (bounded), a
call not marked for batching goes live, and a run that stops with a batch in flight collects that batch when
it starts again instead of submitting its requests anew (the journal, trustmh.models.batch)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import BatchConfig, GenerateConfig, get_model

from batch_server import BatchServer
from trustmh.core import TrustmhError
from trustmh.inspect_compat import journaled_batches
from trustmh.models.batch import JOURNAL, BatchEnded, Journal, batching

QUESTIONS = ["one", "two", "three"]


def model(retries: int = 3, name: str = BatchServer.model_name()) -> Any:
    return get_model(name, memoize=False, config=GenerateConfig(
        batch=BatchConfig(size=len(QUESTIONS), send_delay=0.2, tick=0.1), max_retries=retries, seed=0,
        max_tokens=64))


async def ask_all(m: Any) -> list[str]:
    # the call's own retries: Inspect lets an earlier eval's retry settings reach a model's later calls
    config = GenerateConfig(max_retries=m.config.max_retries)
    with batching(True):
        outs = await asyncio.gather(*[m.generate(f"question {q}", config=config) for q in QUESTIONS])
    return [o.completion for o in outs]


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Any:
    def use(server: BatchServer) -> BatchServer:
        server.start()
        for k, v in server.env().items():
            monkeypatch.setenv(k, v)
        return server
    return use


def echo(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
    return f"answer to {messages[-1]['content']}"


@pytest.fixture(scope="module")
def partly_failed(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], BatchServer]:
    """One batch whose request "two" fails once, asked through the journal: its answers and the server. Inspect
    backs off for seconds before the retry, so the two tests below read one run instead of running it twice."""
    with pytest.MonkeyPatch.context() as patch, BatchServer(echo, fail_once=lambda b: "two" in str(b)) as server:
        for k, v in server.env().items():
            patch.setenv(k, v)
        with journaled_batches(tmp_path_factory.mktemp("journal")):
            answers = asyncio.run(ask_all(model()))
    return answers, server


@pytest.mark.slow  # Inspect's back-off before a retry: seconds
def test_a_partly_failed_batch_asks_again_only_its_failed_request(
        partly_failed: tuple[list[str], BatchServer]) -> None:
    answers, server = partly_failed
    assert answers == [f"answer to question {q}" for q in QUESTIONS]
    assert sorted(server.submitted_bodies.values()) == [1, 1, 2]


@pytest.mark.slow
def test_a_partly_failed_batch_answers_each_request_once(partly_failed: tuple[list[str], BatchServer]) -> None:
    assert partly_failed[1].twice() == {}


def test_an_expired_batch_is_not_submitted_again_in_its_run_whatever_the_retries(env: Any, tmp_path: Path) -> None:
    # issue 43.4: an expired batch used to be submitted again per retry (each paid); now its requests fail once
    # naming it, and the same command asks them in a new batch (`test_the_same_command_again_asks_the_rest...`)
    with env(BatchServer(echo, expire_batches=100)) as server, journaled_batches(tmp_path):
        answers = asyncio.run(ask_each(model(retries=3)))
    assert ([type(a).__name__ for a in answers], max(server.submitted_bodies.values())) == (["BatchEnded"] * 3, 1)


def test_a_call_not_marked_for_batching_goes_live_on_a_model_that_batches(env: Any, tmp_path: Path) -> None:
    with env(BatchServer(echo)) as server, journaled_batches(tmp_path):
        m = model()

        async def both() -> str:
            await ask_all(m)
            return (await m.generate("a live turn")).completion
        assert (asyncio.run(both()), len(server.live_bodies)) == ("answer to a live turn", 1)


def killed_with_batch_in_flight(env: Any, server: BatchServer, journal: Path, name: str = BatchServer.model_name()
                                ) -> None:
    """A first run whose process stops while its batch is at the provider (its tasks are cancelled, and
    nothing of its batcher survives: the second run builds a new model and a new batcher)."""
    async def first() -> None:
        task = asyncio.ensure_future(ask_all(model(name=name)))
        for _ in range(400):  # bounded: 20 s for the first batch to be journaled
            if (journal / JOURNAL).exists():
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("no batch was journaled")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with journaled_batches(journal):
        asyncio.run(first())


def test_a_restarted_run_collects_its_batch_in_flight_instead_of_submitting_again(env: Any,
                                                                                   tmp_path: Path) -> None:
    with env(BatchServer(echo, delay=1.0)) as server:
        killed_with_batch_in_flight(env, server, tmp_path)
        with journaled_batches(tmp_path):
            answers = asyncio.run(ask_all(model()))
    assert (answers, len(server.batches), server.twice()) == (
        [f"answer to question {q}" for q in QUESTIONS], 1, {})


def test_a_restarted_run_after_its_batch_finished_pays_nothing_again(env: Any, tmp_path: Path) -> None:
    with env(BatchServer(echo, delay=0.5)) as server:
        killed_with_batch_in_flight(env, server, tmp_path)
        while next(iter(server.batches.values())).status == "in_progress":  # the provider finishes it alone
            server._advance(next(iter(server.batches.values())))
        with journaled_batches(tmp_path):
            asyncio.run(ask_all(model()))
    assert (sum(server.answered_bodies.values()), sum(server.submitted_bodies.values())) == (3, 3)


CLAUDE = "anthropic/claude-sonnet-4-5"  # Inspect's Anthropic provider, pointed at the loopback (ANTHROPIC_BASE_URL)


@pytest.mark.slow
def test_anthropic_a_partly_failed_batch_asks_again_only_its_failed_request(env: Any, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    with env(BatchServer(echo, fail_once=lambda b: "two" in str(b))) as server, journaled_batches(tmp_path):
        answers = asyncio.run(ask_all(model(name=CLAUDE)))
    assert (answers, sorted(server.submitted_bodies.values())) == (
        [f"answer to question {q}" for q in QUESTIONS], [1, 1, 2])


def test_anthropic_a_restarted_run_collects_its_batch_in_flight(env: Any, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    with env(BatchServer(echo, delay=1.0)) as server:
        killed_with_batch_in_flight(env, server, tmp_path, name=CLAUDE)
        with journaled_batches(tmp_path):
            answers = asyncio.run(ask_all(model(name=CLAUDE)))
    assert (answers, len(server.batches), server.twice()) == (
        [f"answer to question {q}" for q in QUESTIONS], 1, {})


@pytest.mark.parametrize(("prompt_cache", "marked"), [(True, True), (False, False)])
def test_anthropic_prompt_caching_is_on_unless_turned_off(env: Any, prompt_cache: bool, marked: bool) -> None:
    pytest.importorskip("anthropic")
    from trustmh.models import batch

    with env(BatchServer(echo)) as server, pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "PROMPT_CACHE", prompt_cache)
        m = get_model(CLAUDE, memoize=False, config=GenerateConfig(max_tokens=64))
        asyncio.run(m.generate("a prompt", config=GenerateConfig(**batch.call_settings(CLAUDE))))
    (body,) = server.live_bodies
    assert ("cache_control" in body) is marked


# issue 43.4: a garbage journal is one line naming it and the way out, never a UnicodeDecodeError
def test_a_journal_that_is_not_text_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / JOURNAL).write_bytes(b'{"batch": "b1"}\n\xf9\xfa garbage\n')
    with pytest.raises(TrustmhError, match=rf"^{re.escape(str(tmp_path / JOURNAL))}: byte 0xf9 at offset 16 .*"
                       r"move it aside"):
        Journal.open(tmp_path)


def test_a_journal_with_a_garbage_line_before_the_last_is_refused(tmp_path: Path) -> None:
    (tmp_path / JOURNAL).write_text('not json\n{"batch": "b1"}\n')
    with pytest.raises(TrustmhError, match="line 1 is not a journal entry"):
        Journal.open(tmp_path)


def test_a_journal_whose_last_line_was_cut_still_opens(tmp_path: Path) -> None:
    (tmp_path / JOURNAL).write_text('{"batch": "b1", "model": "m"}\n{"batch": "b2", "mo')
    assert list(Journal.open(tmp_path).batches) == ["b1", "b2"]


# issue 53.1: the cut line's batch and the request pairs before the tear are kept, marked for a look-up at the
# provider, and a line says so
def test_a_cut_journal_line_keeps_its_batch_and_the_requests_before_the_tear(tmp_path: Path) -> None:
    line = json.dumps({"batch": "b2", "model": "m", "requests": {"r1": "a" * 64, "r2": "b" * 64}})
    (tmp_path / JOURNAL).write_text(line[: line.index("r2") + 10])
    assert Journal.open(tmp_path).batches["b2"] == {"batch": "b2", "model": "m", "torn": True,
                                                    "requests": {"r1": "a" * 64}}


def test_a_cut_journal_line_is_said_naming_the_journal_and_the_batch(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / JOURNAL).write_text('{"batch": "b2", "mo')
    Journal.open(tmp_path)
    assert f"{tmp_path / JOURNAL} line 1 was cut (a kill mid-write): batch b2 is looked up" in capsys.readouterr().err


def test_a_journal_line_cut_before_its_batch_id_says_its_requests_are_asked_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / JOURNAL).write_text('{"bat')
    Journal.open(tmp_path)
    assert "cut before its batch id" in capsys.readouterr().err


# issue 53.1: SIGKILL with a batch in flight and the journal's line cut in half: the same command finds the batch at
# the provider by its id and submits none of its requests again
def test_a_cut_journal_line_is_looked_up_at_the_provider_and_nothing_is_submitted_twice(
        env: Any, tmp_path: Path) -> None:
    with env(BatchServer(echo, delay=1.0)) as server:
        killed_with_batch_in_flight(env, server, tmp_path)
        data = (tmp_path / JOURNAL).read_bytes()
        (tmp_path / JOURNAL).write_bytes(data[: len(data) // 2])
        with journaled_batches(tmp_path):
            answers = asyncio.run(ask_all(model()))
    assert (answers, len(server.batches), max(server.submitted_bodies.values())) == (
        [f"answer to question {q}" for q in QUESTIONS], 1, 1)


# issue 43.4: a result file that cannot be read is paid once: the requests left without an answer are asked live,
# once each, never submitted again per retry
def _cut_second_line(data: bytes) -> bytes:
    lines = data.splitlines(keepends=True)
    return b"".join(lines[:1] + [lines[1][: len(lines[1]) // 2] + b"\n"] + lines[2:])


def _no_choices(data: bytes) -> bytes:
    rows = [json.loads(line) for line in data.splitlines()]
    for row in rows:
        row["response"]["body"].pop("choices")
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _unknown_ids(data: bytes) -> bytes:
    rows = [json.loads(line) for line in data.splitlines()]
    rows[0]["custom_id"] = "nobody-asked"
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


DAMAGES = {"lines cut in half": _cut_second_line, "bodies without choices": _no_choices,
           "file cut short": lambda data: data[: len(data) // 3], "unknown custom_ids": _unknown_ids}


@pytest.fixture(scope="module", params=list(DAMAGES))
def damaged_batch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        server = BatchServer(echo, damage_output=DAMAGES[request.param]).start()
        for k, v in server.env().items():
            mp.setenv(k, v)
        with server, journaled_batches(tmp_path_factory.mktemp("damaged")):
            answers = asyncio.run(ask_all(model(retries=1)))
    return answers, server


def test_a_damaged_result_file_still_answers_every_request(damaged_batch: Any) -> None:
    assert damaged_batch[0] == [f"answer to question {q}" for q in QUESTIONS]


def test_a_damaged_result_file_submits_each_request_once(damaged_batch: Any) -> None:
    assert sorted(damaged_batch[1].submitted_bodies.values()) == [1, 1, 1]


def test_a_damaged_result_file_answers_each_request_at_most_once_more(damaged_batch: Any) -> None:
    server = damaged_batch[1]
    paid = server.answered_bodies + server.live_bodies
    assert max(paid.values()) <= 2


def test_a_journaled_batch_the_provider_does_not_know_is_named_before_submitting(
        env: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with env(BatchServer(echo)) as server:
        label = f"openai {server.base_url}/"
        (tmp_path / JOURNAL).write_text(json.dumps({"batch": "batch_lost", "model": label,
                                                    "requests": {"r1": "0" * 64}}) + "\n")
        with journaled_batches(tmp_path):
            asyncio.run(ask_all(model()))
    assert "trustmh: batch batch_lost of the journal" in capsys.readouterr().err


# issue 43.4: a batch that ends as a whole at the provider (failed, expired, cancelled) keeps what it answered;
# every other request fails once with one line naming the batch, the journal and what to do, and is never
# submitted again in this run (a sample's retry fails at once); the same command again asks them in a new batch
async def ask_each(m: Any, questions: list[str] = QUESTIONS) -> list[Any]:
    config = GenerateConfig(max_retries=m.config.max_retries)
    with batching(True):
        outs = await asyncio.gather(*[m.generate(f"question {q}", config=config) for q in questions],
                                    return_exceptions=True)
    return [o if isinstance(o, BaseException) else o.completion for o in outs]


async def ask_then_retry(m: Any) -> tuple[list[Any], list[Any]]:
    """Every question, then (in the same event loop, as a sample's retry is) the ones that failed."""
    first = await ask_each(m)
    return first, await ask_each(m, [q for q, a in zip(QUESTIONS, first, strict=True) if not isinstance(a, str)])


def _ended_then_asked_again(env: Any, tmp_path: Path, status: str, answered: int, name: str) -> Any:
    """A batch ending as a whole with `status` after `answered` answers; its requests asked again in the same
    process (a sample's retry); then the same command again (a new batcher reading the journal)."""
    with env(BatchServer(echo, end_batches=1, end_status=status, answered_before_end=answered)) as server:
        with journaled_batches(tmp_path):
            first, retried = asyncio.run(ask_then_retry(model(name=name)))
        submitted_in_run = dict(server.submitted_bodies)
        with journaled_batches(tmp_path):
            again = asyncio.run(ask_each(model(name=name)))
    return first, retried, submitted_in_run, again, server


ENDINGS = [("openai cancelled", "cancelled", 1, BatchServer.model_name()),
           ("openai expired", "expired", 1, BatchServer.model_name()),
           ("openai failed", "failed", 0, BatchServer.model_name()),
           ("anthropic canceled", "cancelled", 1, "anthropic/claude-sonnet-4-5"),
           ("anthropic all errored", "failed", 0, "anthropic/claude-sonnet-4-5")]


@pytest.fixture(scope="module", params=ENDINGS, ids=[e[0] for e in ENDINGS])
def ended_batch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    label, status, answered, name = request.param
    if name.startswith("anthropic"):
        pytest.importorskip("anthropic")
    tmp = tmp_path_factory.mktemp("ended")
    with pytest.MonkeyPatch.context() as mp:
        def use(server: BatchServer) -> BatchServer:
            server.start()
            for k, v in server.env().items():
                mp.setenv(k, v)
            return server
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            got = _ended_then_asked_again(use, tmp, status, answered, name)
    return (*got, err.getvalue(), tmp, answered)


def test_an_ended_batch_keeps_what_it_answered(ended_batch: Any) -> None:
    first, answered = ended_batch[0], ended_batch[-1]
    assert [a for a in first if isinstance(a, str)] == [f"answer to question {q}" for q in QUESTIONS[:answered]]


def test_an_ended_batch_fails_the_rest_with_one_line_naming_batch_and_journal(ended_batch: Any) -> None:
    first, tmp = ended_batch[0], ended_batch[-2]
    errors = {str(a) for a in first if not isinstance(a, str)}
    (line,) = errors
    assert re.match(rf"^batch \w+_1 \w+.* at the provider: .*journal {re.escape(str(tmp / JOURNAL))}\); run the "
                    "same command again", line)


# issue 53.1: each unanswered request fails with its own error, first time and on retry: one instance raised by every
# request grew its traceback per raise, and Inspect's rendering of it held the run's event loop (the expired hang)
def test_each_request_an_ended_batch_left_fails_with_an_error_of_its_own(ended_batch: Any) -> None:
    raised = [a for a in ended_batch[0] + ended_batch[1] if isinstance(a, BaseException)]
    assert len({id(e) for e in raised}) == len(raised) > 0


def test_an_ended_batch_is_said_once_on_stderr(ended_batch: Any) -> None:
    assert ended_batch[5].count("trustmh: batch ") == 1


def test_a_retry_in_the_same_run_submits_nothing_again(ended_batch: Any) -> None:
    retried, submitted_in_run = ended_batch[1], ended_batch[2]
    assert (sum(isinstance(a, BatchEnded) for a in retried), max(submitted_in_run.values())) == (
        len(QUESTIONS) - ended_batch[-1], 1)


def test_the_same_command_again_asks_the_rest_in_a_new_batch(ended_batch: Any) -> None:
    assert ended_batch[3] == [f"answer to question {q}" for q in QUESTIONS]


def test_no_request_is_answered_twice_across_the_two_runs(ended_batch: Any) -> None:
    server = ended_batch[4]
    assert (server.twice(), max(server.submitted_bodies.values())) == ({}, 2)


# issue 53.1: a batch still unfinished after --batch-timeout ends the wait: every request fails with one line naming
# the batch and the way out, and the batch stays in the journal uncollected, so the same command collects it
@pytest.fixture(scope="module")
def overdue_batch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from trustmh.models import batch as batch_module

    tmp = tmp_path_factory.mktemp("overdue")
    with pytest.MonkeyPatch.context() as mp, BatchServer(echo, delay=60.0) as server:
        for k, v in server.env().items():
            mp.setenv(k, v)
        mp.setattr(batch_module, "ACTIVE", batch_module.BatchMode(timeout=1.0))
        import contextlib
        import io
        import time
        err = io.StringIO()
        started = time.monotonic()
        with journaled_batches(tmp), contextlib.redirect_stderr(err):
            answers = asyncio.run(ask_each(model(name="openai/gpt-4o-overdue")))
        seconds = time.monotonic() - started
    return answers, err.getvalue(), seconds, Journal.open(tmp)


def test_an_overdue_batch_fails_each_request_with_batch_ended(overdue_batch: Any) -> None:
    assert [type(a) for a in overdue_batch[0]] == [BatchEnded] * len(QUESTIONS)


def test_an_overdue_batch_ends_the_wait_within_seconds_of_the_timeout(overdue_batch: Any) -> None:
    assert overdue_batch[2] < 8


def test_an_overdue_batch_is_one_line_saying_the_same_command_collects_it(overdue_batch: Any) -> None:
    lines = [x for x in overdue_batch[1].splitlines() if "still unfinished after --batch-timeout 1 s" in x]
    assert len(lines) == 1 and "run the same command again to collect the batch from the provider" in lines[0]


def test_an_overdue_batch_stays_uncollected_in_the_journal(overdue_batch: Any) -> None:
    assert [e.get("files") for e in overdue_batch[3].batches.values()] == [None]
