"""The endpoint file (plain Python): validation errors name the field; templating; JSON paths; header secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.models.endpoint import ENDPOINT_ENV, EndpointError, fill, json_at, load_endpoint, parse_endpoint
from trustmh.run.secrets import secret_values

GOOD = {"url": "https://x.example/chat", "send": "latest", "headers": {"X-Auth": "${ACME_AUTH}"},
        "body": {"sid": "{{session_id}}", "text": "{{message}}"}, "reply": {"path": "data.text"}}


def _err(raw: dict) -> str:
    with pytest.raises(EndpointError) as info:
        parse_endpoint(raw, "acme.toml")
    return str(info.value)


def test_missing_reply_path_names_the_field() -> None:
    assert _err({**GOOD, "reply": {}}) == "acme.toml: reply.path is missing"


def test_latest_without_message_placeholder_names_body() -> None:
    assert "body must use {{message}} when send = \"latest\"" in _err({**GOOD, "body": {"sid": "{{session_id}}"}})


def test_unknown_placeholder_names_where() -> None:
    assert "body.text: unknown placeholder {{msg}}" in _err({**GOOD, "body": {"sid": "{{session_id}}",
                                                                             "text": "{{message}} {{msg}}"}})


def test_session_request_needs_its_url() -> None:
    assert _err({**GOOD, "session": {"start": "request", "id_path": "id"}}) == "acme.toml: session.url is missing"


def test_unknown_top_level_key() -> None:
    assert "unknown field(s) urls" in _err({**GOOD, "urls": "x"})


def test_whole_placeholder_keeps_its_json_value() -> None:
    assert fill({"m": "{{messages}}", "t": "say: {{message}}"}, {"messages": [{"role": "user", "content": "hi"}],
                                                                  "message": "hi"}) == {
        "m": [{"role": "user", "content": "hi"}], "t": "say: hi"}


def test_json_path_with_index() -> None:
    assert json_at({"choices": [{"message": {"content": "ok"}}]}, "$.choices[0].message.content", "reply.path") == "ok"


def test_json_path_miss_says_where_it_stopped() -> None:
    with pytest.raises(EndpointError, match="reply.path = 'a.b': the response has no 'b' at a"):
        json_at({"a": {"c": 1}}, "a.b", "reply.path", "acme.toml")


def test_missing_header_variable_names_the_header() -> None:
    endpoint = parse_endpoint(GOOD, "acme.toml")
    with pytest.raises(EndpointError, match="headers.X-Auth needs the environment variable ACME_AUTH"):
        endpoint.headers({})


def test_header_variables_are_scrubbed_whatever_their_name(tmp_path: Path) -> None:
    path = tmp_path / "acme.toml"
    path.write_text('url = "https://x.example/chat"\n[headers]\nX-Auth = "${ACME_AUTH}"\n[body]\n'
                    'messages = "{{messages}}"\n[reply]\npath = "text"\n')
    assert load_endpoint(path).send == "conversation"
    secret = "value-of-an-oddly-named-variable"
    assert secret in secret_values({ENDPOINT_ENV: str(path), "ACME_AUTH": secret})


def test_clock_placeholder_declares_a_simulated_clock() -> None:
    assert not parse_endpoint(GOOD, "acme.toml").clock
    in_body = parse_endpoint({**GOOD, "body": {**GOOD["body"], "now": "{{elapsed_seconds}}"}}, "acme.toml")
    assert in_body.clock
    in_header = parse_endpoint({**GOOD, "headers": {**GOOD["headers"], "X-Elapsed": "{{elapsed_seconds}}"}},
                               "acme.toml")
    assert in_header.clock


def test_header_placeholders_are_filled_and_checked() -> None:
    endpoint = parse_endpoint({**GOOD, "headers": {"X-Auth": "${ACME_AUTH}", "X-Elapsed": "{{elapsed_seconds}}",
                                                   "X-Session": "{{session_id}}"}}, "acme.toml")
    got = endpoint.headers({"ACME_AUTH": "k"}, {"elapsed_seconds": 0, "session_id": "s1"})
    assert got == {"X-Auth": "k", "X-Elapsed": "0", "X-Session": "s1"}
    assert endpoint.headers({"ACME_AUTH": "k"}, {"elapsed_seconds": None})["X-Elapsed"] == ""
    assert "headers.X-Clock: unknown placeholder {{clock}}" in _err({**GOOD, "headers": {"X-Clock": "{{clock}}"}})


def test_endpoint_has_clock_reads_the_run_endpoint_file(tmp_path: Path) -> None:
    from trustmh.models.endpoint import endpoint_has_clock

    path = tmp_path / "acme.toml"
    path.write_text('url = "https://x.example/chat"\n[body]\nmessages = "{{messages}}"\nt = "{{elapsed_seconds}}"\n'
                    '[reply]\npath = "text"\n', encoding="utf-8")
    assert endpoint_has_clock({ENDPOINT_ENV: str(path)})
    assert not endpoint_has_clock({})
    assert not endpoint_has_clock({ENDPOINT_ENV: str(tmp_path / "missing.toml")})
