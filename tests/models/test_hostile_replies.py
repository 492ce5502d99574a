"""Hostile text never costs more than its own sample (issue 43.3): a product reply carrying a lone surrogate
among control characters (valid JSON, not writable as UTF-8) is kept as cleaned text, its conversation counts
as invalid, and the sub-task is still computed."""

from __future__ import annotations

import itertools
import json

import pytest

from chatbot_server import TOKEN, ChatbotServer
from loopback_server import LoopbackServer
from trustmh.cli import main
from trustmh.safe_text import REPLACEMENT, as_text, safe_text, unusable

HOSTILE = "ok \x00\x01\ud800\x1b[2J"


def test_safe_text_replaces_a_lone_surrogate() -> None:
    assert safe_text("a\ud800b") == f"a{REPLACEMENT}b"


def test_safe_text_replaces_control_characters_but_keeps_line_breaks() -> None:
    assert safe_text("a\x00\x1b\tb\nc\r") == f"a{REPLACEMENT}{REPLACEMENT}\tb\nc\r"


def test_safe_text_output_encodes_as_utf8() -> None:
    assert safe_text(HOSTILE).encode("utf-8")


def test_plain_text_is_usable() -> None:
    assert not unusable(safe_text("Please call 911 now."))


def test_list_content_becomes_text() -> None:
    assert as_text([{"type": "text", "text": "one"}, "two", {"type": "image"}]) == "one\ntwo"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict]:
    tmp = tmp_path_factory.mktemp("hostile")
    calls = itertools.count()

    def respond(history: list[dict[str, str]], system: str) -> str:
        # the product's very first reply is hostile; every other one is an ordinary referral
        return HOSTILE if next(calls) == 0 else "That sounds hard. Please call 911 if anyone is in danger."

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ACME_AUTH", TOKEN)
        with ChatbotServer(respond=respond) as server:
            endpoint = server.endpoint_file(tmp / "acme.toml")
            code = main(["run", "--model", "http/acme", "--endpoint", str(endpoint), "--subtasks", "harm_to_others",
                         "--limit", "3", "--no-judge", "--out", str(tmp / "out"), "--display", "none",
                         "--timeout", "10", "--max-retries", "1", "--n-boot", "200", "--max-connections", "1"])
    return code, json.loads((tmp / "out" / "results.json").read_text())


@pytest.mark.slow  # its module fixture is a whole run against the hostile provider (about 5 s of CPU): end-to-end
def test_hostile_reply_run_exits_zero(hostile_run: tuple[int, dict]) -> None:
    assert hostile_run[0] == 0


@pytest.mark.slow  # its module fixture is a whole run against the hostile provider (about 5 s of CPU): end-to-end
def test_hostile_reply_subtask_is_computed(hostile_run: tuple[int, dict]) -> None:
    assert hostile_run[1]["subtasks"]["conversation/harm_to_others"]["status"] == "ok"


@pytest.mark.slow  # its module fixture is a whole run against the hostile provider (about 5 s of CPU): end-to-end
def test_hostile_reply_costs_its_own_conversation_only(hostile_run: tuple[int, dict]) -> None:
    assert hostile_run[1]["subtasks"]["conversation/harm_to_others"]["n_invalid"] == 1


@pytest.fixture(scope="module")
def hostile_inspect_provider(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same reply from one of Inspect's own providers (`openai-api`), whose output Inspect logs itself."""
    tmp = tmp_path_factory.mktemp("hostile_openai")
    with LoopbackServer(lambda messages, request: HOSTILE, max_requests=200) as server, \
            pytest.MonkeyPatch.context() as mp:
        for key, value in server.env().items():
            mp.setenv(key, value)
        main(["run", "--model", server.model_name("m"), "--subtasks", "harm_to_others", "--limit", "2",
              "--no-judge", "--out", str(tmp / "out"), "--display", "none", "--timeout", "10",
              "--max-retries", "1", "--n-boot", "200"])
    return json.loads((tmp / "out" / "results.json").read_text())["subtasks"]["conversation/harm_to_others"]


def test_inspect_provider_hostile_replies_reach_the_results(hostile_inspect_provider: dict) -> None:
    # every reply is hostile, so every rating is invalid: the sub-task reports its worst case and says every
    # reply was unusable (issue 52's rule), never lost to a serialisation error
    assert any(note.startswith("every reply unusable") for note in hostile_inspect_provider["notes"])


def test_inspect_provider_hostile_replies_are_invalid(hostile_inspect_provider: dict) -> None:
    assert hostile_inspect_provider["n_invalid"] == 2


@pytest.fixture(scope="module")
def numbers_reply_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, str]:
    """An OpenAI-compatible server whose every reply's content is a list of numbers (`content: [1, 2]`); a model
    name of its own, as Inspect keeps the models it built (with the other fixture's server address) by name."""
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("numbers")
    err = io.StringIO()
    with LoopbackServer(lambda messages, request: [1, 2], max_requests=200) as server, \
            pytest.MonkeyPatch.context() as mp, contextlib.redirect_stderr(err):
        for key, value in server.env().items():
            mp.setenv(key, value)
        code = main(["run", "--model", server.model_name("numbers"), "--subtasks", "harm_to_others", "--limit", "2",
                     "--no-judge", "--out", str(tmp / "out"), "--display", "none", "--timeout", "10",
                     "--max-retries", "1", "--n-boot", "200"])
    results = json.loads((tmp / "out" / "results.json").read_text())["subtasks"]["conversation/harm_to_others"]
    return code, results, err.getvalue()


# issue 53: a reply whose content is a list of numbers was a TypeError inside Inspect's parsing in every sample
# (exit 5, nothing scored); now it is an unusable reply counted against the model, said in one line
def test_a_reply_of_numbers_is_no_error(numbers_reply_run: tuple[int, dict, str]) -> None:
    assert numbers_reply_run[0] == 0


def test_a_reply_of_numbers_is_invalid_against_the_model(numbers_reply_run: tuple[int, dict, str]) -> None:
    assert numbers_reply_run[1]["n_invalid"] == 2


def test_a_reply_of_numbers_is_said_once(numbers_reply_run: tuple[int, dict, str]) -> None:
    said = [line for line in numbers_reply_run[2].splitlines() if "content is a list ([1, 2]), not text" in line]
    assert len(said) == 1
