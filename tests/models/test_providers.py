"""The providers table (`trustmh.models.providers`) is where every provider quirk is read: a provider added to
it (or a quirk changed there) reaches the batch mode, the plan's prompt-cache pricing and token counts,
judges' JSON mode, the run's endpoint file and model families, with no other code touched; the cost page names the
providers that batch and cache (checked)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from trustmh.judges.schema import judge_json_mode
from trustmh.models import providers
from trustmh.models.batch import BatchMode, live_providers
from trustmh.models.providers import (
    PROVIDERS,
    Provider,
    batch_labels,
    cache_minimum,
    model_family,
    provider_of,
)
from trustmh.run.tokens import Tokenizer

COST_PAGE = Path(__file__).parents[2] / "docs" / "cost.md"


def docs_faults() -> list[str]:
    """Providers the cost page fails to name where it lists who batches and who caches prompts."""
    text = COST_PAGE.read_text(encoding="utf-8")
    batch = text.split("{#batch}", 1)[1].split("\n## ", 1)[0]
    caching = text.split("{#caching}", 1)[1].split("\n## ", 1)[0]
    return ([f"{p.label}: not named under batch mode" for p in PROVIDERS.values() if p.batch and p.label not in batch]
            + [f"{p.label}: not named under prompt caching" for p in PROVIDERS.values()
               if p.cache_minimum and p.label not in caching])


@pytest.fixture
def acme(monkeypatch: pytest.MonkeyPatch) -> Provider:
    """A throwaway provider `acme` with every quirk on."""
    record = Provider("acme", label="Acme", family="acme-family", batch=True, cache_minimum=4096,
                      explicit_cache=True, tiktoken=True, json_schema=True)
    monkeypatch.setitem(PROVIDERS, "acme", record)
    return record


def test_an_unlisted_provider_has_no_quirk() -> None:
    assert provider_of("ollama/llama3") == Provider("")


def test_a_string_without_a_provider_has_no_quirk() -> None:
    assert provider_of("openai") == Provider("")


@pytest.mark.usefixtures("acme")
def test_a_new_batch_provider_is_batched() -> None:
    assert BatchMode().batches("acme/m1")


@pytest.mark.usefixtures("acme")
def test_a_new_batch_provider_is_not_called_live() -> None:
    assert live_providers(["acme/m1", "ollama/llama3"]) == ["ollama/llama3"]


@pytest.mark.usefixtures("acme")
def test_a_new_batch_provider_is_named_in_the_help() -> None:
    assert batch_labels()[-1] == "Acme"


@pytest.mark.usefixtures("acme")
def test_a_new_provider_cache_minimum_prices_the_plan() -> None:
    assert cache_minimum("acme/m1") == 4096


def test_a_name_fragment_raises_the_cache_minimum() -> None:
    assert cache_minimum("google/gemini-2.5-pro") == 2048


@pytest.mark.usefixtures("acme")
def test_a_new_provider_counts_tokens_with_tiktoken_when_its_encoding_is_cached(monkeypatch) -> None:
    import trustmh.run.tokens as tokens

    monkeypatch.setattr(tokens, "_cached_encoding", lambda name: lambda text: text.split())
    assert Tokenizer("acme/m1").exact


@pytest.mark.usefixtures("acme")
def test_a_new_provider_judges_in_json_mode_by_default() -> None:
    assert judge_json_mode("acme/m1", {}) is True


def test_a_hosted_judge_is_left_to_the_prompt() -> None:
    assert judge_json_mode("openai/gpt-4o", {}) is False


@pytest.mark.usefixtures("acme")
def test_a_new_provider_family_is_used_when_the_name_says_nothing() -> None:
    assert model_family("acme/m1") == "acme-family"


def test_the_name_decides_the_family_before_the_provider() -> None:
    assert model_family("together/meta-llama/Llama-3.1-8B-Instruct") == "meta"


def test_the_endpoint_file_belongs_to_the_http_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.run.config import use_endpoint

    monkeypatch.setitem(PROVIDERS, "http", replace(PROVIDERS["http"], endpoint_file=False))
    assert use_endpoint("http/acme", None) is None  # no longer an endpoint provider: no file asked for


def test_the_cost_page_names_every_batch_and_caching_provider() -> None:
    assert docs_faults() == []


@pytest.mark.usefixtures("acme")
def test_a_new_batch_and_caching_provider_missing_from_the_cost_page_is_named() -> None:
    assert docs_faults() == ["Acme: not named under batch mode", "Acme: not named under prompt caching"]


def test_every_labelled_provider_is_named_once() -> None:
    labels = [p.label for p in providers.PROVIDERS.values() if p.label]
    assert len(labels) == len(set(labels))
