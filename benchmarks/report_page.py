"""Report page cost for many items: render time, page size, and (if Chromium is installed) the time the
browser takes to load it and to apply a transcript filter. Synthetic runs (tests/support/synthetic_runs.py).

    .venv/bin/python benchmarks/report_page.py [--items-per-subtask 2000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items-per-subtask", type=int, default=2000)
    args = ap.parse_args()
    from synthetic_runs import synthetic_run
    from trustmh.cli import main as trustmh

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = []
        for k, (model, skill) in enumerate([("a/one", 0.8), ("b/two", 0.6), ("c/three", 0.4)]):
            d = root / model.split("/")[1]
            synthetic_run(d, model, skill, seed=k, n=args.items_per_subtask, payload=k == 2)
            dirs.append(d)
        n_items = sum(len((d / "items.jsonl").read_text().splitlines()) for d in dirs)
        out = root / "page.html"
        t0 = time.perf_counter()
        trustmh(["report", *map(str, dirs), "--out", str(out)])
        render = time.perf_counter() - t0
        print(f"items {n_items}: render {render:.2f} s, page {out.stat().st_size / 1e6:.2f} MB "
              f"({out.stat().st_size / n_items:.0f} bytes per item)")
        if not shutil.which("chromedriver"):
            print("chromium not installed: browser timings skipped")
            return
        from selenium import webdriver
        from selenium.webdriver.common.by import By

        opts = webdriver.ChromeOptions()
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
            opts.add_argument(a)
        driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(
            executable_path=shutil.which("chromedriver")))
        try:
            t0 = time.perf_counter()
            driver.get(out.as_uri())
            load = time.perf_counter() - t0
            t0 = time.perf_counter()
            driver.find_element(By.CSS_SELECTOR, ".f-flag[value=wrong]").click()
            driver.find_element(By.ID, "t-count").text  # noqa: B018 - waits for the re-render
            flt = time.perf_counter() - t0
            print(f"browser: load {load:.2f} s, filter {flt:.3f} s (under whatever load the machine has)")
        finally:
            driver.quit()


if __name__ == "__main__":
    main()
