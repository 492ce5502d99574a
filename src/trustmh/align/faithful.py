"""`faithful` mode (docs/align.md#faithful-mode): the original study's analysis, quirks included.

Per cell (judge × attribute): model-level means of the strict scores over the 9 sources left after
self-exclusion, ICC(C,1)/ICC(A,1) on that 9 × 2 matrix, the bit-exact legacy bootstrap (docs/statistics.md#legacy-bootstrap, vectorised
over all cells at once), CI-width categories (docs/align.md#faithful-mode) and pooled-pair statistics (docs/statistics.md#pooled-pairs).
"""
# ruff: noqa: E741 - `h`/`l` (human/LLM) are the spec's names (docs/align.md#align)

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from trustmh.pillars.mentalbench.align_data import AlignData
from trustmh.pillars.mentalbench.ratings import GROUPS
from trustmh.stats.agreement import bland_altman, error_stats, koo_li_band, lin_ccc
from trustmh.stats.bootstrap import cluster_draw_counts, legacy_index_matrix, percentile_ci_nan
from trustmh.stats.icc import anova_two_way, icc_a1, icc_c1, icc_k2_from_sums

# docs/align.md#faithful-mode: 33rd/67th percentiles of the 28 published widths (relative tertiles, not absolute standards).
CATEGORY_CUTOFFS: tuple[float, float] = (0.355, 0.560)
NEAR_CUTOFF = 0.01
STABILITY_UNSTABLE_BELOW = 0.90
SOURCE_ORDER_NOTE = "claude, ds_llama, ds_qwen, gemini, gpt4o, gpt4omini, llama_3, qwen_2, qwen_3, original"


def category_of(width_rounded: float, cutoffs: Sequence[float] = CATEGORY_CUTOFFS) -> str | None:
    if not np.isfinite(width_rounded):
        return None
    if width_rounded <= cutoffs[0]:
        return "good"
    if width_rounded <= cutoffs[1]:
        return "moderate"
    return "limited"


def categories_of(width_rounded: np.ndarray, cutoffs: Sequence[float] = CATEGORY_CUTOFFS) -> np.ndarray:
    """Vectorised `category_of`: codes 0 good, 1 moderate, 2 limited, -1 undefined."""
    w = np.asarray(width_rounded, float)
    out = np.where(w <= cutoffs[0], 0, np.where(w <= cutoffs[1], 1, 2))
    return np.where(np.isfinite(w), out, -1)


CATEGORY_NAMES = ("good", "moderate", "limited")


def pooled_pair_stats(h: np.ndarray, l: np.ndarray) -> dict[str, Any]:
    """docs/statistics.md#pooled-pairs over pooled pairs: means, SDs, bias, MSE, Lin's CCC (authors' ddof-1 variant), Bland–Altman."""
    h = np.asarray(h, float)
    l = np.asarray(l, float)
    n = h.size
    out: dict[str, Any] = {"n_pairs": int(n)}
    if n == 0:
        return out
    es = error_stats(h, l)
    ba = bland_altman(h, l)
    hsd = float(np.std(h, ddof=1)) if n > 1 else float("nan")
    lsd = float(np.std(l, ddof=1)) if n > 1 else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        r = float(np.corrcoef(h, l)[0, 1]) if n > 1 else float("nan")
    out.update({
        "human_mean": float(h.mean()), "llm_mean": float(l.mean()), "human_sd": hsd, "llm_sd": lsd,
        "bias": float(es["bias"]), "mse": float(es["mse"]), "rmse": float(es["rmse"]),
        "ccc": float(lin_ccc(h, l, ddof=1)), "pearson_r": r,
        "scale_shift": lsd / hsd if hsd > 0 else float("nan"),
        "loa_lo": float(ba["loa_lo"]), "loa_hi": float(ba["loa_hi"]),
        "bias_se": float(ba["se_bias"]), "loa_se": float(ba["se_loa"]),
        "bias_lo": float(ba["bias_lo"]), "bias_hi": float(ba["bias_hi"]),
    })
    return out


@dataclass
class FaithfulCell:
    judge: str
    attribute: str
    sources: list[str]  # kept sources, in analysis order
    Y: np.ndarray  # (n, 2) model means [H_m, L_m]
    h: np.ndarray  # pooled pairs
    l: np.ndarray
    c_reps: np.ndarray = field(default_factory=lambda: np.empty(0))  # (B,) NaN where not kept
    a_reps: np.ndarray = field(default_factory=lambda: np.empty(0))
    row: dict[str, Any] = field(default_factory=dict)


