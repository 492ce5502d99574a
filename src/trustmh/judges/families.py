"""Model families: which vendor's model family a model string belongs to. A judge or a simulated patient of the
same family as the model under test may favour it (self-preference): runs flag it, MentalBench measures it.
"""

from __future__ import annotations

import re

# Name fragments, checked in order (deepseek before llama/qwen: "DeepSeek-R1-Distill-Llama" is deepseek).
_NAME_FAMILY: tuple[tuple[str, str], ...] = (
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
_OPENAI_REASONING = re.compile(r"(^|[/_-])o[1-9](-|$)")
# Inspect provider prefix → family (used when the model name itself says nothing).
_PROVIDER_FAMILY: dict[str, str] = {
    "openai": "openai", "azureai": "openai", "anthropic": "anthropic", "google": "google",
    "vertex": "google", "mistral": "mistral", "grok": "xai", "deepseek": "deepseek",
}


def model_family(model: str | None) -> str | None:
    """Vendor family of a model string ("openai/gpt-4o" → "openai", "together/meta-llama/Llama-3" → "meta",
    "anthropic/claude-3-7-sonnet" → "anthropic"); None when unknown."""
    if not model:
        return None
    low = model.lower()
    name = low.split("/", 1)[1] if "/" in low else low
    for frag, fam in _NAME_FAMILY:
        if frag in name:
            return fam
    if _OPENAI_REASONING.search(name):
        return "openai"
    provider = low.split("/", 1)[0] if "/" in low else ""
    return _PROVIDER_FAMILY.get(provider)
