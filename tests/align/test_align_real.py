"""`trustmh align` on the real MentalAlign workbooks (skipped when the data are absent)."""
# ruff: noqa: E741 - `h`/`l` (human/LLM) are the spec's names (docs/align.md#align)

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest

from fixture_paths import REPO
from trustmh.align import load_mentalalign, run_align
from trustmh.align.faithful import CATEGORY_CUTOFFS, category_of
from trustmh.pillars.mentalbench.align_data import SOURCES
from trustmh.stats.icc import icc_a1 as ICC_A1
from trustmh.stats.icc import icc_c1 as ICC_C1

ROOT = REPO


def _mentalalign_dir() -> Path:
    d = Path(os.environ.get("TRUSTMH_DATA_DIR", ROOT.parent / "shared" / "data"))
    if not d.is_absolute():
        d = ROOT / d
    return d / "mentalalign"


pytestmark = pytest.mark.skipif(not (_mentalalign_dir() / "Human_Judge" / "Human_judge.xlsx").exists(),
                                reason="MentalAlign data not available")

EXCLUDED = {"claude": "claude", "gemini": "gemini", "gpt-4o": "gpt4o", "o4-mini": "gpt4omini"}


@pytest.fixture(scope="module")
def data():
    return load_mentalalign(_mentalalign_dir())


@pytest.fixture(scope="module")
def faithful(data):
    return run_align(data, mode="faithful", seed=42, stability_seeds=5, keep_internals=True)


@pytest.fixture(scope="module")
def default(data):
    return run_align(data, mode="default", seed=42, stability_seeds=3, keep_internals=True)


# ------------------------------------------------------------------------------------------ data facts

def test_data_facts(data):
    from trustmh.align import data_facts

    f = data_facts(data)
    assert [f["strict_failures"][j] for j in ("claude", "gemini", "gpt-4o", "o4-mini")] == [7, 8, 0, 4]
    assert [f["unscored_after_robust"][j] for j in ("claude", "gemini", "gpt-4o", "o4-mini")] == [1, 7, 0, 1]
    assert f["human_empty_cells"] == 57
    assert f["human_nulls"] == 10
    assert f["human_zeros"] == 231
    assert f["human_zero_cells"] == 33
    assert f["human_sixes"] == 8
    assert f["context_mismatches"] == 21
    assert f["context_mismatches_substantive"] == 19
    assert {"164", "501", "535", "717"} <= set(f["misaligned_items"])
    assert "42" not in f["misaligned_items"]


# ------------------------------------------------------------------------------------- faithful, consistency

def test_faithful_cells_consistent(data, faithful):
    cells = faithful["cells"]
    assert len(cells) == 28
    H = data.human.strict
    for c in cells:
        j = c["judge"]
        cell = next(x for x in faithful["_internals"]["cells"] if x.judge == j and x.attribute == c["attribute"])
        assert c["n_sources"] == 9
        assert len(cell.sources) == 9
        assert EXCLUDED[j] not in cell.sources
        assert "original" in cell.sources
        assert cell.sources == [s for s in SOURCES if s != EXCLUDED[j]]  # the §4.2 order
        a = data.attributes.index(c["attribute"])
        L = data.judges[j].strict
        keep = [SOURCES.index(s) for s in cell.sources]
        both = np.isfinite(H[:, keep, a]) & np.isfinite(L[:, keep, a])
        assert c["n_pairs"] == int(both.sum())
        assert c["c1_width"] == pytest.approx(c["c1_hi"] - c["c1_lo"], abs=1e-15)
        w = round(c["c1_width"], 3)
        assert c["category"] == ("good" if w <= CATEGORY_CUTOFFS[0] else
                                 "moderate" if w <= CATEGORY_CUTOFFS[1] else "limited")
        assert c["category"] == category_of(c["c1_width_rounded"])
        assert c["near_cutoff"] == any(abs(c["c1_width"] - k) < 0.01 for k in CATEGORY_CUTOFFS)
        assert c["n_boot_valid_c1"] >= 10
        assert c["n_boot_valid_a1"] >= 10
        # pooled-pair bias vs model-mean bias are labelled apart and differ in general
        hv = np.concatenate([H[both[:, i], s, a] for i, s in enumerate(keep)])
        lv = np.concatenate([L[both[:, i], s, a] for i, s in enumerate(keep)])
        assert c["bias"] == pytest.approx(float(np.mean(lv - hv)), abs=1e-12)
        assert c["model_means_bias"] == pytest.approx(float(np.mean(cell.Y[:, 1] - cell.Y[:, 0])), abs=1e-12)
        sh, sl = hv.std(ddof=1), lv.std(ddof=1)
        r = np.corrcoef(hv, lv)[0, 1]
        assert c["ccc"] == pytest.approx(2 * r * sh * sl / (sh**2 + sl**2 + (lv.mean() - hv.mean()) ** 2),
                                         abs=1e-12)
        sd = (lv - hv).std(ddof=1)
        assert c["loa_lo"] == pytest.approx(c["bias"] - 1.96 * sd, abs=1e-12)
    tc = faithful["tertile_cutoffs"]["recomputed"]
    widths = [c["c1_width_rounded"] for c in cells]
    assert tc == pytest.approx(list(np.percentile(widths, [33, 67])))


