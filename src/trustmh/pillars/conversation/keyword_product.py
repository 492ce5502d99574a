"""Inspect model provider `trustmh`: the keyword floor as a product, `--model trustmh/keyword`.

Deterministic, offline, free: each reply is `pillars.conversation.keywords.keyword_reply` over the user turns
so far (a crisis line when a word or phrase of trustmh's published list appears, a bland supportive reply
otherwise; see there). It shows what string matching alone scores on every sub-task it is run on. Inspect finds
a provider by the first part of the model name, so the registered name `trustmh` answers to `trustmh/keyword`;
any other model name under it is refused with one line. It lives beside the keyword list rather than in
`trustmh.models` because it reads the crisis table (`scoring`), a floor above the model providers; the
`inspect_ai` entry point (`trustmh._registry`) imports it like the others.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.keywords import KEYWORD_MODEL, keyword_reply

MODEL_NAME = KEYWORD_MODEL.split("/", 1)[1]  # the one model the `trustmh` provider serves


class KeywordModelAPI(ModelAPI):
    """The keyword floor: no network, no key, the same reply for the same conversation."""

    def __init__(self, model_name: str, base_url: str | None = None, api_key: str | None = None,
                 config: GenerateConfig | None = None, **model_args: Any) -> None:
        model_args.pop("api_key_vars", None)
        if model_name != MODEL_NAME:
            raise TrustmhError(f"trustmh/{model_name}: unknown built-in model (the one built in is {KEYWORD_MODEL})")
        if model_args:
            raise TrustmhError(f"trustmh/{model_name}: takes no model args (got {', '.join(sorted(model_args))})")
        super().__init__(model_name=model_name, base_url=None, api_key=None, config=config or GenerateConfig())

    def max_connections(self) -> int:
        return 64  # nothing is sent anywhere

    async def generate(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice,
                       config: GenerateConfig) -> ModelOutput:
        person = [m.text for m in input if m.role == "user"]
        text = keyword_reply(person)
        return ModelOutput(model=self.model_name, choices=[ChatCompletionChoice(
            message=ChatMessageAssistant(content=text, model=self.model_name, source="generate"),
            stop_reason="stop")])


@modelapi(name="trustmh")
def trustmh_builtin() -> type[ModelAPI]:
    return KeywordModelAPI
