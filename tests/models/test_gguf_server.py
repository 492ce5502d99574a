"""The bundled model's server front: which requests may start from the prompt cache and how a JSON schema
reaches the grammar (plain Python, no server), and the bundled model's Q4_0 copy."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest

from trustmh.models.gguf import packaged_model_file, resolve_model_path
from trustmh.models.gguf_q4_0 import FORMAT, q4_0_copy
from trustmh.models.gguf_server import COMPACT_JSON, PrefixLedger, compact_json_grammar, prepare_body

SYSTEM = {"role": "system", "content": "Rate the reply."}
USER = {"role": "user", "content": "I feel tired."}
REPLY = {"role": "assistant", "content": "That sounds hard."}
FOLLOW_UP = {"role": "user", "content": "Work is too much."}


def _cache_flag(ledger: PrefixLedger, request: dict) -> bool:
    return json.loads(prepare_body(json.dumps(request).encode(), ledger))["cache_prompt"]


def test_a_new_prompt_may_start_from_the_cache() -> None:
    assert _cache_flag(PrefixLedger(), {"messages": [SYSTEM, USER]}) is True


def test_a_repeated_prompt_does_not_use_the_cache() -> None:
    ledger = PrefixLedger()
    _cache_flag(ledger, {"messages": [SYSTEM, USER]})
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER]}) is False


def test_the_start_of_a_conversation_seen_longer_does_not_use_the_cache() -> None:
    ledger = PrefixLedger()
    _cache_flag(ledger, {"messages": [SYSTEM, USER, REPLY, FOLLOW_UP]})
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER]}) is False


def test_a_longer_prompt_starting_like_a_seen_one_may_use_the_cache() -> None:
    ledger = PrefixLedger()
    _cache_flag(ledger, {"messages": [SYSTEM, USER]})
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER, FOLLOW_UP]}) is True


def test_a_prompt_carrying_an_earlier_reply_does_not_use_the_cache() -> None:
    assert _cache_flag(PrefixLedger(), {"messages": [SYSTEM, USER, REPLY, FOLLOW_UP]}) is False


def test_the_same_messages_with_other_tools_are_another_prompt() -> None:
    ledger = PrefixLedger()
    _cache_flag(ledger, {"messages": [SYSTEM, USER]})
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER], "tools": [{"type": "function"}]}) is True


def test_a_raw_prompt_does_not_use_the_cache() -> None:
    assert _cache_flag(PrefixLedger(), {"prompt": "Once upon a time"}) is False


def test_a_request_may_turn_the_cache_off_but_not_on() -> None:
    ledger = PrefixLedger()
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER], "cache_prompt": False}) is False
    assert _cache_flag(ledger, {"messages": [SYSTEM, USER], "cache_prompt": True}) is False


def test_other_bodies_pass_through_unchanged() -> None:
    ledger = PrefixLedger()
    assert prepare_body(b'{"content": "hi"}', ledger) == b'{"content": "hi"}'  # /tokenize
    assert prepare_body(b"not json", ledger) == b"not json"
    assert prepare_body(None, ledger) is None


def _schema_request(schema: dict) -> dict:
    return {"messages": [SYSTEM, USER],
            "response_format": {"type": "json_schema", "json_schema": {"name": "j", "schema": schema}}}


SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "enum": [1, 2, 3]}}, "required": ["score"]}
SCHEMA_REQUEST = _schema_request(SCHEMA)


def _prepared(request: dict, compact_json: bool = True) -> dict:
    return json.loads(prepare_body(json.dumps(request).encode(), PrefixLedger(), compact_json))


def test_a_schema_becomes_a_compact_json_grammar() -> None:
    assert _prepared(SCHEMA_REQUEST)["grammar"] == compact_json_grammar(SCHEMA)


def test_the_schema_response_format_is_replaced_not_doubled() -> None:
    # llama.cpp refuses a request with both a schema and a grammar
    assert "response_format" not in _prepared(SCHEMA_REQUEST)


def test_the_compact_grammar_is_llguidance_json_of_the_schema_with_fixed_separators() -> None:
    prefix = "%llguidance {}\nstart: %json "
    grammar = compact_json_grammar(SCHEMA)
    assert json.loads(grammar.removeprefix(prefix)) == {**SCHEMA, "x-guidance": COMPACT_JSON}


def test_without_llguidance_the_schema_is_left_to_llama_cpp() -> None:
    assert _prepared(SCHEMA_REQUEST, compact_json=False)["response_format"] == SCHEMA_REQUEST["response_format"]


def test_a_request_with_its_own_grammar_keeps_it() -> None:
    request = {**SCHEMA_REQUEST, "grammar": 'root ::= "yes"'}
    assert _prepared(request)["grammar"] == 'root ::= "yes"'


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^a+$"}}},
    {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
    {"type": "object", "properties": {"a": {"type": "object"}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "array"},
], ids=["ref", "pattern", "array", "nested-object", "typed-extra-keys", "not-an-object"])
def test_a_schema_of_another_shape_is_left_to_llama_cpp(schema: dict) -> None:
    # llguidance refuses some of these, and the server would then sample with no grammar at all
    assert "grammar" not in _prepared(_schema_request(schema))


def test_every_judge_schema_shape_is_compiled_compactly() -> None:
    from trustmh.judges.schema import json_object_schema

    schema = json_object_schema(integers={"score": (1, 5)}, enums={"label": ["a", "b"]}, booleans=["ok"],
                                strings=["rationale"], optional=["rationale"])
    assert _prepared(_schema_request(schema))["grammar"] == compact_json_grammar(schema)


def test_any_json_object_is_compiled_compactly() -> None:
    assert _prepared(_schema_request({"type": "object"}))["grammar"] == compact_json_grammar({"type": "object"})


def test_a_json_object_response_format_is_left_to_llama_cpp() -> None:
    request = {"messages": [SYSTEM, USER], "response_format": {"type": "json_object"}}
    assert _prepared(request)["response_format"] == {"type": "json_object"}


@pytest.fixture(scope="module")
def q4_0_file() -> Path:
    return resolve_model_path("smollm2")


@pytest.fixture(scope="module")
def source_and_copy(q4_0_file: Path) -> tuple[gguf.GGUFReader, gguf.GGUFReader]:
    """The bundled model's file and its Q4_0 copy, each read whole once for the module (about 8 s of CPU)."""
    return gguf.GGUFReader(packaged_model_file("smollm2")), gguf.GGUFReader(q4_0_file)