def _legacy_loop(Y: np.ndarray, B: int = 1000):
    """A literal transcription of the §4.2.1 recipe (global legacy RNG)."""
    state = np.random.get_state()
    try:
        np.random.seed(42)
        seeds = np.random.randint(0, 100000, B)
        n = Y.shape[0]
        C, A, kept_c, kept_a = [], [], [], []
        for b, s in enumerate(seeds):
            np.random.seed(s)
            idx = np.random.choice(n, size=n, replace=True)
            c, a = ICC_C1(Y[idx]), ICC_A1(Y[idx])
            if math.isnan(c) or math.isnan(a):
                continue
            if math.isfinite(c) and 0 <= c <= 1:
                C.append(c)
                kept_c.append(b)
            if math.isfinite(a) and 0 <= a <= 1:
                A.append(a)
                kept_a.append(b)
        ci_c = np.percentile(C, [2.5, 97.5]) if len(C) >= 10 else (math.nan, math.nan)
        ci_a = np.percentile(A, [2.5, 97.5]) if len(A) >= 10 else (math.nan, math.nan)
        return np.array(C), np.array(A), kept_c, kept_a, ci_c, ci_a
    finally:
        np.random.set_state(state)


@pytest.mark.parametrize("k", range(28))  # §5 item 3: all 28 cells
def test_vectorised_bootstrap_equals_loop(faithful, k):
    cell = faithful["_internals"]["cells"][k]
    row = faithful["cells"][k]
    C, A, kept_c, kept_a, ci_c, ci_a = _legacy_loop(cell.Y)
    assert np.flatnonzero(np.isfinite(cell.c_reps)).tolist() == kept_c
    assert np.flatnonzero(np.isfinite(cell.a_reps)).tolist() == kept_a
    np.testing.assert_allclose(cell.c_reps[kept_c], C, rtol=0, atol=1e-12)
    np.testing.assert_allclose(cell.a_reps[kept_a], A, rtol=0, atol=1e-12)
    assert row["c1_lo"] == pytest.approx(ci_c[0], abs=1e-12)
    assert row["c1_hi"] == pytest.approx(ci_c[1], abs=1e-12)
    assert row["a1_lo"] == pytest.approx(ci_a[0], abs=1e-12)
    assert row["a1_hi"] == pytest.approx(ci_a[1], abs=1e-12)
    assert row["n_boot_valid_c1"] == len(kept_c)
    assert row["n_boot_valid_a1"] == len(kept_a)


