"""Per-cell and data-quality tables (docs/align.md#outputs): fixed column order, deterministic CSV text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.data.files import csv_text
from trustmh.pillars.mentalbench.align_data import SOURCES, AlignData
from trustmh.pillars.mentalbench.ratings import ST, STATUSES

# docs/align.md#outputs columns, in order; both modes write all of them (None where not applicable).
CELL_COLUMNS: tuple[str, ...] = (
    "judge", "attribute", "group", "mode", "level", "n_sources", "n_pairs", "icc_c1", "icc_a1",
    "ms_r", "ms_c", "ms_e", "c1_lo", "c1_hi", "a1_lo", "a1_hi", "ci_method", "n_boot_valid_c1",
    "n_boot_valid_a1", "c1_width", "category", "near_cutoff", "koo_li_band", "trust_label",
    "label_stability", "human_mean", "llm_mean", "bias", "bias_lo", "bias_hi", "mse", "rmse", "ccc",
    "pearson_r", "scale_shift", "loa_lo", "loa_hi", "kappa_quadratic", "kappa_linear", "kripp_alpha_ordinal",
)
# Extra columns (after the docs/align.md#outputs ones), same in both modes.
EXTRA_COLUMNS: tuple[str, ...] = (
    "excluded_source", "human_sd", "llm_sd", "bias_se", "loa_se",
    "model_means_human", "model_means_llm", "model_means_bias",
    "c1_width_rounded", "label_modal", "label_is_modal", "label_unstable", "calibrate",
    "c1_lo_analytic", "c1_hi_analytic", "a1_lo_analytic", "a1_hi_analytic",
    "ccc_lo", "ccc_hi", "kappa_quadratic_lo", "kappa_quadratic_hi",
    "kripp_alpha_ordinal_lo", "kripp_alpha_ordinal_hi",
    "spearman_rho", "kendall_tau", "spearman_rho_no_original", "kendall_tau_no_original",
    "self_preference", "self_preference_lo", "self_preference_hi",
)
ALL_COLUMNS: tuple[str, ...] = CELL_COLUMNS + EXTRA_COLUMNS

DQ_COLUMNS: tuple[str, ...] = (
    "judge", "source", "self_excluded", "cells", "strict_failures", "unscored_cells",
    *(f"judge_{s}" for s in STATUSES),
    "human_empty", "human_null", "human_zero_cells", "human_zeros", "human_sixes", "human_invalid",
    "misaligned_rows", "misaligned_pairs_excluded", "missing_responses", "pairs_used",
)


def empty_row() -> dict[str, Any]:
    return dict.fromkeys(ALL_COLUMNS)


def py(x: Any) -> Any:
    """numpy scalars → Python; NaN/inf → None (JSON has no NaN)."""
    if x is None:
        return None
    if isinstance(x, bool | np.bool_):
        return bool(x)
    if isinstance(x, int | np.integer):
        return int(x)
    if isinstance(x, float | np.floating):
        f = float(x)
        return f if math.isfinite(f) else None
    return x


def clean_row(row: dict[str, Any], columns: Sequence[str]) -> dict[str, Any]:
    return {c: py(row.get(c)) for c in columns}


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest round-trip text: deterministic
    return str(v)


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    return csv_text(list(columns), ([_fmt(r.get(c)) for c in columns] for r in rows))


def data_quality(data: AlignData, mode: str, pairs_used: dict[str, np.ndarray],
                 misaligned: np.ndarray | None, drop_misaligned: bool) -> list[dict[str, Any]]:
    """One row per judge × source. `pairs_used[judge]` is (S,) pairs summed over attributes."""
    h = data.human
    h_null = (h.status == ST["missing_key"]).sum(axis=(0, 2))
    h_zero_cells = (h.raw == 0).all(axis=-1).sum(axis=0)
    h_zeros = (h.raw == 0).sum(axis=(0, 2))
    h_six = (h.raw == 6).sum(axis=(0, 2))
    h_invalid = (~h.valid).sum(axis=(0, 2))
    h_empty = h.empty.sum(axis=0)
    mis = misaligned if misaligned is not None else np.zeros(len(data.items), bool)
    rows = []
    for j, p in data.judges.items():
        excluded = set(data.excluded_family(j)) if mode == "default" else {data.excluded(j)}
        sf = p.strict_failures().sum(axis=0)
        un = p.unscored().sum(axis=0)
        counts = np.stack([(p.status == ST[s]).sum(axis=(0, 2)) for s in STATUSES])  # (8, S)
        both = (p.valid & h.valid) if mode == "default" else (np.isfinite(p.strict) & np.isfinite(h.strict))
        mis_pairs = (both & mis[:, None, None]).sum(axis=(0, 2)) if drop_misaligned else np.zeros(len(SOURCES))
        for s, src in enumerate(data.sources):
            row: dict[str, Any] = {
                "judge": j, "source": src, "self_excluded": src in excluded, "cells": int(p.status.shape[0]),
                "strict_failures": int(sf[s]), "unscored_cells": int(un[s]),
                "human_empty": int(h_empty[s]), "human_null": int(h_null[s]),
                "human_zero_cells": int(h_zero_cells[s]), "human_zeros": int(h_zeros[s]),
                "human_sixes": int(h_six[s]), "human_invalid": int(h_invalid[s]),
                "misaligned_rows": int(mis.sum()), "misaligned_pairs_excluded": int(mis_pairs[s]),
                # Response texts are not an input of `align`, so missing responses cannot be counted.
                "missing_responses": None,
                "pairs_used": int(pairs_used[j][s]),
            }
            for k, st in enumerate(STATUSES):
                row[f"judge_{st}"] = int(counts[k, s])
            rows.append(clean_row(row, DQ_COLUMNS))
    return rows
