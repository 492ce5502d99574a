"""Issue 53.4: a judge reply is read up to a bound (`run.calls.judge_reply_capped`): an endpoint that ignores
max_tokens and answers megabytes is cut, and the cut is named once per judge."""

from __future__ import annotations

import pytest

from trustmh.run import calls


def test_a_reply_past_the_bound_is_cut_to_it() -> None:
    assert len(calls.judge_reply_capped("x" * 4_000_000, "j/cut-length", 100)) == 100 * calls.JUDGE_CHARS_PER_TOKEN


def test_a_reply_within_the_bound_is_kept_whole() -> None:
    assert calls.judge_reply_capped('{"score": 3}', "j/whole", 100) == '{"score": 3}'


def test_the_cut_is_named_once_per_judge_with_the_bound(capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(3):
        calls.judge_reply_capped("x" * 10_000, "j/said-once", 100)
    lines = capsys.readouterr().err.splitlines()
    assert lines == ["trustmh: judge j/said-once: a reply of 10,000 characters cut to 800 (its limit of 100 tokens × "
                     "8); the endpoint ignores max_tokens, and a cut reply is read as unparseable"]


# issue 53.4: a judge known dead (DEAD_AFTER calls in a row failed for good) is not asked again in the run
def test_a_judge_that_failed_for_good_twice_in_a_row_is_not_asked_again() -> None:
    watch = calls.JudgeWatch()
    for _ in range(calls.DEAD_AFTER):
        watch.failed("j/dead", "ConnectError")
    with pytest.raises(calls.ModelCallError, match=r"the judge \(j/dead\) is not asked: it failed for good 2 times"):
        watch.check("judge", "j/dead")


def test_an_answer_between_two_failures_keeps_the_judge_asked() -> None:
    watch = calls.JudgeWatch()
    watch.failed("j/flaky", "timeout")
    watch.answered("j/flaky")
    watch.failed("j/flaky", "timeout")
    assert watch.check("judge", "j/flaky") is None


def test_a_new_run_forgets_the_last_runs_dead_judges() -> None:
    watch = calls.JudgeWatch()
    with watch.watching():
        for _ in range(calls.DEAD_AFTER):
            watch.failed("j/was-dead", "ConnectError")
    with watch.watching():
        assert watch.check("judge", "j/was-dead") is None
