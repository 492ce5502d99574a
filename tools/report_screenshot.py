"""Make docs/img/comparison.png: a comparison page of three synthetic runs (tests/support/synthetic_runs.py),
rendered by `trustmh report` and photographed by headless Chromium at 1400 px.

    .venv/bin/python tools/report_screenshot.py [--out docs/img/comparison.png] [--height 1500]

Needs chromium + chromedriver (tools/install_browser.sh) and selenium (dev extra)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img" / "comparison.png")
    ap.add_argument("--height", type=int, default=1500)
    args = ap.parse_args()
    from selenium import webdriver

    from synthetic_runs import three_synthetic_runs
    from trustmh.cli import main as trustmh

    with tempfile.TemporaryDirectory() as tmp:
        here = Path.cwd()
        os.chdir(tmp)  # relative run folders on the page, not a temp path
        try:
            dirs = [d.relative_to(tmp) for d in three_synthetic_runs(Path(tmp))]
            assert trustmh(["report", *map(str, dirs), "--out", "comparison.html"]) == 0
        finally:
            os.chdir(here)
        opts = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", f"--window-size=1400,{args.height}",
                    "--hide-scrollbars", "--force-device-scale-factor=1"):
            opts.add_argument(arg)
        driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(
            executable_path=shutil.which("chromedriver")))
        try:
            driver.get((Path(tmp) / "comparison.html").as_uri())
            raw = Path(tmp) / "raw.png"
            driver.save_screenshot(str(raw))
        finally:
            driver.quit()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        try:  # a palette PNG is a third of the size and looks the same for a page of flat colours
            from PIL import Image

            Image.open(raw).convert("RGB").quantize(colors=128, method=Image.Quantize.MEDIANCUT).save(
                args.out, optimize=True)
        except ImportError:
            shutil.copy(raw, args.out)
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
