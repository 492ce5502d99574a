"""The human-norms chart in a real browser (issue 42): a run whose SIRI-2 total (244.32, an all-wrong model) lies
far past the 0-110 axis, beside every published group of the norms table.

* through selenium (headless Chromium and chromedriver): every group label lies whole inside the picture as the
  browser lays it out, the off-scale total is marked with its value, the legend tells this run, the published
  human groups and the published LLM results apart, and the chart's screenshot is not blank;
* through `chromium --headless --screenshot` alone (no driver): the chart is drawn, with the LLM results' colour
  and the run's off-scale marker at the axis' right end.

Without Chromium (or chromedriver, or selenium, for the first) these tests skip and say why; tools/install_browser.sh
installs them. Screenshots are saved under pytest's tmp dir (path printed; `pytest -s` to see it)."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from browser import chromium_binary, headless_chrome
from synthetic_runs import synthetic_run
from trustmh.cli import main
from trustmh.pillars.clinical.norms import norms_json
from trustmh.report.layout import PALETTE
from trustmh.report.norms import HUMAN, LLM, PURPLE, siri2_view

# end-to-end: headless Chromium (selenium, and a screenshot run) lays the chart out; its setup is about 12 s of CPU
pytestmark = pytest.mark.slow

OFF_SCALE = 244.32
MODEL = "example/<b>all-wrong</b>"


def _siri2(value: float) -> dict[str, Any]:
    return {"value": value, "ci": [223.5, 261.4], "n": 48, "n_invalid": 0, "direction": "lower", "status": "ok",
            "method": "rule", "small_n": False, "reason": None, "notes": [],
            "metrics": {"expert_floor": 32.5, "human_norms": norms_json()}}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("norms-page")
    synthetic_run(root / "run", MODEL, 0.5)
    results = json.loads((root / "run" / "results.json").read_text())
    results["subtasks"]["clinical/siri2"] = _siri2(OFF_SCALE)
    (root / "run" / "results.json").write_text(json.dumps(results), encoding="utf-8")
    assert main(["report", str(root / "run"), "--out", str(root / "report.html")]) == 0
    return root / "report.html"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from headless_chrome()


@pytest.fixture(scope="module")
def chart(browser: Any, page: Path) -> Any:
    from selenium.webdriver.common.by import By

    browser.get(page.resolve().as_uri())
    return browser.find_element(By.CSS_SELECTOR, "#human-norms svg")


def test_every_label_lies_whole_inside_the_chart(browser: Any, chart: Any) -> None:
    # getBBox is in the picture's own coordinates: what the browser's font really needs
    boxes = browser.execute_script(
        "const svg = arguments[0]; return Array.from(svg.querySelectorAll('text')).map(t => {"
        "const b = t.getBBox(); return [b.x, b.x + b.width, svg.width.baseVal.value]; });", chart)
    assert (min(x for x, _, _ in boxes) >= 0, max(r - w for _, r, w in boxes) <= 0) == (True, True)


def test_the_off_scale_total_is_marked_with_its_value(chart: Any) -> None:
    from selenium.webdriver.common.by import By

    marks = chart.find_elements(By.CSS_SELECTOR, "g[data-offscale]")
    assert [(m.is_displayed(), "off scale: 244.3" in m.text) for m in marks] == [(True, True)]


def test_the_legend_tells_this_run_human_groups_and_llm_results_apart(chart: Any) -> None:
    from selenium.webdriver.common.by import By

    legend = {g.get_attribute("data-legend") for g in chart.find_elements(By.CSS_SELECTOR, "g[data-legend]")}
    assert {"this run", HUMAN, LLM} <= legend


def test_the_model_name_stays_text(browser: Any, chart: Any) -> None:
    from selenium.webdriver.common.by import By

    assert (MODEL in chart.text, chart.find_elements(By.CSS_SELECTOR, "b")) == (True, [])


def test_the_charts_screenshot_is_not_blank(chart: Any, tmp_path: Path) -> None:
    from PIL import Image

    chart.location_once_scrolled_into_view  # noqa: B018  (scrolls the chart into the window)
    png = chart.screenshot_as_png
    (tmp_path / "norms-chart.png").write_bytes(png)
    print(f"screenshot: {tmp_path / 'norms-chart.png'}")
    grey = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    assert (grey < 200).mean() > 0.01


def _colour_columns(image: Any, colour: str) -> list[int]:
    """The x of every pixel of exactly this colour ("#rrggbb")."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return [int(x) for x in np.nonzero((np.asarray(image)[:, :, :3] == rgb).all(axis=2))[1]]


def test_chromium_screenshot_draws_llm_results_and_the_off_scale_marker(tmp_path: Path) -> None:
    from PIL import Image

    chromium = chromium_binary()
    run_colour = PALETTE[0]
    svg = siri2_view([(MODEL, run_colour, {"subtasks": {"clinical/siri2": _siri2(OFF_SCALE)}})]) or ""
    (tmp_path / "chart.html").write_text(f"<!doctype html><body style='margin:0;background:#fff'>{svg}</body>",
                                         encoding="utf-8")
    shot = tmp_path / "chart.png"
    done = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1200,700",
                           (tmp_path / "chart.html").resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert shot.is_file(), done.stderr[-2000:]
    print(f"screenshot: {shot}")
    image = Image.open(shot).convert("RGB")
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    marker = _colour_columns(image, run_colour)
    assert (bool(_colour_columns(image, PURPLE)), bool(marker) and max(marker) > 0.9 * width) == (True, True)
