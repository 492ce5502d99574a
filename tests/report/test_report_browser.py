"""The report in a real browser (headless Chromium through selenium): a comparison of three runs (two canned
models and the bundled model) and a single-run page render offline, their numbers equal results.json, the
transcript browser opens an item through a filter, and model output that carries markup stays text and never
runs. Screenshots are saved under pytest's tmp dir (path printed; `pytest -s` to see it).

Needs `chromium` and `chromedriver` (tools/install_browser.sh, which .ci/run calls) and selenium (dev extra);
without them these tests skip and say why."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from browser import headless_chrome
from canned import canned_model
from trustmh.cli import main

SCRIPT = "<script>window.__pwned = (window.__pwned || 0) + 1;</script>"
IMG = '<img src=x onerror="window.__pwned = (window.__pwned || 0) + 1">'
SUBTASKS = ["crisis_identification", "knowledge"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    yield from headless_chrome()


def _reply(careful: bool) -> Any:
    # one reply for both sub-tasks: the crisis parser reads the JSON label, the multiple-choice parser the letter
    if careful:
        return lambda p, m, c: '{"label": "suicidal_ideation"}\nAnswer: A'
    return lambda p, m, c: f'{SCRIPT} {IMG} {{"label": "no_crisis"}}\nAnswer: B'


def _run(out: Path, model: Any) -> Path:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    _, code = run(RunOptions(model=model, suite="starter", subtasks=SUBTASKS, out=out, display="none",
                             n_boot=200, no_judge=True))
    assert code == 0
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    root = tmp_path_factory.mktemp("browser-runs")
    careful = _run(root / "careful", canned_model(_reply(True), name="careful"))
    careless = _run(root / "careless", canned_model(_reply(False), name="careless"))
    bundled = root / "bundled"
    # the bundled model on one sub-task only (it is slow on two cores): the page must say coverage differs
    assert main(["run", "--suite", "starter", "--subtasks", "knowledge", "--limit", "2", "--out",
                 str(bundled), "--display", "none", "--n-boot", "200", "--no-judge"]) == 0
    return [careful, careless, bundled]


@pytest.fixture(scope="module")
def comparison(runs: list[Path]) -> Path:
    out = runs[0].parent / "comparison.html"
    assert main(["report", *map(str, runs), "--out", str(out)]) == 0
    return out


def _open(driver: Any, page: Path) -> None:
    driver.get(page.resolve().as_uri())
    driver.find_element("id", "leaderboard-table")


def _shot(driver: Any, path: Path) -> None:
    driver.set_window_size(1400, 1000)
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    assert path.stat().st_size > 10_000


@pytest.mark.slow
def test_comparison_renders_offline_and_output_stays_text(browser: Any, comparison: Path, runs: list[Path],
                                                          tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, comparison)
    assert len(browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")) == 3
    assert browser.find_element(By.ID, "coverage-warning").is_displayed()
    bundled_row = [r for r in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
                   if r.get_attribute("data-run") == "gguf/smollm2"][0]
    # sub-tasks covered, always visible (the bundled model's may be 0/2: a sub-task whose every rating is invalid
    # is not computed, never a worst-case figure)
    assert re.search(r"\b[0-2]/2\b", bundled_row.text)
    plots = browser.find_elements(By.CSS_SELECTOR, "svg[data-plot=dots]")
    assert plots
    assert plots[0].is_displayed()
    assert plots[0].size["height"] > 30
    assert browser.find_elements(By.CSS_SELECTOR, "svg[data-plot=pillars] rect")
    heat = browser.find_elements(By.CSS_SELECTOR, "svg[data-plot=heatmap]")
    assert heat
    assert all(h.size["width"] <= 700 for h in heat)  # fits a column
    gates = browser.find_elements(By.CSS_SELECTOR, "#gate .gate")
    assert len(gates) == 3
    assert all(g.get_attribute("data-verdict") in ("pass", "fail", "insufficient") for g in gates)

    # the transcript browser: every item, then a filter and a click open one
    total = sum(len((d / "items.jsonl").read_text().splitlines()) for d in runs)
    assert browser.find_element(By.ID, "t-count").text == f"{total} of {total} items"
    Select(browser.find_element(By.ID, "f-sub")).select_by_value("crisis/crisis_identification")
    browser.find_element(By.CSS_SELECTOR, ".f-flag[value=wrong]").click()
    rows = browser.find_elements(By.CSS_SELECTOR, "#t-body tr")
    assert rows
    assert all("wrong" in r.text for r in rows)
    careless_rows = [r for r in rows if r.text.startswith("mockllm/careless")]
    assert careless_rows, "the careless model misses crises: its wrong items are listed"
    careless_rows[0].click()
    detail = browser.find_element(By.ID, "t-detail")
    assert detail.is_displayed()
    reply = detail.find_element(By.CSS_SELECTOR, "pre.f-reply").text
    assert SCRIPT in reply  # shown as text...
    assert IMG in reply
    assert browser.execute_script("return window.__pwned") is None  # ...and never run
    assert not browser.find_elements(By.CSS_SELECTOR, "#t-detail img, #t-detail script, #t-body img")
    assert detail.find_element(By.CSS_SELECTOR, "pre.f-prompt").text.strip()
    assert detail.find_element(By.CSS_SELECTOR, "pre.f-gold").text.strip() not in ("", "—")

    # nothing was fetched: no external URL in the page, no resource loaded
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert browser.execute_script(
        "return Array.from(document.querySelectorAll('[src],[href]')).filter(e => "
        "!(e.getAttribute('href') || '').startsWith('#')).length") == 0
    _shot(browser, tmp_path / "comparison.png")


@pytest.mark.slow
def test_numbers_on_the_page_equal_results_json(browser: Any, comparison: Path, runs: list[Path]) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, comparison)
    board = json.loads(comparison.with_suffix(".json").read_text())
    for label, run_dir in zip(board["models"], runs, strict=True):
        results = json.loads((run_dir / "results.json").read_text())
        checked = 0
        for sid, sub in results["subtasks"].items():
            cells = [c for c in browser.find_elements(By.CSS_SELECTOR, f"#subtask-table tr[data-subtask='{sid}'] td")
                     if c.get_attribute("data-run") == label]
            assert len(cells) == 1, (label, sid)  # a sub-task a run lacks shows "not run", unlabelled
            if sub["status"] == "ok" and sub["value"] is not None:
                assert float(cells[0].get_attribute("data-value")) == sub["value"]
                assert f"{sub['value']:.3f}" in cells[0].text
                assert f"n {sub['n']}" in cells[0].text
                checked += 1
            else:
                assert "not computed" in cells[0].text
        row = [r for r in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")
               if r.get_attribute("data-run") == label][0]
        overall = row.find_element(By.CSS_SELECTOR, "td[data-metric=overall]")
        expected = results["overall"]["normalised"]
        assert overall.text == ("—" if expected is None else f"{expected:.3f}")
        assert checked or label.startswith("gguf/"), f"{label}: no number checked"


@pytest.mark.slow
def test_leaderboard_sorts(browser: Any, comparison: Path) -> None:
    from selenium.webdriver.common.by import By

    _open(browser, comparison)
    head = browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table thead th")[1]  # overall
    head.click()
    values = [r.find_element(By.CSS_SELECTOR, "td[data-metric=overall]").get_attribute("data-v")
              for r in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")]
    nums = [float(v) for v in values if v]
    assert nums == sorted(nums)
    assert head.get_attribute("aria-sort") == "ascending"
    head.click()
    values = [r.find_element(By.CSS_SELECTOR, "td[data-metric=overall]").get_attribute("data-v")
              for r in browser.find_elements(By.CSS_SELECTOR, "#leaderboard-table tbody tr")]
    nums = [float(v) for v in values if v]
    assert nums == sorted(nums, reverse=True)


@pytest.mark.slow
def test_single_run_report_uses_the_same_page(browser: Any, runs: list[Path], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    page = runs[1] / "report.html"  # written by `trustmh run`, from the records in memory
    _open(browser, page)
    n = len((runs[1] / "items.jsonl").read_text().splitlines())
    assert browser.find_element(By.ID, "t-count").text == f"{n} of {n} items"
    assert browser.find_elements(By.CSS_SELECTOR, "svg[data-plot=dots]")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#gate .gate")) == 1
    assert browser.execute_script("return window.__pwned") is None
    _shot(browser, tmp_path / "run.png")


@pytest.mark.slow  # end-to-end: the page in headless Chromium, whose start-up alone is seconds of CPU
def test_conversation_turns_show_turn_by_turn(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    from synthetic_runs import synthetic_run

    synthetic_run(tmp_path / "conv", "example/careless-model", 0.4, payload=True)
    out = tmp_path / "conv.html"
    assert main(["report", str(tmp_path / "conv"), "--out", str(out)]) == 0
    _open(browser, out)
    browser.find_element(By.ID, "f-text").send_keys("knowledge question 0:")  # the first item, which carries the turns
    first = browser.find_elements(By.CSS_SELECTOR, "#t-body tr")[0]
    first.click()
    turns = browser.find_elements(By.CSS_SELECTOR, "#t-detail .turn")
    assert len(turns) == 3
    assert "<script>" in turns[1].find_element(By.CSS_SELECTOR, "pre").text
    assert "missed_cue" in turns[1].text
    assert "assistant" in turns[1].text
    assert browser.execute_script("return window.__pwned") is None
