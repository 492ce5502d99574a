"""Prices that know the discounts: batch, cached-read and cache-write rates, each optional, never silently 0."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from trustmh.core import Record, TrustmhError
from trustmh.prices import Price, cost, cost_of_counts, load_prices
from trustmh.results.usage import FIELDS, count_call, usage_rows

FULL = Price(input=10.0, output=40.0, cached_input=1.0, cache_write=12.5, batch_input=5.0, batch_output=20.0)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_every_discounted_rate_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, '["m/x"]\ninput = 10\noutput = 40\ncached_input = 1\ncache_write = 12.5\n'
                           'batch_input = 5\nbatch_output = 20\n')
    assert load_prices(path)["m/x"] == FULL


def test_a_missing_discount_falls_back_to_the_live_rate_and_says_so(tmp_path: Path) -> None:
    price = load_prices(write(tmp_path, '["m/x"]\ninput = 10\noutput = 40\n'))["m/x"]
    assert (price.rate("batch_input"), price.rate("batch_output"), price.rate("cached_input"),
            price.rate("cache_write"), price.fallbacks()) == (
        10.0, 40.0, 10.0, 10.0,
        ["cached_input as input", "cache_write as input", "batch_input as input", "batch_output as output"])


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "true", '"half"'])
def test_a_bad_batch_rate_is_one_line_naming_the_field(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f'["m/x"]\ninput = 10\noutput = 40\nbatch_input = {value}\n')
    with pytest.raises(TrustmhError, match=r"model 'm/x': field 'batch_input' must be a finite number >= 0"):
        load_prices(path)


def test_live_cost_uses_the_live_cache_read_and_cache_write_rates() -> None:
    assert cost(FULL, 1e6, 1e6, cached_tokens=1e6, cache_write_tokens=1e6) == pytest.approx(10 + 40 + 1 + 12.5)


def test_batch_cost_uses_the_batch_rates_for_uncached_input_and_output() -> None:
    assert cost(FULL, 1e6, 1e6, cached_tokens=1e6, batch=True) == pytest.approx(5 + 20 + 1)


def test_counted_tokens_are_priced_each_at_its_own_rate() -> None:
    counts = {"input_tokens": 1e6, "output_tokens": 2e6, "batch_input_tokens": 3e6, "batch_output_tokens": 4e6,
              "cached_tokens": 5e6, "cache_write_tokens": 6e6}
    assert cost_of_counts(FULL, counts) == pytest.approx(10 + 80 + 15 + 80 + 5 + 75)


def test_an_unknown_price_is_none_never_zero() -> None:
    assert cost_of_counts(None, {"batch_input_tokens": 1}) is None


def usage(inp: int, out: int, read: int = 0, write_: int = 0) -> SimpleNamespace:
    return SimpleNamespace(input_tokens=inp, output_tokens=out, input_tokens_cache_read=read,
                           input_tokens_cache_write=write_)


def test_a_batched_call_counts_its_tokens_apart_from_live_ones() -> None:
    row: dict[str, int] = {}
    count_call(row, usage(100, 10, read=50, write_=20), cached=False, batched=True)
    count_call(row, usage(7, 3), cached=False, batched=False)
    assert {k: row[k] for k in FIELDS} == {
        "calls": 2, "cached_calls": 0, "batch_calls": 1, "input_tokens": 7, "output_tokens": 3,
        "batch_input_tokens": 100, "batch_output_tokens": 10, "cached_tokens": 50, "cache_write_tokens": 20}


def test_a_response_cache_hit_adds_no_token() -> None:
    row: dict[str, int] = {}
    assert count_call(row, usage(100, 10), cached=True, batched=True) == {}


def test_results_usage_prices_batch_and_cache_tokens_at_their_rates() -> None:
    row: dict[str, int] = {}
    count_call(row, usage(1_000_000, 1_000_000, read=1_000_000, write_=1_000_000), cached=False, batched=True)
    rec = Record(subtask="s/x", item_id="1", cluster="1", response="", score={}, metadata={"usage": {"judge": {"m/x": row}}})
    data = usage_rows({"s/x": [rec]}, {"m/x": FULL})
    assert data["totals"]["cost"] == pytest.approx(5 + 20 + 1 + 12.5)
