"""End-to-end `trustmh align` on the released MentalAlign workbooks, cold and warm parse cache, and a
like-for-like ICC comparison with pingouin (the same cells and the same resamples on both sides).

    taskset -c 0,1 .venv/bin/python benchmarks/align_e2e.py [--data DIR] [--cells 2] [--resamples 200]

Targets (issue 14, 2 cores): faithful ≤ 2 s and default ≤ 5 s end to end with a warm cache.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np


def _default_data() -> Path:
    root = Path(__file__).resolve().parents[1]
    d = Path(os.environ.get("TRUSTMH_DATA_DIR", root.parent / "shared" / "data"))
    return (d if d.is_absolute() else root / d) / "mentalalign"


def _cli(data: Path, mode: str, out: Path, cache: Path) -> float:
    env = {**os.environ, "TRUSTMH_CACHE_DIR": str(cache)}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "trustmh.cli", "align", "--mentalalign", str(data), "--mode", mode,
                    "--out", str(out / f"{mode}.json")], env=env, check=True, capture_output=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=_default_data())
    ap.add_argument("--cells", type=int, default=2, help="cells in the like-for-like ICC comparison")
    ap.add_argument("--resamples", type=int, default=200, help="bootstrap resamples per cell, both sides")
    args = ap.parse_args()
    with contextlib.suppress(AttributeError):
        print(f"CPUs available to this process: {sorted(os.sched_getaffinity(0))}")

    with tempfile.TemporaryDirectory() as tmp:
        out, cache = Path(tmp) / "out", Path(tmp) / "cache"
        out.mkdir()
        for mode in ("faithful", "default"):
            for c in Path(cache).glob("align/*"):
                c.unlink()
            cold = _cli(args.data, mode, out, cache)
            warm = min(_cli(args.data, mode, out, cache) for _ in range(3))
            print(f"trustmh align --mode {mode}: cold cache {cold:.2f} s, warm cache {warm:.2f} s (best of 3, "
                  "whole command incl. Python start-up, HTML and CSV)")

    from trustmh.align.faithful import build_cells
    from trustmh.pillars.mentalbench.align_data import load_mentalalign
    from trustmh.stats.bootstrap import legacy_index_matrix
    from trustmh.stats.icc import icc_c1_a1

    cells = build_cells(load_mentalalign(args.data))[: args.cells]
    batches = [(c.Y, legacy_index_matrix(c.Y.shape[0], 1000, 42)[: args.resamples]) for c in cells]
    t0 = time.perf_counter()
    for Y, idx in batches:
        icc_c1_a1(Y[idx])  # all resamples of the cell in one vectorised call
    ours = time.perf_counter() - t0
    try:
        import pandas as pd
        import pingouin as pg
    except ImportError:
        print("pingouin not installed: like-for-like comparison skipped")
        return
    t0 = time.perf_counter()
    for Y, idx in batches:
        n = Y.shape[0]
        for r in idx:
            df = pd.DataFrame({"t": np.repeat(np.arange(n), 2), "r": np.tile(["h", "l"], n), "y": Y[r].ravel()})
            with warnings.catch_warnings(), contextlib.suppress(Exception):
                warnings.simplefilter("ignore")
                pg.intraclass_corr(df, targets="t", raters="r", ratings="y")
    theirs = time.perf_counter() - t0
    passes = len(batches) * args.resamples
    print(f"like for like, {len(batches)} cells × {args.resamples} resamples = {passes} ICC(C,1)+ICC(A,1) passes "
          f"on each side: ours {ours * 1000:.1f} ms, pingouin {theirs:.2f} s, ratio {theirs / ours:.0f}×")


if __name__ == "__main__":
    main()