def _pingouin(Y: np.ndarray):
    pg = pytest.importorskip("pingouin")
    import pandas as pd

    n = Y.shape[0]
    df = pd.DataFrame({"t": np.repeat(np.arange(n), 2), "r": np.tile(["h", "l"], n), "y": Y.ravel()})
    out = pg.intraclass_corr(df, targets="t", raters="r", ratings="y").set_index("Type")
    # pingouin 0.7 labels the rows ICC(A,1)/ICC(C,1); older releases ICC2/ICC3.
    return out.rename(index={"ICC(A,1)": "ICC2", "ICC(C,1)": "ICC3"})


def test_faithful_icc_equals_pingouin(faithful):
    for cell, row in zip(faithful["_internals"]["cells"], faithful["cells"], strict=True):
        pg = _pingouin(cell.Y)
        assert row["icc_c1"] == pytest.approx(pg.loc["ICC3", "ICC"], abs=1e-9)
        assert row["icc_a1"] == pytest.approx(pg.loc["ICC2", "ICC"], abs=1e-9)


def test_faithful_stability_columns(faithful):
    for c in faithful["cells"]:
        assert 0 < c["label_stability"] <= 1
        assert c["label_unstable"] == (c["label_stability"] < 0.90)
        assert c["label_modal"] in ("good", "moderate", "limited")


# ------------------------------------------------------------------------------------------- default mode

def test_default_runs(data, default):
    cells = default["cells"]
    resp = [c for c in cells if c["level"] == "response"]
    model = [c for c in cells if c["level"] == "model"]
    assert len(resp) == 28
    assert len(model) == 28
    for c in resp:
        for key in ("icc_c1", "icc_a1", "c1_lo", "c1_hi", "a1_lo", "a1_hi", "c1_lo_analytic", "a1_lo_analytic",
                    "kappa_quadratic", "kappa_linear", "kripp_alpha_ordinal", "bias_lo", "bias_hi"):
            assert c[key] is not None, key
            assert math.isfinite(c[key]), key
        assert c["a1_lo"] <= c["icc_a1"] <= c["a1_hi"]
        assert c["trust_label"] in ("trusted", "supervised", "not_trusted")
        # 10 sources, minus the judge's own family in default mode (two OpenAI sources for gpt-4o, o4-mini)
        assert c["n_pairs"] > (7000 if c["judge"] in ("gpt-4o", "o4-mini") else 8000)
        assert c["self_preference"] is not None
    assert default["n_excluded_misaligned_rows"] == 19
    assert default["n_conversations"] == 981
    for c in model:
        assert c["spearman_rho"] is not None
        assert c["spearman_rho_no_original"] is not None


def test_default_analytic_ci_and_ordinal_match_references(data, default):
    from sklearn.metrics import cohen_kappa_score

    krippendorff = pytest.importorskip("krippendorff")
    pairs = default["_internals"]["pairs"]
    row = next(c for c in default["cells"] if c["judge"] == "gpt-4o" and c["attribute"] == "Empathy"
               and c["level"] == "response")
    h, l = pairs[("gpt-4o", "Empathy")]
    assert row["n_pairs"] == h.size
    pg = _pingouin(np.column_stack([h, l]))
    assert row["icc_c1"] == pytest.approx(pg.loc["ICC3", "ICC"], abs=1e-9)
    assert row["icc_a1"] == pytest.approx(pg.loc["ICC2", "ICC"], abs=1e-9)
    ci3, ci2 = pg.loc["ICC3", "CI95"], pg.loc["ICC2", "CI95"]
    # Some pingouin releases round CI95 to 2 decimals: then compare within half a unit of the last digit.
    rounded = all(float(x) == round(float(x), 2) for x in [*ci3, *ci2])
    tol = 0.005 + 1e-12 if rounded else 1e-9
    assert [row["c1_lo_analytic"], row["c1_hi_analytic"]] == pytest.approx(list(ci3), abs=tol)
    assert [row["a1_lo_analytic"], row["a1_hi_analytic"]] == pytest.approx(list(ci2), abs=tol)
    hi, li = h.astype(int), l.astype(int)
    assert row["kappa_quadratic"] == pytest.approx(cohen_kappa_score(hi, li, weights="quadratic"), abs=1e-9)
    assert row["kappa_linear"] == pytest.approx(cohen_kappa_score(hi, li, weights="linear"), abs=1e-9)
    alpha = krippendorff.alpha(np.vstack([h, l]), level_of_measurement="ordinal")
    assert row["kripp_alpha_ordinal"] == pytest.approx(alpha, abs=1e-9)


