"""Headless Chromium for the pages' browser tests: one place that finds the browser, its driver and selenium, and
skips with the fix when one is missing (tools/install_browser.sh, which .ci/run calls, installs them)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

INSTALL = "run tools/install_browser.sh (apt-get install chromium chromium-driver)"


def chromium_binary() -> str:
    """The Chromium executable, or a skip naming how to install it."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip(f"headless Chromium is not installed: {INSTALL}")
    return found


def headless_chrome() -> Iterator[Any]:
    """A selenium driver on headless Chromium (1400×1000, scrollbars hidden), quit when the generator closes; a
    module-scoped fixture yields from it."""
    try:
        from selenium import webdriver
    except ImportError:
        pytest.skip("selenium is not installed (pip install -e '.[dev]')")
    chromium = chromium_binary()
    driver_path = shutil.which("chromedriver")
    if not driver_path:
        pytest.skip(f"chromedriver is not installed: {INSTALL}")
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--hide-scrollbars"):
        opts.add_argument(arg)
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=driver_path))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
