"""Price files (issue 34): every rate is a finite number >= 0, whatever the field is called. A NaN rate made
every cost NaN, and a NaN budget check is never true: the budget was off."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.prices import RATE_FIELDS, check_rate, cost, load_prices

MODEL = '["openai/gpt-x"]\n'
BAD_VALUES = ("nan", "inf", "-inf", "-0.5", "true", '"0.1"')


def _file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(MODEL + body + "\n", encoding="utf-8")
    return path


def _table(field: str, value: str) -> str:
    rates = {"input": "1.0", "output": "2.0"} | {field: value}
    return "\n".join(f"{k} = {v}" for k, v in rates.items())


@pytest.mark.parametrize("field", RATE_FIELDS)
@pytest.mark.parametrize("value", BAD_VALUES)
def test_a_rate_that_is_not_a_finite_number_at_least_0_is_refused(field: str, value: str, tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match=f"model 'openai/gpt-x': field '{field}' must be a finite number >= 0"):
        load_prices(_file(tmp_path, _table(field, value)))


def test_every_rate_field_goes_through_one_check() -> None:
    """A rate field added later (batch, cache-write…) is checked by the same function, whatever its name."""
    with pytest.raises(TrustmhError, match="field 'batch_input' must be a finite number >= 0"):
        check_rate("p.toml", "m", "batch_input", float("nan"))


def test_a_valid_file_still_loads(tmp_path: Path) -> None:
    assert load_prices(_file(tmp_path, _table("cached_input", "0.5")))["openai/gpt-x"].cached_input == 0.5


def test_zero_is_a_price(tmp_path: Path) -> None:
    assert load_prices(_file(tmp_path, _table("input", "0")))["openai/gpt-x"].input == 0.0


def test_a_cost_from_a_loaded_file_is_finite(tmp_path: Path) -> None:
    price = load_prices(_file(tmp_path, _table("input", "1e300")))["openai/gpt-x"]
    assert math.isfinite(cost(price, 1000, 1000) or 0.0)


def test_a_price_file_that_is_a_device_is_refused_before_it_is_read() -> None:
    with pytest.raises(TrustmhError, match="not a regular file"):
        load_prices("/dev/zero")