def test_default_sufficient_statistics_equal_resampling(data):
    """§5 item 4 for the response-level ICC of one cell: W @ stats equals explicit resampling."""
    from trustmh.align.default import DefaultConfig, prepare
    from trustmh.stats.bootstrap import cluster_indices

    inp = prepare(data, DefaultConfig())
    items = np.flatnonzero(inp.item_keep)
    a = data.attributes.index("Safety")
    ex = SOURCES.index("gpt4omini")
    H, L = inp.H[items][:, :, a], inp.Ls["o4-mini"][items][:, :, a]
    H = H.copy()
    H[:, ex] = np.nan
    idx = cluster_indices(items.size, 20, 7)
    from trustmh.stats.icc import icc_k2_from_sums

    m = np.isfinite(H) & np.isfinite(L)
    per = np.stack([m.sum(1), np.where(m, H, 0).sum(1), np.where(m, L, 0).sum(1), np.where(m, H * H, 0).sum(1),
                    np.where(m, L * L, 0).sum(1), np.where(m, H * L, 0).sum(1)], axis=1)
    W = np.stack([np.bincount(r, minlength=items.size) for r in idx]).astype(float)
    T = W @ per
    c_fast, a_fast, *_ = icc_k2_from_sums(*(T[:, i] for i in range(6)))
    for b, r in enumerate(idx):
        hh, ll = H[r][m[r]], L[r][m[r]]
        Y = np.column_stack([hh, ll])
        assert c_fast[b] == pytest.approx(ICC_C1(Y), abs=1e-10)
        assert a_fast[b] == pytest.approx(ICC_A1(Y), abs=1e-10)


@pytest.mark.parametrize("mode", ["faithful", "default"])
def test_real_data_byte_identical_json_and_csv(data, mode):
    from trustmh.align import _dumps
    from trustmh.align.tables import ALL_COLUMNS, to_csv

    runs = [run_align(data, mode=mode, seed=42, stability_seeds=2) for _ in range(2)]
    texts = [_dumps(r) for r in runs]
    assert texts[0] == texts[1]
    assert "NaN" not in texts[0]
    assert "Infinity" not in texts[0]
    assert to_csv(runs[0]["cells"], ALL_COLUMNS) == to_csv(runs[1]["cells"], ALL_COLUMNS)


def test_parse_cache_gives_the_same_data(tmp_path, monkeypatch):
    """The checksum-keyed parse cache returns exactly what parsing the workbooks returns, and is used."""
    from trustmh.pillars.mentalbench import align_data as load_module
    from trustmh.pillars.mentalbench.align_data import load_workbooks

    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path))
    root = Path(os.environ["TRUSTMH_DATA_DIR"]) / "mentalalign"
    human = root / "Human_Judge" / "Human_judge.xlsx"
    judges = sorted((root / "LLMs_as_a_judge").glob("*.xlsx"))[:2]
    fresh = load_workbooks(human, judges, use_cache=False)
    first = load_workbooks(human, judges)  # parses and writes the cache
    assert list((tmp_path / "align").glob("*.npz"))
    calls = []
    monkeypatch.setattr(load_module, "_parse_workbooks", lambda *a: calls.append(a))
    cached = load_workbooks(human, judges)
    assert calls == [], "the warm call did not parse"
    for data in (first, cached):
        assert data.items == fresh.items
        assert data.inputs == fresh.inputs
        assert data.human_contexts == fresh.human_contexts
        assert data.judge_contexts == fresh.judge_contexts
        for name in ("strict", "score", "raw", "status", "step", "empty"):
            np.testing.assert_array_equal(getattr(data.human, name), getattr(fresh.human, name))
            for j in fresh.judges:
                np.testing.assert_array_equal(getattr(data.judges[j], name), getattr(fresh.judges[j], name))