@pytest.mark.slow  # reads the bundled model's file and its Q4_0 copy whole (the module's readers)
def test_the_copy_holds_every_tensor_of_the_source_with_q4_1_matrices_now_q4_0(
        source_and_copy: tuple[gguf.GGUFReader, gguf.GGUFReader]) -> None:
    source, copy = source_and_copy
    kinds = {t.name: t.tensor_type.name for t in copy.tensors}
    expected = {t.name: ("Q4_0" if t.tensor_type.name == "Q4_1" else t.tensor_type.name) for t in source.tensors}
    assert kinds == expected


@pytest.mark.slow  # reads the bundled model's file and its Q4_0 copy whole (the module's readers)
def test_the_copy_keeps_the_metadata_and_says_it_is_q4_0(
        source_and_copy: tuple[gguf.GGUFReader, gguf.GGUFReader]) -> None:
    source, copy = source_and_copy
    assert copy.fields["tokenizer.ggml.tokens"].contents() == source.fields["tokenizer.ggml.tokens"].contents()
    assert copy.fields["general.file_type"].contents() == int(gguf.LlamaFileType.MOSTLY_Q4_0)


@pytest.mark.slow  # makes the bundled model's Q4_0 copy (about 7 s of CPU once): bundled-model work
def test_the_copy_is_made_once_and_named_by_the_source_and_format(q4_0_file: Path) -> None:
    before = q4_0_file.stat().st_mtime_ns
    again = resolve_model_path("smollm2")
    assert again == q4_0_file
    assert again.stat().st_mtime_ns == before
    assert f"-v{FORMAT}-" in again.name


def test_a_source_that_is_not_gguf_leaves_no_copy_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10)
    out = tmp_path / "copies"
    with pytest.raises(ValueError):
        q4_0_copy(bad, out)
    assert list(out.iterdir()) == []