def build_cells(data: AlignData, judges: Sequence[str] | None = None, *, self_exclusion: bool = True,
                drop_sources: Sequence[str] = (), human_strict: np.ndarray | None = None,
                item_mask: np.ndarray | None = None,
                judge_rows: np.ndarray | None = None) -> list[FaithfulCell]:
    """Model-level matrices and pooled pairs for every judge × attribute (strict scores).

    The keyword arguments exist for the sensitivity panel (docs/align.md#sensitivity-panel): `human_strict` replaces the human
    scores, `item_mask` keeps a subset of rows, `judge_rows[i]` is the judge row paired with human row i
    (-1: none).
    """
    H = data.human.strict if human_strict is None else human_strict
    out: list[FaithfulCell] = []
    for j in (judges if judges is not None else list(data.judges)):
        L = data.judges[j].strict
        if judge_rows is not None:
            L = np.where((judge_rows >= 0)[:, None, None], L[np.maximum(judge_rows, 0)], np.nan)
        ex = data.excluded(j) if self_exclusion else None
        both = np.isfinite(H) & np.isfinite(L)
        if item_mask is not None:
            both &= item_mask[:, None, None]
        for a, attr in enumerate(data.attributes):
            srcs, ys, hs, ls = [], [], [], []
            for s, src in enumerate(data.sources):
                if src == ex or src in drop_sources:
                    continue
                m = both[:, s, a]
                if not m.any():
                    continue
                hv, lv = H[m, s, a], L[m, s, a]
                srcs.append(src)
                ys.append((hv.mean(), lv.mean()))
                hs.append(hv)
                ls.append(lv)
            Y = np.array(ys, float).reshape(-1, 2)
            h = np.concatenate(hs) if hs else np.empty(0)
            l = np.concatenate(ls) if ls else np.empty(0)
            out.append(FaithfulCell(j, attr, srcs, Y, h, l))
    return out


def legacy_bootstrap(Ys: np.ndarray, n_boot: int = 1000, seed: int = 42) -> tuple[np.ndarray, np.ndarray]:
    """docs/statistics.md#legacy-bootstrap for G cells with the same n at once. Ys (G, n, 2) → (c_reps, a_reps), each (G, B), NaN where
    the replicate is not kept (NaN in either form drops both; values outside [0, 1] are discarded)."""
    G, n, _ = Ys.shape
    idx = legacy_index_matrix(n, n_boot=n_boot, seed=seed)  # (B, n), cached
    Yb = Ys[:, idx, :]  # (G, B, n, 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.asarray(icc_c1(Yb), float)
        a = np.asarray(icc_a1(Yb), float)
    return _keep(c, a)


