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
