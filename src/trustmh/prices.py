"""Model prices: the user's price file (`--prices FILE`, docs/cost.md) and the cost of tokens. Plain Python.

A price file is TOML with one table per model, prices per million tokens; trustmh ships no prices as current
fact (examples/prices.toml is a dated example). A model missing from the file has no price: its cost is
None ("price unknown"), never 0.

Besides the live input and output rates a model's table may give the discounted rates providers bill:
`cached_input` (input read from the provider's prompt cache), `cache_write` (input written to it),
`batch_input` and `batch_output` (a request sent through the provider's batch API). Each is optional; a rate
the file does not give is priced at the live rate it discounts (cached and cache-write input at `input`,
batch at `input`/`output`), never at 0, and `fallbacks` names each such fallback so the plan can say it.

A product billed by the request rather than by the token (`--model http/NAME`, docs/cost.md#product) gives
`per_call`, the cost of one call it answers (a call the response cache answers costs nothing); its token rates
are then optional (0 when not given).
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from trustmh.core import TrustmhError
from trustmh.data.files import read_text_bounded


@dataclass(frozen=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens
    cached_input: float | None = None  # per million input tokens read from the prompt cache (None: as input)
    cache_write: float | None = None  # per million input tokens written to the prompt cache (None: as input)
    batch_input: float | None = None  # per million input tokens of a batched request (None: as input)
    batch_output: float | None = None  # per million output tokens of a batched request (None: as output)
    per_call: float = 0.0  # per call answered (a product priced by the request, not the token)

    def rate(self, kind: str) -> float:
        """The rate for one kind of token (`TOKEN_KINDS`), falling back to the live rate it discounts."""
        value = getattr(self, kind)
        return float(getattr(self, FALLBACK[kind]) if value is None else value)

    def fallbacks(self) -> list[str]:
        """The discounted rates this model's table does not give (each priced at its live rate); one whose live
        rate is 0 is not listed (nothing to discount: a product priced per call, or free)."""
        return [f"{kind} as {FALLBACK[kind]}" for kind in FALLBACK
                if getattr(self, kind) is None and getattr(self, FALLBACK[kind])]


# Every rate a model's table may hold (per million tokens). A rate must be a finite number >= 0: NaN or
# infinity would make every cost NaN or infinite, and a NaN budget check is never true (the budget off).
RATE_FIELDS = ("input", "output", "cached_input", "cache_write", "batch_input", "batch_output", "per_call")
REQUIRED_FIELDS = ("input", "output")  # unless the table gives per_call (then each missing one is 0)
# An optional rate missing from the file is billed as the live rate it discounts (an upper bound).
FALLBACK = {"cached_input": "input", "cache_write": "input", "batch_input": "input", "batch_output": "output"}


def check_rate(path: str | Path, model: str, key: str, value: object) -> float:
    """One rate of a price file as a float; a TrustmhError naming the file, model and field unless it is a
    finite number >= 0 (a TOML boolean is not a number)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} must be a finite number >= 0, "
                           f"not {value!r}")
    return float(value)


# A price file is a few lines per model; anything larger is not one (and is not read whole).
MAX_PRICE_FILE_BYTES = 1 << 20


def load_prices(path: str | Path | None) -> dict[str, Price]:
    """A price file: TOML, one table per model (`["openai/gpt-4o-mini"]` with input and output and the optional
    discounted rates, each per million tokens). A clear error naming the file and model for anything else."""
    if path is None:
        return {}
    try:
        raw = tomllib.loads(read_text_bounded(path, MAX_PRICE_FILE_BYTES, f"--prices {path}"))
    except tomllib.TOMLDecodeError as exc:
        raise TrustmhError(f"--prices {path}: not valid TOML ({' '.join(str(exc).split())})") from None
    tables = raw.get("models", raw)
    prices: dict[str, Price] = {}
    for model, table in tables.items():
        if not isinstance(table, dict):
            continue  # top-level metadata (date, source)
        nested = sorted(k for k, v in table.items() if isinstance(v, dict))
        if nested:  # [openai.gpt-4o] is a table inside a table: the name needs quotes
            raise TrustmhError(f"--prices {path}: table {model!r} holds table(s) {nested}: quote a model name "
                               f'that has "/" or ".", e.g. ["{model}/{nested[0]}"]')
        unknown = set(table) - set(RATE_FIELDS)
        if unknown:
            raise TrustmhError(f"--prices {path}: model {model!r}: unknown field(s) {sorted(unknown)} (the fields "
                               f"are {', '.join(RATE_FIELDS)})")
        for key in REQUIRED_FIELDS:
            if key not in table and "per_call" not in table:
                raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} is missing (price per "
                                   "million tokens; or per_call, the price of one call)")
        rates = {key: 0.0 for key in REQUIRED_FIELDS} | {key: check_rate(path, str(model), key, value)
                                                          for key, value in table.items()}
        prices[str(model)] = Price(**rates)
    return prices


# The kinds of tokens a call is billed for, as results.json counts them (`trustmh.results.usage.FIELDS`):
# input and output at the live rate, the same through a batch, and input read from / written to the cache.
TOKEN_KINDS = {"input_tokens": "input", "output_tokens": "output", "batch_input_tokens": "batch_input",
               "batch_output_tokens": "batch_output", "cached_tokens": "cached_input",
               "cache_write_tokens": "cache_write"}


def cost(price: Price | None, input_tokens: float, output_tokens: float, cached_tokens: float = 0,
         cache_write_tokens: float = 0, batch: bool = False, calls: float = 0) -> float | None:
    """Dollars (or the price file's currency) for one kind of call's tokens, and `calls` of them at the
    table's `per_call`; None when the price is unknown. `input_tokens` excludes `cached_tokens` and
    `cache_write_tokens` (Inspect's convention). `batch`: the uncached input and the output are billed at the
    batch rates; cached reads and writes keep their own rates (where a provider stacks the batch discount on
    them too, this is an upper bound)."""
    if price is None:
        return None
    kind_in, kind_out = ("batch_input", "batch_output") if batch else ("input", "output")
    return (input_tokens * price.rate(kind_in) + output_tokens * price.rate(kind_out)
            + cached_tokens * price.rate("cached_input") + cache_write_tokens * price.rate("cache_write")) / 1e6 \
        + calls * price.per_call


def cost_of_counts(price: Price | None, counts: Mapping[str, float]) -> float | None:
    """The cost of counted tokens (`TOKEN_KINDS` keys, missing ones 0) and of the calls paid for (`calls` less
    `cached_calls`, at `per_call`); None when the price is unknown."""
    if price is None:
        return None
    paid = float(counts.get("calls", 0) or 0) - float(counts.get("cached_calls", 0) or 0)
    return sum(float(counts.get(key, 0) or 0) * price.rate(kind) for key, kind in TOKEN_KINDS.items()) / 1e6 \
        + max(paid, 0.0) * price.per_call


PRICE_UNKNOWN = "price unknown"