def _keep(c: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dropped = np.isnan(c) | np.isnan(a)
    keep_c = ~dropped & np.isfinite(c) & (c >= 0) & (c <= 1)
    keep_a = ~dropped & np.isfinite(a) & (a >= 0) & (a <= 1)
    return np.where(keep_c, c, np.nan), np.where(keep_a, a, np.nan)


def legacy_ci(reps: np.ndarray, min_valid: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile 2.5/97.5 over the last axis ignoring NaN (= np.percentile on the kept list); NaN bounds
    below `min_valid` kept replicates. Returns (lo, hi, n_valid)."""
    n_valid = np.isfinite(reps).sum(axis=-1)
    lo, hi = percentile_ci_nan(reps, 0.95, min_valid=min_valid, axis=-1)
    return np.asarray(lo, float), np.asarray(hi, float), n_valid


def _by_n(cells: Sequence[FaithfulCell]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for i, c in enumerate(cells):
        groups.setdefault(c.Y.shape[0], []).append(i)
    return groups


def bootstrap_cells(cells: Sequence[FaithfulCell], n_boot: int = 1000, seed: int = 42) -> None:
    for n, members in sorted(_by_n(cells).items()):
        if n < 2:
            for i in members:
                cells[i].c_reps = np.full(n_boot, np.nan)
                cells[i].a_reps = np.full(n_boot, np.nan)
            continue
        c, a = legacy_bootstrap(np.stack([cells[i].Y for i in members]), n_boot, seed)
        for g, i in enumerate(members):
            cells[i].c_reps, cells[i].a_reps = c[g], a[g]


def category_stability(cells: Sequence[FaithfulCell], seeds: Sequence[int], n_boot: int = 1000,
                       cutoffs: Sequence[float] = CATEGORY_CUTOFFS) -> np.ndarray:
    """(len(seeds), n_cells) category codes with the bootstrap redrawn by `default_rng(seed)` (docs/align.md#default-mode).

    Row resampling of Y equals weighting the rows by draw counts, so each replicate's ANOVA comes from
    `W @ [h, l, h², l², hl]`. A replicate that draws a single row has no variance: NaN, as in the loop.
    """
    codes = np.full((len(seeds), len(cells)), -1, dtype=np.int8)
    for n, members in sorted(_by_n(cells).items()):
        if n < 2:
            continue
        Ys = np.stack([cells[i].Y for i in members])  # (G, n, 2)
        hh, ll = Ys[..., 0], Ys[..., 1]
        stats = np.concatenate([hh.T, ll.T, (hh * hh).T, (ll * ll).T, (hh * ll).T], axis=1)  # (n, 5G)
        G = len(members)
        for si, s in enumerate(seeds):
            W = np.asarray(cluster_draw_counts(n, n_boot, int(s)), float)  # (B, n)
            T = W @ stats  # (B, 5G)
            single = (W > 0).sum(axis=1) < 2
            N = np.full((n_boot, G), float(n))
            with np.errstate(invalid="ignore", divide="ignore"):
                c, a, *_ = icc_k2_from_sums(N, T[:, :G], T[:, G:2 * G], T[:, 2 * G:3 * G], T[:, 3 * G:4 * G],
                                            T[:, 4 * G:])
            c = np.where(single[:, None], np.nan, np.asarray(c, float))
            a = np.where(single[:, None], np.nan, np.asarray(a, float))
            ck, _ = _keep(c.T, a.T)  # (G, B)
            lo, hi, _ = legacy_ci(ck)
            codes[si, members] = categories_of(np.round(hi - lo, 3), cutoffs)
    return codes


def stability_summary(codes: np.ndarray, reported: np.ndarray, names: Sequence[str]) -> list[dict[str, Any]]:
    """Per column: share of seeds giving the modal label, the modal label, whether it is the reported one."""
    out = []
    for k in range(codes.shape[1]):
        col = codes[:, k]
        vals, counts = np.unique(col, return_counts=True)
        best = int(np.argmax(counts))  # ties → smallest code: deterministic
        modal = int(vals[best])
        share = float(counts[best] / col.size) if col.size else float("nan")
        out.append({"label_stability": share,
                    "label_modal": names[modal] if modal >= 0 else None,
                    "label_is_modal": bool(modal == int(reported[k])),
                    "label_unstable": bool(share < STABILITY_UNSTABLE_BELOW)})
    return out


def run_faithful(data: AlignData, *, seed: int = 42, n_boot: int = 1000, stability_seeds: Sequence[int] = (),
                 cells: list[FaithfulCell] | None = None, compute_pooled: bool = True) -> dict[str, Any]:
    """All cells of `faithful`. Returns {"cells": [FaithfulCell with .row], "tertile_cutoffs": [...]}."""
    if cells is None:
        cells = build_cells(data)
    bootstrap_cells(cells, n_boot, seed)
    for cell in cells:
        Y = cell.Y
        n = Y.shape[0]
        row: dict[str, Any] = {"judge": cell.judge, "attribute": cell.attribute,
                               "group": GROUPS.get(cell.attribute), "mode": "faithful", "level": "model",
                               "n_sources": n, "ci_method": "legacy_bootstrap_percentile",
                               "excluded_source": data.excluded(cell.judge)}
        if n >= 2:
            with np.errstate(invalid="ignore", divide="ignore"):
                ms_r, ms_c, ms_e = (float(x) for x in anova_two_way(Y))
                row.update(icc_c1=float(icc_c1(Y)), icc_a1=float(icc_a1(Y)), ms_r=ms_r, ms_c=ms_c, ms_e=ms_e)
        if n >= 1:
            row.update(model_means_human=float(Y[:, 0].mean()), model_means_llm=float(Y[:, 1].mean()),
                       model_means_bias=float((Y[:, 1] - Y[:, 0]).mean()))
        c_lo, c_hi, c_n = legacy_ci(cell.c_reps)
        a_lo, a_hi, a_n = legacy_ci(cell.a_reps)
        width = float(c_hi - c_lo)
        w_round = float(np.round(width, 3)) if np.isfinite(width) else float("nan")
        row.update(c1_lo=float(c_lo), c1_hi=float(c_hi), a1_lo=float(a_lo), a1_hi=float(a_hi),
                   n_boot_valid_c1=int(c_n), n_boot_valid_a1=int(a_n), c1_width=width, c1_width_rounded=w_round,
                   category=category_of(w_round),
                   near_cutoff=(bool(min(abs(width - c) for c in CATEGORY_CUTOFFS) < NEAR_CUTOFF)
                                if np.isfinite(width) else None),
                   koo_li_band=koo_li_band(row["icc_c1"]) if row.get("icc_c1") is not None
                   and np.isfinite(row["icc_c1"]) else None)
        if compute_pooled:
            row.update(pooled_pair_stats(cell.h, cell.l))
        else:
            row["n_pairs"] = int(cell.h.size)
        cell.row = row
    widths = np.array([c.row["c1_width_rounded"] for c in cells], float)
    fin = widths[np.isfinite(widths)]
    tertiles = [float(x) for x in np.percentile(fin, [33, 67])] if fin.size else [None, None]
    if len(stability_seeds):
        codes = category_stability(cells, stability_seeds, n_boot)
        reported = categories_of(widths)
        for cell, st in zip(cells, stability_summary(codes, reported, CATEGORY_NAMES), strict=True):
            cell.row.update(st)
    return {"cells": cells, "tertile_cutoffs": tertiles}
