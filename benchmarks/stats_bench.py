"""Timings of the statistics library (MENTALBENCH.md §6). Run: taskset -c 0,1 .venv/bin/python benchmarks/stats_bench.py

Synthetic data only. Prints seconds per step and the speed-up of the vectorised faithful bootstrap over
pingouin called once per resample (timed on a small subset and scaled to 28 × 1000 calls).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "2")

import time  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from trustmh.stats import agreement, bootstrap, icc  # noqa: E402

N_CELLS, N_SOURCES, B = 28, 9, 1000
PINGOUIN_SUBSET = 60  # resamples timed with pingouin, then scaled


def _best(fn, repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    rng = np.random.default_rng(0)
    Y = rng.uniform(1, 5, size=(N_CELLS, N_SOURCES, 1)) + rng.normal(0, 0.3, size=(N_CELLS, N_SOURCES, 2))

    def build_uncached() -> None:
        bootstrap._legacy_index_matrix.cache_clear()
        bootstrap.legacy_index_matrix(N_SOURCES, B, 42)

    t_index = _best(build_uncached)
    bootstrap.legacy_index_matrix(N_SOURCES, B, 42)
    t_vec = _best(lambda: icc.icc_c1_a1(Y[:, bootstrap.legacy_index_matrix(N_SOURCES, B, 42), :]))
    t_faithful = _best(lambda: icc.faithful_bootstrap(Y))

    import pingouin as pg

    idx = bootstrap.legacy_index_matrix(N_SOURCES, B, 42)

    def pingouin_subset() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for b in range(PINGOUIN_SUBSET):
                m = Y[b % N_CELLS][idx[b]]
                long = pd.DataFrame({"t": np.repeat(np.arange(N_SOURCES), 2), "r": np.tile([0, 1], N_SOURCES),
                                     "y": m.ravel()})
                # Unique targets per resample would collapse duplicates; pingouin needs distinct ids.
                pg.intraclass_corr(data=long, targets="t", raters="r", ratings="y")

    t_pg = _best(pingouin_subset, repeat=1) / PINGOUIN_SUBSET * N_CELLS * B

    # default mode: cluster bootstrap from sufficient statistics, 1000 conversations × 9 sources.
    n_conv = 1000
    per = np.zeros((n_conv, 6))
    h = rng.integers(1, 6, size=(n_conv, N_SOURCES)).astype(float)
    llm = np.clip(h + rng.integers(-1, 2, size=h.shape), 1, 5)
    np.add.at(per, np.repeat(np.arange(n_conv), N_SOURCES), icc.pair_sums(h.ravel(), llm.ravel()))
    tables = np.zeros((n_conv, 5, 5))
    np.add.at(tables, (np.repeat(np.arange(n_conv), N_SOURCES), h.ravel().astype(int) - 1,
                       llm.ravel().astype(int) - 1), 1.0)

    def cluster() -> None:
        W = bootstrap.cluster_draw_counts(n_conv, B, 7)
        T = W @ per
        icc.icc_k2_from_sum_matrix(T)
        tab = (W @ tables.reshape(n_conv, 25)).reshape(B, 5, 5)
        agreement.kripp_alpha_ordinal_from_counts(tab)
        agreement.cohen_kappa_from_table(tab, "quadratic")
        agreement.cohen_kappa_from_table(tab, "linear")

    t_cluster = _best(cluster)

    print(f"legacy index matrix (9 x 1000), uncached      {t_index * 1e3:8.2f} ms")
    print(f"28 cells x 1000 resamples, both ICCs (cached) {t_vec * 1e3:8.2f} ms")
    print(f"faithful_bootstrap, 28 cells incl. CIs        {t_faithful * 1e3:8.2f} ms")
    print(f"pingouin per resample, scaled to 28 x 1000    {t_pg:8.2f} s   ({PINGOUIN_SUBSET} timed)")
    print(f"speed-up (pingouin / vectorised incl. index)  {t_pg / (t_vec + t_index):8.0f} x")
    print(f"cluster bootstrap 1000 x 1000: ICCs, alpha, kappa x2 {t_cluster * 1e3:8.2f} ms")


if __name__ == "__main__":
    main()
