"""The shipped example price file (examples/prices.toml) prices the README's command: `trustmh plan` with
openai/gpt-4o-mini under test, anthropic/claude-sonnet-4-5 as judge and --batch prices every discount scenario,
and its headline total is the batch one (offline: the starter suite's items ship with trustmh)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from trustmh.cli import main
from trustmh.discounts import SCENARIOS
from trustmh.prices import load_prices

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "prices.toml"
MODEL, JUDGE = "openai/gpt-4o-mini", "anthropic/claude-sonnet-4-5"


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp("plan")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["plan", "--model", MODEL, "--judge", JUDGE, "--batch", "--prices", str(EXAMPLE),
                     "--suite", "starter", "--out", str(out)])
    assert code == 0
    return json.loads((out / "plan.json").read_text()), text.getvalue()


@pytest.mark.parametrize("model", [MODEL, JUDGE])
def test_the_example_file_gives_every_rate_of_the_readmes_models(model: str) -> None:
    assert load_prices(EXAMPLE)[model].fallbacks() == []


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_is_priced(planned: tuple[dict[str, Any], str], scenario: str) -> None:
    assert planned[0]["totals"]["cost_scenarios"][scenario] is not None


def test_the_headline_total_is_the_batch_scenario(planned: tuple[dict[str, Any], str]) -> None:
    totals = planned[0]["totals"]
    assert (totals["cost"]["expected"], totals["cost"]["basis"]) == (
        totals["cost_scenarios"]["batch"]["expected"], "batch")


def test_batch_costs_less_than_live(planned: tuple[dict[str, Any], str]) -> None:
    totals = planned[0]["totals"]
    assert totals["cost"]["expected"] < totals["cost_live"]["expected"]


def test_the_total_line_says_batch_with_live_beside(planned: tuple[dict[str, Any], str]) -> None:
    total = next(line for line in planned[1].splitlines() if line.startswith("total:"))
    assert "cost at batch rates" in total and "(live " in total


def test_nothing_is_price_unknown(planned: tuple[dict[str, Any], str]) -> None:
    assert "price unknown" not in planned[1]
