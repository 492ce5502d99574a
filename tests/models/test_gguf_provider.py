"""The bundled `gguf` model provider (llama.cpp's server on loopback), run for real on the bundled SmolLM2-135M GGUF
(small and fast)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import generate

import trustmh.models.gguf as gguf
from trustmh.core import TrustmhError

LONG_ANSWER_PROMPT = "Write a long, detailed story about a lighthouse keeper and a storm."


def _generate(model: Model, prompt: str | list, **config: object):
    return asyncio.run(model.generate(prompt, config=GenerateConfig(**config)))


@pytest.fixture(scope="module")
def smollm2() -> Model:
    return get_model("gguf/smollm2", config=GenerateConfig(max_tokens=16, temperature=0, seed=1))


@pytest.mark.slow  # makes the bundled model's Q4_0 copy: 8 s of CPU
def test_bundled_model_resolves_to_a_q4_0_copy_of_the_packaged_file() -> None:
    path = gguf.resolve_model_path("smollm2")
    assert path.name.startswith("SmolLM2-135M-Instruct.Q4_1.q4_0-v")
    assert path.parent == Path(os.environ["TRUSTMH_MODELS_DIR"])
    assert path.stat().st_size > 50_000_000


@pytest.mark.slow
def test_greedy_generation_is_deterministic_and_reports_usage(smollm2: Model) -> None:
    first = _generate(smollm2, LONG_ANSWER_PROMPT)
    second = _generate(smollm2, LONG_ANSWER_PROMPT)
    assert first.completion.strip()
    assert first.completion == second.completion
    assert first.usage is not None
    assert first.usage.input_tokens > 0
    assert first.usage.output_tokens > 0
    # the prompt tokens the server took from its cache are counted apart from those it computed
    assert first.usage.total_tokens == (first.usage.input_tokens + (first.usage.input_tokens_cache_read or 0)
                                        + first.usage.output_tokens)
    # a long story does not fit in 16 tokens: cut by max_tokens, and llama.cpp's "length" is mapped
    assert first.stop_reason == "max_tokens"
    assert first.usage.output_tokens == 16


@pytest.mark.slow
def test_max_tokens_is_honoured(smollm2: Model) -> None:
    out = _generate(smollm2, LONG_ANSWER_PROMPT, max_tokens=5)
    assert out.usage is not None
    assert out.usage.output_tokens == 5
    assert out.stop_reason == "max_tokens"


@pytest.mark.slow
def test_stop_sequence_is_honoured(smollm2: Model) -> None:
    full = _generate(smollm2, LONG_ANSWER_PROMPT).completion
    words = full.split()
    assert len(words) >= 3
    stop = words[2]
    cut = _generate(smollm2, LONG_ANSWER_PROMPT, stop_seqs=[stop])
    assert cut.stop_reason == "stop"
    assert stop not in cut.completion
    assert full.startswith(cut.completion)
    assert len(cut.completion) < len(full)


@pytest.mark.slow
def test_seed_is_passed_to_the_sampler(smollm2: Model) -> None:
    def sample(seed: int) -> str:
        return _generate(
            smollm2, LONG_ANSWER_PROMPT, temperature=1.0, top_p=1.0, seed=seed, max_tokens=8
        ).completion

    assert sample(7) == sample(7)
    assert len({sample(seed) for seed in (1, 2, 3, 4)}) > 1


@pytest.mark.slow
def test_concurrent_calls_are_serialised_and_match_sequential_results(smollm2: Model) -> None:
    prompts = [LONG_ANSWER_PROMPT, "List three colours.", "What is the capital of France?"]
    sequential = [_generate(smollm2, p, max_tokens=8).completion for p in prompts]

    async def together() -> list[str]:
        outs = await asyncio.gather(
            *(smollm2.generate(p, config=GenerateConfig(max_tokens=8)) for p in prompts)
        )
        return [o.completion for o in outs]

    assert asyncio.run(together()) == sequential


def test_missing_gguf_file_gives_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(gguf.GGUFModelNotFoundError) as info:
        get_model(f"gguf/{missing}")
    assert str(missing) in str(info.value)
    assert "smollm2" in str(info.value)  # says what would have worked
    assert isinstance(info.value, TrustmhError)
    assert isinstance(info.value, FileNotFoundError)


def test_unknown_model_arg_is_rejected() -> None:
    with pytest.raises(TrustmhError, match="n_gpu"):
        get_model("gguf/smollm2", n_gpu=3, memoize=False)


@pytest.mark.slow
def test_a_prompt_longer_than_the_context_is_an_empty_reply_cut_by_the_model_length() -> None:
    # a small context keeps the test fast; the same path serves 8192
    model = get_model("gguf/smollm2", n_ctx=256, config=GenerateConfig(temperature=0, seed=1))
    out = _generate(model, " ".join(f"item{i}" for i in range(2_000)), max_tokens=16)
    assert out.stop_reason == "model_length"
    assert out.completion == ""


def test_a_server_that_cannot_start_says_so_in_one_line(tmp_path: Path) -> None:
    not_a_model = tmp_path / "broken.gguf"
    not_a_model.write_bytes(b"this is not a GGUF file")
    with pytest.raises(TrustmhError) as info:
        get_model(f"gguf/{not_a_model}", memoize=False)
    message = str(info.value)
    assert "the llama.cpp server did not start" in message
    assert "\n" not in message


@pytest.mark.slow
def test_the_entry_point_registers_the_provider_whose_server_listens_on_loopback_and_stops_with_its_parent() -> None:
    """`get_model('gguf/smollm2')` in a fresh process with no import of ours works because the `inspect_ai`
    entry point imports trustmh; the server it starts listens on loopback only and ends with that process. One
    process (and one server start) shows all three: the two claims were two tests that each started both."""
    try:
        import trustmh._registry  # noqa: F401
    except ImportError as ex:  # the entry-point module imports parts written elsewhere
        pytest.skip(f"trustmh._registry not importable yet: {ex}")
    code = ("from inspect_ai.model import get_model\n"
            "m = get_model('gguf/smollm2')\n"
            "print(type(m.api).__module__, m.api.server.base_url, m.api.server.process.pid, flush=True)\n")
    env = {**os.environ, "INSPECT_DISPLAY": "none"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    module, base_url, pid = result.stdout.split()
    assert module == "trustmh.models.gguf"
    assert base_url.startswith("http://127.0.0.1:")
    deadline = time.monotonic() + 30
    while _alive(int(pid)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:  # a zombie has ended
        return stat.read().split(") ")[1][0] != "Z"


@pytest.mark.slow
def test_provider_runs_inside_an_inspect_eval(tmp_path: Path) -> None:
    task = Task(
        dataset=[Sample(input="Name a fruit.", target="x"), Sample(input="Name a colour.", target="x")],
        solver=generate(),
    )
    [log] = eval(
        task,
        model="gguf/smollm2",
        log_dir=str(tmp_path),
        display="none",
        max_tokens=8,
        temperature=0,
        seed=1,
        max_retries=1,
        timeout=120,
    )
    assert log.status == "success"
    assert log.samples is not None
    assert len(log.samples) == 2
    assert all(s.output.completion for s in log.samples)
    usage = log.stats.model_usage["gguf/smollm2"]
    assert usage.input_tokens > 0
    assert 0 < usage.output_tokens <= 16


def test_default_threads_leave_a_core_free_and_obey_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_GGUF_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert gguf.default_threads() == max(1, cores - 1)
    monkeypatch.setenv("TRUSTMH_GGUF_THREADS", "3")
    assert gguf.default_threads() == 3
    monkeypatch.setenv("TRUSTMH_GGUF_THREADS", "many")
    with pytest.raises(TrustmhError, match="TRUSTMH_GGUF_THREADS"):
        gguf.default_threads()


def test_two_single_thread_servers_on_two_cores_one_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_GGUF_PARALLEL", raising=False)
    monkeypatch.delenv("TRUSTMH_GGUF_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert gguf.default_parallel() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert gguf.default_parallel() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)), raising=False)
    assert gguf.default_parallel() == 1  # one server of seven threads
    monkeypatch.setenv("TRUSTMH_GGUF_PARALLEL", "3")
    assert gguf.default_parallel() == 3
    monkeypatch.setenv("TRUSTMH_GGUF_PARALLEL", "x")
    with pytest.raises(TrustmhError, match="TRUSTMH_GGUF_PARALLEL"):
        gguf.default_parallel()


@pytest.mark.slow
def test_a_path_to_a_gguf_file_is_accepted_as_the_model_name() -> None:
    path = gguf.resolve_model_path("smollm2")  # any existing .gguf file
    assert path.is_absolute()
    model = get_model(f"gguf/{path}", config=GenerateConfig(max_tokens=4, temperature=0, seed=1))
    assert f"gguf/{path}" == f"gguf//{str(path).lstrip('/')}"  # absolute paths read gguf//...
    out = _generate(model, "Hello")
    assert isinstance(model.api, gguf.GGUFModelAPI)
    assert model.api.model_path == path
    assert out.usage is not None
    assert 0 < out.usage.output_tokens <= 4


@pytest.mark.slow
def test_response_schema_makes_the_reply_valid_json(smollm2: Model) -> None:
    """With a response schema, llama.cpp's grammar guarantees JSON (used for the demo judge)."""
    import json

    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    schema = ResponseSchema(name="rating", json_schema=JSONSchema(
        type="object", properties={"score": JSONSchema(type="integer"), "why": JSONSchema(type="string", maxLength=12)},
        required=["score", "why"]))
    config = GenerateConfig(max_tokens=200, temperature=0, seed=1, response_schema=schema)
    out = asyncio.run(smollm2.generate("Rate the colour blue from 1 to 5 and say why at length.", config=config))
    reply = json.loads(out.completion)
    assert isinstance(reply["score"], int)
    assert len(reply["why"]) <= 12  # maxLength reaches llama.cpp's grammar (a judge's bounded free text)


