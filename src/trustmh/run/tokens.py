"""Token counts for the cost estimate (`trustmh plan`), without a network call.

`Tokenizer` uses tiktoken's encoding for an OpenAI model when its file is already on this machine, else an
approximation from a BPE pre-tokenizer's pieces, said as such.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from trustmh.models.providers import counts_with_tiktoken

# OpenAI's chat format: every message costs a few tokens of framing, and the reply is primed with a few more.
TOKENS_PER_MESSAGE = 3
TOKENS_REPLY_PRIMING = 3
PLACEHOLDER_WORD = "word"
# Distinct texts whose counts a Tokenizer remembers (the most recent ones): enough for the repeats of one
# sample's calls and the plan's shared texts, few enough to bound the memory they hold.
COUNT_MEMO_TEXTS = 256
APPROXIMATE = ("approximate: words, numbers and punctuation runs counted as a BPE pre-tokenizer splits them "
               "(no OpenAI encoding file on this machine, or not an OpenAI model)")


class Tokenizer:
    """Counts tokens for one model: tiktoken's encoding for an OpenAI model when its encoding file is already
    in tiktoken's cache (no download is attempted: `plan` makes no network call), else an approximation that
    counts the same tokenizer's pre-tokenizer pieces (words, numbers, punctuation runs), which a BPE never
    splits into fewer tokens: close to the exact count for English prose, below it for rare words."""

    def __init__(self, model: str = "") -> None:
        self.model = model
        self._encode: Callable[[str], Sequence[Any]] | None = None
        self.name = "o200k_base"
        name = model.split("/")[-1]
        if counts_with_tiktoken(model):
            self._encode = _cached_encoding(name)
        self.exact = self._encode is not None
        self.note = f"exact: tiktoken {self.name}" if self.exact else APPROXIMATE
        # a plan counts the same texts many times over (a conversation's earlier turns in every later turn's
        # prompt, the placeholder replies, the system prompt): each distinct text is tokenised once
        self.count: Callable[[str], int] = functools.lru_cache(maxsize=COUNT_MEMO_TEXTS)(self._count)

    def _count(self, text: str) -> int:
        if self._encode is not None:
            return len(self._encode(text))
        return len(_pretokens(text))

    def prompt_tokens(self, messages: Iterable[Mapping[str, Any]]) -> int:
        """Input tokens of a chat request: each message's text plus the chat format's framing."""
        total = TOKENS_REPLY_PRIMING
        for m in messages:
            total += TOKENS_PER_MESSAGE + self.count(str(m.get("content") or ""))
        return total


def _cached_encoding(model_name: str) -> Callable[[str], Sequence[Any]] | None:
    try:
        import tiktoken

        try:
            encoding = tiktoken.encoding_name_for_model(model_name)
        except KeyError:
            encoding = "o200k_base"
        url = f"https://openaipublic.blob.core.windows.net/encodings/{encoding}.tiktoken"
        cache = (os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
                 or os.path.join(tempfile.gettempdir(), "data-gym-cache"))
        if not os.path.exists(os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())):
            return None
        enc = tiktoken.get_encoding(encoding)
        return lambda text: enc.encode(text, disallowed_special=())
    except Exception:  # noqa: BLE001  no tiktoken, or an unreadable cache: the approximation
        return None


# GPT-2's pre-tokenizer pattern in the standard library's `re` (letters as [^\W\d_]): contractions, words,
# runs of up to three digits, punctuation runs, whitespace.
_PATTERN = re.compile(r"""'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+[\r\n]*|\s+(?!\S)|\s+""")


def _pretokens(text: str) -> list[str]:
    return _PATTERN.findall(text)


def placeholder(tokens: int) -> str:
    """A stand-in reply of about `tokens` tokens, where the plan needs a reply that is not yet written."""
    return " ".join([PLACEHOLDER_WORD] * max(1, tokens))
