"""The plan's discounts: batch and cached prices side by side, the roles batch mode batches, wall time with
batch rounds, and the shared prefix of judge prompts against providers' minimum cacheable lengths."""

from __future__ import annotations

import pytest

from trustmh.discounts import RoleTokens, batch_wall_time, batched, scenario_costs, scenario_totals
from trustmh.models.batch import BatchMode, call_settings, live_providers
from trustmh.models.providers import cache_minimum as min_cacheable
from trustmh.prices import Price
from trustmh.prompt_cache import prefix_share, shared_prefix

HALF = Price(input=2.0, output=8.0, cached_input=0.2, batch_input=1.0, batch_output=4.0)
JUDGE = RoleTokens("judge", "openai/gpt-4o", False, 1_000_000, 3_000_000, 100_000, 300_000)
TURN = RoleTokens("model", "openai/gpt-4o", True, 1_000_000, 1_000_000, 100_000, 100_000)


def test_batch_at_half_rates_halves_a_batched_role() -> None:
    costs = scenario_costs(JUDGE, HALF, BatchMode())
    assert costs["batch"]["expected"] == pytest.approx(costs["live"]["expected"] / 2)


def test_conversation_turns_stay_live_by_default() -> None:
    assert batched(TURN, BatchMode()) is False


def test_conversation_turns_batch_with_batch_conversations() -> None:
    assert batched(TURN, BatchMode(conversations=True)) is True


def test_a_conversation_judge_is_batched() -> None:
    assert batched(RoleTokens("judge", "anthropic/claude-sonnet-4-5", True, 1, 1, 1, 1), BatchMode()) is True


def test_a_provider_without_a_batch_api_runs_live() -> None:
    row = RoleTokens("judge", "openai-api/local/m", False, 1_000_000, 1_000_000, 0, 0)
    assert scenario_costs(row, HALF, BatchMode())["batch"] == scenario_costs(row, HALF, BatchMode())["live"]


def test_live_providers_are_named() -> None:
    assert live_providers(["openai/gpt-4o", "ollama/llama3", "gguf/smollm2"]) == ["gguf/smollm2", "ollama/llama3"]


def test_cached_reads_are_priced_at_the_cached_rate() -> None:
    row = RoleTokens("judge", "openai/gpt-4o", False, 1_000_000, 1_000_000, 0, 0, cached_read=500_000)
    assert scenario_costs(row, HALF, BatchMode())["cache"]["expected"] == pytest.approx(0.5 * 2.0 + 0.5 * 0.2)


def test_an_unknown_price_makes_every_total_unknown() -> None:
    rows = [(JUDGE, scenario_costs(JUDGE, None, BatchMode()))]
    assert scenario_totals(rows) == {"live": None, "batch": None, "cache": None, "batch+cache": None}


def test_wall_time_adds_one_batch_turnaround_per_batched_round() -> None:
    assert batch_wall_time({"min": 60.0, "max": 120.0}, 3, {"typical": 600, "worst": 86400}) == {
        "min": 60.0 + 1800, "max": 120.0 + 3 * 86400}


def test_the_shared_prefix_ends_at_a_word_boundary() -> None:
    assert shared_prefix(["Rate the reply. Reply: hello", "Rate the reply. Reply: help"]) == "Rate the reply. Reply: "


def test_one_prompt_shares_nothing() -> None:
    assert shared_prefix(["alone"]) == ""


def test_a_prefix_below_the_provider_minimum_is_not_cached() -> None:
    share = prefix_share("t", "openai/gpt-4o", ["word " * 100 + "a", "word " * 100 + "b"], 202, lambda s: len(s.split()))
    assert (share.prefix_tokens, share.cacheable, share.cached_read) == (100, False, 0)


def test_a_long_shared_prefix_is_read_from_the_cache_after_the_first_call() -> None:
    prompts = ["word " * 2000 + f"item{i}" for i in range(3)]
    share = prefix_share("t", "openai/gpt-4o", prompts, 3 * 2001, lambda s: len(s.split()))
    assert (share.cacheable, share.cached_read, share.cache_write) == (True, 4000, 2000)


def test_haiku_needs_a_longer_prefix() -> None:
    assert (min_cacheable("anthropic/claude-3-5-haiku-latest"), min_cacheable("anthropic/claude-sonnet-4-5"),
            min_cacheable("ollama/llama3")) == (2048, 1024, None)


def test_a_batched_call_waits_as_long_as_a_batch_may_take() -> None:
    fields = call_settings("openai/gpt-4o", mode=BatchMode(size=50))
    assert (fields["batch"].size, fields["attempt_timeout"]) == (50, 26 * 3600)


def test_a_live_call_gets_no_batch_settings() -> None:
    assert call_settings("openai/gpt-4o", conversation=True, mode=BatchMode()) == {}


def test_no_prompt_cache_turns_cache_prompt_off_on_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.models import batch

    monkeypatch.setattr(batch, "PROMPT_CACHE", False)
    assert (call_settings("anthropic/claude-sonnet-4-5", conversation=True, mode=BatchMode())["cache_prompt"],
            call_settings("openai/gpt-4o", mode=BatchMode())["cache_prompt"]) == (False, False)
