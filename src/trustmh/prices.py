"""Model prices: the user's price file (`--prices FILE`, docs/cost.md) and the cost of tokens. Plain Python.

A price file is TOML with one table per model, prices per million tokens; trustmh ships no prices as current
fact (examples/prices.toml is a dated example). A model missing from the file has no price: its cost is
None ("price unknown"), never 0.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from trustmh.core import TrustmhError


@dataclass(frozen=True)
class Price:
    input: float  # per million input tokens
    output: float  # per million output tokens
    cached_input: float | None = None  # per million cached input tokens (None: as input)


def load_prices(path: str | Path | None) -> dict[str, Price]:
    """A price file: TOML, one table per model (`["openai/gpt-4o-mini"]` with input, output and optional
    cached_input, each per million tokens). A clear error naming the file and model for anything else."""
    if path is None:
        return {}
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise TrustmhError(f"--prices {path}: cannot read ({exc.strerror or exc})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TrustmhError(f"--prices {path}: not valid TOML ({exc})") from None
    tables = raw.get("models", raw)
    prices: dict[str, Price] = {}
    for model, table in tables.items():
        if not isinstance(table, dict):
            continue  # top-level metadata (date, source)
        nested = sorted(k for k, v in table.items() if isinstance(v, dict))
        if nested:  # [openai.gpt-4o] is a table inside a table: the name needs quotes
            raise TrustmhError(f"--prices {path}: table {model!r} holds table(s) {nested}: quote a model name "
                               f'that has "/" or ".", e.g. ["{model}/{nested[0]}"]')
        unknown = set(table) - {"input", "output", "cached_input"}
        if unknown:
            raise TrustmhError(f"--prices {path}: model {model!r}: unknown field(s) {sorted(unknown)} (the fields "
                               "are input, output and cached_input)")
        for key in ("input", "output", "cached_input"):
            value = table.get(key)
            if key != "cached_input" and value is None:
                raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} is missing (price per "
                                   "million tokens)")
            if value is not None and (not isinstance(value, int | float) or isinstance(value, bool) or value < 0):
                raise TrustmhError(f"--prices {path}: model {model!r}: field {key!r} must be a number >= 0")
        prices[str(model)] = Price(float(table["input"]), float(table["output"]),
                                   None if table.get("cached_input") is None else float(table["cached_input"]))
    return prices


def cost(price: Price | None, input_tokens: float, output_tokens: float, cached_tokens: float = 0) -> float | None:
    """Dollars (or the price file's currency) for these tokens; None when the price is unknown.
    `input_tokens` excludes `cached_tokens` (Inspect's convention)."""
    if price is None:
        return None
    cached_rate = price.input if price.cached_input is None else price.cached_input
    return (input_tokens * price.input + output_tokens * price.output + cached_tokens * cached_rate) / 1e6


PRICE_UNKNOWN = "price unknown"
