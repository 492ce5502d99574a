"""`trustmh plan --model http/NAME`: with the documented price-file entry for the product (docs/cost.md#product,
zero allowed) every scenario has a total; without it the total says how to give the product's own cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.cli import main

ENDPOINT = '''url = "http://127.0.0.1:9/chat"
[body]
messages = "{{messages}}"
[reply]
path = "reply"
'''


def _plan(tmp_path: Path, capsys: pytest.CaptureFixture[str], prices: str) -> str:
    (tmp_path / "acme.toml").write_text(ENDPOINT, encoding="utf-8")
    (tmp_path / "prices.toml").write_text(prices, encoding="utf-8")
    code = main(["plan", "--model", "http/acme", "--endpoint", str(tmp_path / "acme.toml"), "--subtasks",
                 "conversation/credentials", "--prices", str(tmp_path / "prices.toml"), "--out", str(tmp_path / "plan")])
    assert code == 0
    return capsys.readouterr().out


def test_every_scenario_has_a_total_with_the_products_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _plan(tmp_path, capsys, '["http/acme"]\ninput = 0\noutput = 0\n')
    scenarios = [line for line in out.splitlines() if line.strip().split(" ")[0] in ("live", "batch", "cache", "batch+cache")]
    assert (len(scenarios), [s for s in scenarios if "unknown" in s]) == (4, [])


def test_without_the_entry_the_total_says_how_to_price_the_product(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = _plan(tmp_path, capsys, '["openai/gpt-4o-mini"]\ninput = 1\noutput = 1\n')
    assert '["http/acme"] table in the price file' in out


# --------------------------------------------------------------------------- a product priced per call
PER_CALL = '["http/acme"]\nper_call = 0.01\n'


def test_a_product_priced_per_call_is_priced_at_its_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    _plan(tmp_path, capsys, PER_CALL)
    totals = json.loads((tmp_path / "plan" / "plan.json").read_text())["totals"]
    assert totals["cost"]["expected"] == pytest.approx(0.01 * totals["calls"]["min"])


def test_a_per_call_table_needs_no_token_rates_and_lists_no_fallback(tmp_path: Path) -> None:
    from trustmh.prices import Price, load_prices

    (tmp_path / "prices.toml").write_text(PER_CALL, encoding="utf-8")
    price = load_prices(tmp_path / "prices.toml")["http/acme"]
    assert (price, price.fallbacks()) == (Price(input=0.0, output=0.0, per_call=0.01), [])


def test_a_negative_per_call_price_is_one_line_naming_the_field(tmp_path: Path) -> None:
    from trustmh.core import TrustmhError
    from trustmh.prices import load_prices

    (tmp_path / "prices.toml").write_text('["http/acme"]\nper_call = -1\n', encoding="utf-8")
    with pytest.raises(TrustmhError, match="model 'http/acme': field 'per_call' must be a finite number >= 0"):
        load_prices(tmp_path / "prices.toml")


def test_the_runs_spend_counts_each_call_answered_and_not_the_cached_ones() -> None:
    from trustmh.core import Record
    from trustmh.prices import Price
    from trustmh.results.usage import usage_rows

    counts = {"calls": 5, "cached_calls": 2}  # an endpoint that reports no tokens
    rec = Record(subtask="conversation/credentials", item_id="a", cluster="a", response="", score={},
                 metadata={"usage": {"model": {"http/acme": counts}}})
    usage = usage_rows({"conversation/credentials": [rec]}, {"http/acme": Price(input=0, output=0, per_call=0.5)})
    assert usage["totals"]["cost"] == pytest.approx(1.5)


def test_the_budget_is_charged_per_call_for_a_call_without_token_counts() -> None:
    from trustmh.prices import Price
    from trustmh.results.usage import count_call
    from trustmh.run.budget import Budget

    budget = Budget(amount=1.0, prices={"http/acme": Price(input=0, output=0, per_call=0.25)})
    budget.charge("http/acme", count_call({}, None, cached=False, batched=False))
    assert budget.spent == pytest.approx(0.25)


def test_a_call_answered_by_the_cache_charges_nothing() -> None:
    from trustmh.prices import Price
    from trustmh.results.usage import count_call
    from trustmh.run.budget import Budget

    budget = Budget(amount=1.0, prices={"http/acme": Price(input=0, output=0, per_call=0.25)})
    budget.charge("http/acme", count_call({}, None, cached=True, batched=False))
    assert budget.spent == 0.0


def test_a_calls_reservation_includes_its_price() -> None:
    from trustmh.prices import Price
    from trustmh.run.budget import Budget

    budget = Budget(amount=1.0, prices={"http/acme": Price(input=0, output=0, per_call=0.25)})
    assert budget.planned("http/acme", 1000, 100) == pytest.approx(0.25)
