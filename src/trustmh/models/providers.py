"""The providers table: what trustmh knows about each Inspect model provider, in one place
(docs/contributing.md#adding-a-provider-quirk). Plain data and lookups; every reader (the batch mode, the
plan's token counts and prompt-cache pricing, judges' JSON mode, the run's connections and endpoint file,
model families) asks here instead of keeping its own list.

A model string is `PROVIDER/NAME` (`openai/gpt-4o-mini`, `together/meta-llama/Llama-3.1-8B-Instruct`); its
provider is the part before the first `/`. A provider missing from the table has no quirk: it runs live,
has no known prompt cache, counts tokens by the approximation, leaves JSON to the prompt and belongs to the
family its model name says, if any.

Sources of the figures: the providers' documentation as of 2025. Prompt caching serves a prefix of at least
a minimum length: OpenAI 1,024 tokens; Anthropic 1,024 for Sonnet and Opus, 2,048 for Haiku; Google's
implicit caching 1,024 for Flash, 2,048 for Pro. Batch APIs are those Inspect has a batcher for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    """One Inspect model provider's quirks (every field's default: no quirk)."""

    name: str  # the prefix of a model string, as Inspect registers the provider
    label: str = ""  # how help texts name it ("OpenAI"); empty: not named
    # the vendor family of the provider's models when the model's name says nothing (self-preference checks)
    family: str | None = None
    batch: bool = False  # Inspect has a batcher for its batch API (`--batch`); otherwise calls run live
    # shortest prefix the provider's prompt cache serves (tokens); None: no known prompt cache
    cache_minimum: int | None = None
    # caches only what the request marks (Inspect's `cache_prompt`) and bills the cache write
    explicit_cache: bool = False
    tiktoken: bool = False  # tiktoken's encodings count its tokens exactly (`trustmh.run.tokens`)
    # judges are asked for their exact JSON schema by default (a grammar guarantees it; hosted providers
    # differ in how they treat a schema, so they are left to the prompt)
    json_schema: bool = False
    # one call per single-slot local server: the run's connections and parallel tasks default to the number
    # of servers (`trustmh.models.gguf.default_parallel`) instead of Inspect's defaults
    single_slot_servers: bool = False
    endpoint_file: bool = False  # the product's API is described by `--endpoint FILE` (docs/products.md)


PROVIDERS: dict[str, Provider] = {p.name: p for p in (
    Provider("openai", label="OpenAI", family="openai", batch=True, cache_minimum=1024,
             tiktoken=True),
    Provider("azureai", family="openai", tiktoken=True),
    Provider("anthropic", label="Anthropic", family="anthropic", batch=True, cache_minimum=1024,
             explicit_cache=True),
    Provider("google", label="Google", family="google", batch=True, cache_minimum=1024),
    Provider("vertex", family="google"),
    Provider("together", label="Together", batch=True),
    Provider("grok", label="Grok", family="xai", batch=True),
    Provider("mistral", family="mistral"),
    Provider("deepseek", family="deepseek"),
    Provider("gguf", json_schema=True, single_slot_servers=True),  # the bundled model (llama.cpp)
    Provider("http", endpoint_file=True),  # a product behind its own HTTP API
)}

# Model-name quirks, for models served by any provider.
# Name fragments → vendor family, checked in order (deepseek before llama/qwen: "DeepSeek-R1-Distill-Llama" is
# deepseek); OpenAI's reasoning models (o1, o3-mini, …) by their own pattern.
NAME_FAMILIES: tuple[tuple[str, str], ...] = (
    ("deepseek", "deepseek"),
    ("claude", "anthropic"),
    ("gemini", "google"),
    ("gemma", "google"),
    ("palm", "google"),
    ("llama", "meta"),
    ("qwen", "qwen"),
    ("qwq", "qwen"),
    ("mistral", "mistral"),
    ("mixtral", "mistral"),
    ("grok", "xai"),
    ("gpt", "openai"),
)
OPENAI_REASONING_NAME = re.compile(r"(^|[/_-])o[1-9](-|$)")
# Name fragments whose prompt-cache minimum is higher than their provider's usual one.
CACHE_MINIMUM_BY_NAME: dict[str, int] = {"haiku": 2048, "gemini-2.5-pro": 2048, "gemini-3-pro": 2048}
# Model names tiktoken counts exactly whatever the provider (an OpenAI model served elsewhere).
TIKTOKEN_NAME_PREFIXES: tuple[str, ...] = ("gpt-", "o1", "o3", "o4")


def provider_name(model: str) -> str:
    """The provider part of a model string ("openai/gpt-4o" → "openai")."""
    return str(model).split("/", 1)[0]


NO_QUIRKS = Provider("")


def provider_of(model: str | None) -> Provider:
    """The table's record for a model's provider; a record with no quirk when the table does not list it or
    the string names no provider (no `/`)."""
    if not model or "/" not in str(model):
        return NO_QUIRKS
    return PROVIDERS.get(provider_name(model), NO_QUIRKS)


def batch_labels() -> list[str]:
    """The providers with a batch API, as help texts name them."""
    return [p.label for p in PROVIDERS.values() if p.batch and p.label]


def model_family(model: str | None) -> str | None:
    """Vendor family of a model string ("openai/gpt-4o" → "openai", "together/meta-llama/Llama-3" → "meta",
    "anthropic/claude-3-7-sonnet" → "anthropic"): its name's fragments first, else its provider's family;
    None when unknown."""
    if not model:
        return None
    low = model.lower()
    name = low.split("/", 1)[1] if "/" in low else low
    for frag, fam in NAME_FAMILIES:
        if frag in name:
            return fam
    if OPENAI_REASONING_NAME.search(name):
        return "openai"
    return provider_of(low).family


def cache_minimum(model: str) -> int | None:
    """The shortest prefix the model's provider caches, or None when trustmh knows of no prompt cache."""
    base = provider_of(model).cache_minimum
    if base is None:
        return None
    name = str(model).partition("/")[2]
    return max([base, *(n for key, n in CACHE_MINIMUM_BY_NAME.items() if key in name)])


def counts_with_tiktoken(model: str) -> bool:
    """Whether tiktoken's encodings count the model's tokens exactly (its provider, or an OpenAI name)."""
    return provider_of(model).tiktoken or model.split("/")[-1].startswith(TIKTOKEN_NAME_PREFIXES)
