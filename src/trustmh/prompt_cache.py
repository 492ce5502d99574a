"""Prompt caching in the plan (docs/cost.md#caching): how much of each judge template's prompts the items
share, and what a provider's prefix cache would bill at its cached-read rate. Plain Python.

Judge prompts put what every item shares first (instructions, rubric, answer format; tests/test_prompt_order.py)
so that a provider's prefix cache can serve it. A provider caches only a prefix of at least a minimum length
(`Provider.cache_minimum` in the providers table, `trustmh.models.providers`). A template whose
shared prefix is shorter is priced with no cache read at all. The plan assumes every call after a template's
first reads the shared prefix from the cache (one cache write per template); providers evict entries after
minutes without use, so a slow or batched run can read less: the cached figure is the best case.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from trustmh.models.providers import cache_minimum


def common_prefix(a: str, b: str) -> str:
    """The longest text both start with. Bisected on slice comparisons (done in C), not char by char: a plan
    compares every judge prompt of a template with the prefix so far, thousands of characters each."""
    if b.startswith(a):
        return a
    lo, hi = 0, min(len(a), len(b))  # a[:lo] == b[:lo] holds; a[:hi] == b[:hi] may not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    return a[:lo]


def _at_word_boundary(prefix: str, whole: str) -> str:
    """A common prefix cut back to the last whitespace unless it is a whole prompt (a token boundary)."""
    if prefix == whole:
        return prefix
    cut = max(prefix.rfind(" "), prefix.rfind("\n"))
    return prefix[: cut + 1] if cut >= 0 else ""


def shared_prefix(prompts: Sequence[str]) -> str:
    """The text every prompt starts with, cut back to the last whitespace (a token boundary in practice)."""
    if len(prompts) < 2:
        return ""
    lo, hi = min(prompts), max(prompts)  # the common prefix of all is that of the extremes
    return _at_word_boundary(common_prefix(lo, hi), lo)


@dataclass
class PrefixTracker:
    """The shared prefix of a template's prompts, kept as they come (memory: one prefix, not every prompt)."""

    prefix: str | None = None
    whole: str = ""
    calls: int = 0
    total_tokens: int = 0

    def add(self, prompt: str, tokens: int) -> None:
        self.prefix = prompt if self.prefix is None else common_prefix(self.prefix, prompt)
        self.whole = prompt
        self.calls += 1
        self.total_tokens += tokens

    def share(self, template: str, model: str, count: Callable[[str], int]) -> PrefixShare:
        prefix = _at_word_boundary(self.prefix or "", self.whole) if self.calls > 1 else ""
        return PrefixShare(template=template, model=model, calls=self.calls,
                           prefix_tokens=count(prefix) if prefix else 0, total_tokens=self.total_tokens,
                           minimum=cache_minimum(model))


@dataclass(frozen=True)
class PrefixShare:
    """One judge template's prompts in a run: their shared prefix and what a prefix cache could read."""

    template: str
    model: str
    calls: int
    prefix_tokens: int
    total_tokens: int
    minimum: int | None  # the provider's minimum cacheable length (None: no known prompt cache)

    @property
    def share(self) -> float:
        return self.prefix_tokens * self.calls / self.total_tokens if self.total_tokens else 0.0

    @property
    def cacheable(self) -> bool:
        return self.minimum is not None and self.calls > 1 and self.prefix_tokens >= self.minimum

    @property
    def cached_read(self) -> int:
        """Input tokens read from the cache: the prefix of every call after the first."""
        return self.prefix_tokens * (self.calls - 1) if self.cacheable else 0

    @property
    def cache_write(self) -> int:
        """Input tokens written to the cache: the prefix of the first call."""
        return self.prefix_tokens if self.cacheable else 0

    def to_json(self) -> dict[str, object]:
        return {"template": self.template, "model": self.model, "calls": self.calls,
                "prefix_tokens": self.prefix_tokens, "total_tokens": self.total_tokens,
                "share": round(self.share, 4), "min_cacheable": self.minimum, "cacheable": self.cacheable,
                "cached_read_tokens": self.cached_read, "cache_write_tokens": self.cache_write}


def prefix_share(template: str, model: str, prompts: Sequence[str], total_tokens: int,
                 count: Callable[[str], int]) -> PrefixShare:
    """The shared prefix of one template's prompts (`total_tokens` in all), counted with the model's
    tokenizer (`count`)."""
    prefix = shared_prefix(prompts)
    return PrefixShare(template=template, model=model, calls=len(prompts),
                       prefix_tokens=count(prefix) if prefix else 0, total_tokens=total_tokens,
                       minimum=cache_minimum(model))
