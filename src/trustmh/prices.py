"""Model prices: the user's price file (`--prices FILE`, docs/cost.md) and the cost of tokens. Plain Python.

A price file is TOML with one table per model, prices per million tokens; trustmh ships no prices as current
fact (examples/prices.toml is a dated example). A model missing from the file has no price: its cost is
None ("price unknown"), never 0.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from trustmh.core import TrustmhError
from trustmh.data.files import read_text_bounded


@dataclass(frozen=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens
    cached_input: float | None = None  # per million cached input tokens (None: as input)


# Every rate a model's table may hold (per million tokens). A rate must be a finite number >= 0: NaN or
# infinity would make every cost NaN or infinite, and a NaN budget check is never true (the budget off).
RATE_FIELDS = ("input", "output", "cached_input")
REQUIRED_FIELDS = ("input", "output")
# A price file is a few lines per model; anything larger is not one (and is not read whole).
MAX_PRICE_FILE_BYTES = 1 << 20


def check_rate(path: str | Path, model: str, key: str, value: object) -> float:
    """One rate of a price file as a float; a TrustmhError naming the file, model and field unless it is a
    finite number >= 0 (a TOML boolean is not a number)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} must be a finite number >= 0, "
                           f"not {value!r}")
    return float(value)


def load_prices(path: str | Path | None) -> dict[str, Price]:
    """A price file: TOML, one table per model (`["openai/gpt-4o-mini"]` with input, output and optional
    cached_input, each per million tokens). A clear error naming the file and model for anything else."""
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
            if key not in table:
                raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} is missing (price per "
                                   "million tokens)")
        rates = {key: check_rate(path, str(model), key, value) for key, value in table.items()}
        prices[str(model)] = Price(**rates)
    return prices


def cost(price: Price | None, input_tokens: float, output_tokens: float, cached_tokens: float = 0) -> float | None:
    """Dollars (or the price file's currency) for these tokens; None when the price is unknown.
    `input_tokens` excludes `cached_tokens` (Inspect's convention)."""
    if price is None:
        return None
    cached_rate = price.input if price.cached_input is None else price.cached_input
    return (input_tokens * price.input + output_tokens * price.output + cached_tokens * cached_rate) / 1e6


PRICE_UNKNOWN = "price unknown"
