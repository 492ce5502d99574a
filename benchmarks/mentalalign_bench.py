"""Time the full `faithful` MentalAlign analysis from parsed ratings in memory (MENTALBENCH.md §6).

    taskset -c 0,1 .venv/bin/python benchmarks/mentalalign_bench.py [--data DIR] [--pingouin-cells N]

Ours: model-level matrices, ICC(C,1)/ICC(A,1) with the 1000-replicate legacy bootstrap for both forms,
pooled-pair statistics and categories for all 28 cells (xlsx loading is cached and not counted; the
legacy index matrix is built once per process, as in a real run, and its build time is printed apart).
Reference: `pingouin.intraclass_corr` per resample (both forms come from one call) on a subset of cells,
scaled up to 28 cells. BLAS/OpenMP threads are set to 2 before numpy is imported.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "2"

import argparse  # noqa: E402
import contextlib  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402


def _default_data() -> Path:
    root = Path(__file__).resolve().parents[1]
    d = Path(os.environ.get("TRUSTMH_DATA_DIR", root.parent / "shared" / "data"))
    return (d if d.is_absolute() else root / d) / "mentalalign"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", type=Path, default=_default_data())
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--pingouin-cells", type=int, default=1, help="cells timed with pingouin (scaled to 28)")
    ap.add_argument("--pingouin-resamples", type=int, default=100, help="resamples per pingouin cell (scaled)")
    args = ap.parse_args()

    from trustmh.align.faithful import build_cells, run_faithful
    from trustmh.pillars.mentalbench.align_data import load_mentalalign
    from trustmh.stats.bootstrap import legacy_index_matrix

    t0 = time.perf_counter()
    data = load_mentalalign(args.data)
    print(f"load + parse xlsx (not counted): {time.perf_counter() - t0:.2f} s")
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:
        affinity = []
    print(f"CPUs available to this process: {affinity}")

    t0 = time.perf_counter()
    legacy_index_matrix(9, 1000, 42)
    print(f"legacy index matrix (1000 × 9, built once, cached): {time.perf_counter() - t0:.4f} s")

    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        cells = build_cells(data)
        res = run_faithful(data, seed=42, n_boot=1000, cells=cells)
        times.append(time.perf_counter() - t0)
    ours = min(times)
    print(f"ours, 28 cells, full faithful analysis: best {ours:.4f} s, median {np.median(times):.4f} s "
          f"over {args.repeats} runs")

    try:
        import pandas as pd
        import pingouin as pg
    except ImportError:
        print("pingouin not installed: reference timing skipped")
        return
    from trustmh.stats.bootstrap import legacy_index_matrix as lim

    sub = res["cells"][: args.pingouin_cells]
    n_res = args.pingouin_resamples
    t0 = time.perf_counter()
    for cell in sub:
        Y = cell.Y
        n = Y.shape[0]
        idx = lim(n, 1000, 42)[:n_res]
        for r in idx:
            Yb = Y[r]
            df = pd.DataFrame({"t": np.repeat(np.arange(n), 2), "r": np.tile(["h", "l"], n), "y": Yb.ravel()})
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # Degenerate resamples can fail inside pingouin; they are still timed.
                with contextlib.suppress(Exception):
                    pg.intraclass_corr(df, targets="t", raters="r", ratings="y")
    elapsed = time.perf_counter() - t0
    per_call = elapsed / (len(sub) * n_res)
    scaled = per_call * 28 * 1000
    print(f"pingouin.intraclass_corr per resample: {per_call * 1000:.2f} ms/call "
          f"({len(sub)} cell(s) × {n_res} resamples timed), scaled to 28 × 1000: {scaled:.1f} s")
    print(f"speed-up: {scaled / ours:.0f}×")


if __name__ == "__main__":
    main()
