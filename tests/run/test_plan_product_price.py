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
