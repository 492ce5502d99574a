"""Canned models for tests: Inspect's mockllm provider with outputs that carry token usage.

(Without usage, mockllm downloads a tokenizer vocabulary to count tokens; with it, it never touches the
network.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, Model, ModelOutput, ModelUsage, get_model


def last_user_text(messages: list[ChatMessage]) -> str:
    for msg in reversed(messages):
        if msg.role == "user":
            return msg.text
    return ""


def canned_model(reply: Callable[[str, list[ChatMessage], GenerateConfig], str], name: str = "canned") -> Model:
    """A model whose reply is `reply(last user text, all messages, config)`; every output has usage."""

    def outputs(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: GenerateConfig) -> ModelOutput:
        text = reply(last_user_text(messages), messages, config)
        out = ModelOutput.from_content(model=name, content=text)
        n_in = sum(len(m.text.split()) for m in messages)
        out.usage = ModelUsage(input_tokens=n_in, output_tokens=len(text.split()),
                               total_tokens=n_in + len(text.split()))
        return out

    return get_model(f"mockllm/{name}", custom_outputs=outputs, memoize=False)