@pytest.mark.slow
def test_a_json_reply_has_no_whitespace_but_the_separators(smollm2: Model) -> None:
    """The front compiles a schema with fixed separators: no indentation for the model to spend tokens on."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    schema = ResponseSchema(name="rating", json_schema=JSONSchema(
        type="object", properties={"score": JSONSchema(type="integer", enum=[1, 2, 3, 4, 5]),
                                   "why": JSONSchema(type="string", maxLength=12)},
        required=["score", "why"], additionalProperties=False))
    config = GenerateConfig(max_tokens=200, temperature=0, seed=1, response_schema=schema)
    out = asyncio.run(smollm2.generate("Rate the colour blue from 1 to 5 and say why.", config=config))
    assert out.completion.startswith('{"score": ')


@pytest.mark.slow
def test_replies_depend_only_on_the_request_not_on_what_runs_beside_it(tmp_path: Path) -> None:
    """Greedy and seeded sampling, plain and JSON-constrained, give the same replies computed from scratch, one
    at a time from a cached shared prefix, in reverse order, and several at once on two servers: the prompt
    cache and the scheduling change the time a reply takes, never the reply."""
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    schema = ResponseSchema(name="j", json_schema=JSONSchema.model_validate({
        "type": "object", "properties": {"label": {"type": "string", "enum": ["calm", "sad", "angry"]},
                                         "why": {"type": "string", "maxLength": 60}},
        "required": ["label", "why"], "additionalProperties": False}))
    # two messages behind the shared instructions (eight calls): each call has another whose prefix it can start
    # from, and the reverse order differs from the forward one, which is all the claim needs; a third message
    # added no case and 40% of the servers' CPU (47 s against 33 s, measured on 2026-12-02 on two cores)
    calls = [(f"{INSTRUCTIONS}\n\n{m}", judge, temperature) for m in MESSAGES[:2] for judge in (False, True)
             for temperature in (0.0, 0.8)]
    path = gguf.resolve_model_path("smollm2")
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(path.read_bytes())
    # three model names, so three servers, each starting with an empty prompt cache
    scratch, cached = get_model(f"gguf/{path}", n_parallel=1), get_model("gguf/smollm2", n_parallel=1)
    beside = get_model(f"gguf/{copy}", n_parallel=2)

    def config(judge: bool, temperature: float, **extra: object) -> GenerateConfig:
        return GenerateConfig(max_tokens=24, temperature=temperature, seed=5,
                              response_schema=schema if judge else None, extra_body=extra or None)

    def one_by_one(model: Model, order: list[int], **extra: object) -> dict[int, ModelOutput]:
        return {i: asyncio.run(model.generate(calls[i][0], config=config(*calls[i][1:], **extra))) for i in order}

    async def together() -> dict[int, ModelOutput]:
        outs = await asyncio.gather(*(beside.generate(p, config=config(j, t)) for p, j, t in calls))
        return dict(enumerate(outs))

    reference = one_by_one(scratch, list(range(len(calls))), cache_prompt=False)
    expected = {i: out.completion for i, out in reference.items()}
    reversed_order = one_by_one(cached, list(reversed(range(len(calls)))))
    assert {i: out.completion for i, out in reversed_order.items()} == expected
    assert sum(out.usage.input_tokens_cache_read or 0 for out in reversed_order.values()) > 0  # the cache was used
    assert sum(out.usage.input_tokens_cache_read or 0 for out in reference.values()) == 0
    assert {i: out.completion for i, out in asyncio.run(together()).items()} == expected


@pytest.mark.slow
def test_a_repeated_prompt_is_computed_from_scratch_and_gives_the_same_reply() -> None:
    """A prompt the server already holds whole (a repeat, or the start of a conversation it has continued) is
    sent with the cache off (the front's PrefixLedger), and its reply equals the first one."""
    model = get_model("gguf/smollm2", n_parallel=1, n_ctx=4096)
    first_turn = [ChatMessageSystem(content=INSTRUCTIONS), ChatMessageUser(content=MESSAGES[1])]
    config = GenerateConfig(max_tokens=24, temperature=0, seed=5)
    first = asyncio.run(model.generate(first_turn, config=config))
    longer = [*first_turn, ChatMessageAssistant(content=first.completion), ChatMessageUser(content="Why that one?")]
    asyncio.run(model.generate(longer, config=config))
    again = asyncio.run(model.generate(first_turn, config=config))
    assert again.completion == first.completion
    assert not again.usage.input_tokens_cache_read  # computed from scratch


@pytest.mark.slow
def test_a_conversations_next_turn_gives_the_same_reply_after_its_first_turn_as_alone(tmp_path: Path) -> None:
    """The server's cache holds the first turn's generated tokens; the next turn must not start from them."""
    path = gguf.resolve_model_path("smollm2")
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(path.read_bytes())
    config = GenerateConfig(max_tokens=24, temperature=0, seed=5)
    after_first, alone = get_model("gguf/smollm2", n_parallel=1, n_ctx=2048), get_model(f"gguf/{copy}", n_parallel=1)
    first_turn = [ChatMessageSystem(content="You are Alex, a kind listener on a support line."),
                  ChatMessageUser(content="Hi, who am I talking to?")]
    first = asyncio.run(after_first.generate(first_turn, config=config))
    next_turn = [*first_turn, ChatMessageAssistant(content=first.completion),
                 ChatMessageUser(content="Are you a person or a computer?")]
    assert asyncio.run(after_first.generate(next_turn, config=config)).completion == \
        asyncio.run(alone.generate(next_turn, config=config)).completion


INSTRUCTIONS = ("Read the message below and say which feeling it expresses most strongly. Pick one word from this "
                "list: calm, worried, sad, angry, hopeful, lonely, tired, proud. Think about the tone, the words, "
                "and what the writer hopes will happen next. Answer with the word first, then one short sentence "
                "of reasons. ") * 3
MESSAGES = ["I finished the garden fence today and it looks great.", "Nobody called me this week, again.",
            "The bus was late and I missed my appointment."]
