"""Inspect's warnings and markup kept out of trustmh's messages (issue 42): a missing API key is one plain line
naming the variable (exit 2, before any call), and Inspect's warning about retry_immediate, which trustmh's
choice of no task-level retries provokes, never reaches the console."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from trustmh import exit_codes
from trustmh.cli import main
from trustmh.inspect_compat import forget_models, inspect_error_line, plain_text, quiet_inspect_warnings

KEYS = ("OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_BASE_URL")


def test_markup_becomes_plain_text() -> None:
    assert plain_text("No [bold][blue]OPENAI_API_KEY[/blue][/bold] defined.") == "No OPENAI_API_KEY defined."


def test_inspects_lines_become_one() -> None:
    assert plain_text("ERROR: Unable to initialise the client\n\nNo key defined.") == \
        "Unable to initialise the client: No key defined."


def test_brackets_that_are_not_markup_stay() -> None:
    assert plain_text("expected [1, 2] here") == "expected [1, 2] here"


def test_an_error_not_inspects_is_left_to_the_handler() -> None:
    assert inspect_error_line(ValueError("[bold]x[/bold]")) is None


@pytest.fixture
def missing_key(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`trustmh run --model openai/gpt-4o-mini --limit 1` with no OpenAI key set: (exit code, error lines)."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    forget_models()  # a model another test built under this name would carry that test's key and server
    code = main(["run", "--model", "openai/gpt-4o-mini", "--limit", "1", "--suite", "starter", "--subtasks",
                 "crisis/crisis_identification", "--no-judge", "--out", str(tmp_path / "run")])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("trustmh: error")]
    return code, "\n".join(errors)


def test_a_missing_key_could_not_run(missing_key: tuple[int, str]) -> None:
    assert missing_key[0] == exit_codes.COULD_NOT_RUN


def test_a_missing_key_is_named_in_plain_text(missing_key: tuple[int, str]) -> None:
    assert missing_key[1].startswith("trustmh: error: Unable to initialise OpenAI client: No OPENAI_API_KEY, ")


def test_a_missing_key_shows_no_markup(missing_key: tuple[int, str]) -> None:
    assert "[bold]" not in missing_key[1] and "[/" not in missing_key[1]


def test_a_missing_key_is_one_error_line(missing_key: tuple[int, str]) -> None:
    assert len(missing_key[1].splitlines()) == 1


def test_a_missing_key_shows_no_exception_name(missing_key: tuple[int, str]) -> None:
    assert "PrerequisiteError" not in missing_key[1]


def test_the_retry_immediate_warning_is_kept_quiet(caplog: pytest.LogCaptureFixture) -> None:
    # the message and logger of Inspect's eval_set (inspect_ai/_eval/evalset.py) when retry_attempts=0
    with caplog.at_level(logging.WARNING), quiet_inspect_warnings():
        logging.getLogger("inspect_ai._eval.evalset").warning(
            "retry_immediate=True has no effect when retry_attempts=0; no task-level retries will be performed.")
    assert caplog.records == []


def test_other_inspect_warnings_still_pass(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), quiet_inspect_warnings():
        logging.getLogger("inspect_ai._eval.evalset").warning("a log directory is dirty")
    assert [r.getMessage() for r in caplog.records] == ["a log directory is dirty"]


def test_the_quiet_ends_with_the_block(caplog: pytest.LogCaptureFixture) -> None:
    with quiet_inspect_warnings():
        pass
    with caplog.at_level(logging.WARNING):
        logging.getLogger("inspect_ai._eval.evalset").warning("retry_immediate=True has no effect")
    assert len(caplog.records) == 1
