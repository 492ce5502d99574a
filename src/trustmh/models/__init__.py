"""Model providers bundled with trustmh.

`trustmh.models.gguf` registers the Inspect model provider `gguf` (llama.cpp's server on loopback), so that
`--model gguf/smollm2` runs the bundled SmolLM2-135M-Instruct GGUF with no network and no API key.
The provider module is imported by the `inspect_ai` entry point (`trustmh._registry`), not here, so that
importing `trustmh.models` stays cheap. The built-in keyword floor, `--model trustmh/keyword`, is registered the
same way from `trustmh.pillars.conversation.keyword_product` (it reads the crisis table, a floor above this one).
"""

BUNDLED_MODEL = "gguf/smollm2"
"""The `--model` string of the embedded default model."""

__all__ = ["BUNDLED_MODEL"]
