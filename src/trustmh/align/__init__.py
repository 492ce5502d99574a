"""`trustmh align`: how far an LLM judge agrees with human experts (MentalAlign, docs/align.md#align).

Python API::

    from trustmh.align import load_mentalalign, run_align
    data = load_mentalalign("shared/data/mentalalign")
    result = run_align(data, mode="faithful", seed=42)      # JSON-ready dict
    write_outputs(result, "align.json")                      # + align.csv + align.html
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from collections.abc import Sequence
from importlib import metadata as _md
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.align.default import THRESHOLDS, DefaultConfig, run_default
from trustmh.align.faithful import CATEGORY_CUTOFFS, NEAR_CUTOFF, build_cells, run_faithful
from trustmh.align.html import render_html
from trustmh.align.tables import ALL_COLUMNS, DQ_COLUMNS, clean_row, data_quality, to_csv
from trustmh.core import TrustmhError
from trustmh.pillars.mentalbench.align_data import (
    SOURCES,
    AlignData,
    load_mentalalign,
    load_tidy,
    load_workbooks,
    normalise_context,
)
from trustmh.pillars.mentalbench.ratings import ST
from trustmh.storage import write_texts_together

__all__ = ["run_align", "load_mentalalign", "load_tidy", "load_workbooks", "write_outputs", "AlignData",
           "DefaultConfig", "THRESHOLDS"]

DEFAULT_SEED = 42
DIFFERENCES_FROM_FAITHFUL = (
    "valid data only: robust judge parser; human 0, 6 and null are invalid (counted in data_quality)",
    "rows whose whitespace-normalised contexts differ between the human and judge files are excluded",
    "response-level agreement (valid (conversation, source) pairs) is the primary estimand; the model-level "
    "ICC is secondary, with Spearman/Kendall of the source ranking with and without `original`",
    "intervals: cluster bootstrap over conversations (default_rng), every statistic on the same replicates; "
    "analytic McGraw–Wong intervals reported beside them (*_analytic); negative bounds kept",
    "ordinal agreement: weighted kappa (quadratic primary, linear) and ordinal Krippendorff alpha",
    "absolute, pre-registered thresholds on the lower bound of the response-level ICC(A,1) (trust_label), "
    "replacing the relative CI-width tertiles; `calibrate` flag from the bias interval",
    "label stability over bootstrap seeds (default_rng); self-preference with a cluster-bootstrap interval",
)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("trustmh", "numpy", "scipy", "openpyxl", "pyarrow"):
        try:
            out[pkg] = _md.version(pkg)
        except _md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def data_facts(data: AlignData) -> dict[str, Any]:
    """docs/align.md#data-quality quantities, recomputed from the inputs."""
    h = data.human
    raw, norm = data.context_mismatch()
    return {
        "strict_failures": {j: int(p.strict_failures().sum()) for j, p in data.judges.items()},
        "unscored_after_robust": {j: int(p.unscored().sum()) for j, p in data.judges.items()},
        "human_empty_cells": int(h.empty.sum()),
        "human_nulls": int((h.status == ST["missing_key"]).sum()),
        "human_zeros": int((h.raw == 0).sum()),
        "human_zero_cells": int((h.raw == 0).all(axis=-1).sum()),
        "human_sixes": int((h.raw == 6).sum()),
        "context_mismatches": int(raw.sum()) if data.human_contexts is not None else None,
        "context_mismatches_substantive": int(norm.sum()) if data.human_contexts is not None else None,
        "misaligned_items": [data.items[i] for i in np.flatnonzero(norm)],
    }


def _context_pairing(data: AlignData) -> np.ndarray:
    """judge row paired with each human row on the whitespace-normalised context (-1: none)."""
    assert data.human_contexts is not None and data.judge_contexts is not None
    first: dict[str, int] = {}
    for i, c in enumerate(data.judge_contexts):
        first.setdefault(normalise_context(c), i)
    return np.array([first.get(normalise_context(c), -1) for c in data.human_contexts], dtype=np.int64)


SENSITIVITY_COLUMNS = ("variant", "judge", "attribute", "n_sources", "n_pairs", "icc_c1", "icc_a1", "c1_lo",
                       "c1_hi", "a1_lo", "a1_hi", "c1_width", "category", "bias", "delta_icc_c1", "delta_icc_a1",
                       "category_changed")


def sensitivity_panel(data: AlignData, base_rows: Sequence[dict[str, Any]], seed: int,
                      n_boot: int) -> list[dict[str, Any]]:
    """docs/align.md#sensitivity-panel: rerun `faithful` with one change at a time."""
    H = data.human.strict
    variants: list[tuple[str, dict[str, Any]]] = [
        ("no_original", {"drop_sources": ("original",)}),
        ("no_self_exclusion", {"self_exclusion": False}),
        ("human_zero_missing", {"human_strict": np.where(H == 0, np.nan, H)}),
        ("human_clipped_1_5", {"human_strict": np.clip(H, 1, 5)}),
    ]
    if data.human_contexts is not None and data.judge_contexts is not None:
        _, mis = data.context_mismatch()
        variants.append(("misaligned_dropped", {"item_mask": ~mis}))
        variants.append(("pair_on_context", {"judge_rows": _context_pairing(data)}))
    base = {(r["judge"], r["attribute"]): r for r in base_rows}
    out = []
    for name, kw in variants:
        cells = build_cells(data, **kw)
        res = run_faithful(data, seed=seed, n_boot=n_boot, cells=cells)
        for c in res["cells"]:
            r = c.row
            b = base[(r["judge"], r["attribute"])]
            row = {k: r.get(k) for k in SENSITIVITY_COLUMNS}
            row["variant"] = name
            for f in ("icc_c1", "icc_a1"):
                if r.get(f) is not None and b.get(f) is not None:
                    row[f"delta_{f}"] = r[f] - b[f]
            row["category_changed"] = r.get("category") != b.get("category")
            out.append(clean_row(row, SENSITIVITY_COLUMNS))
    return out


def _config_hash(cfg: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def run_align(data: AlignData, *, mode: str = "faithful", seed: int = DEFAULT_SEED, n_boot: int = 1000,
              stability_seeds: int = 200, sensitivity: bool = False,
              default_config: DefaultConfig | None = None, keep_internals: bool = False) -> dict[str, Any]:
    """The full analysis. Returns the JSON-ready result; with `keep_internals`, also `_internals` (cells,
    replicates, pairs) for plots and tests (never serialised)."""
    if mode not in ("faithful", "default"):
        raise TrustmhError(f"unknown mode {mode!r}; expected 'faithful' or 'default'")
    seeds = list(range(int(stability_seeds)))
    internals: dict[str, Any] = {}
    cfg_json: dict[str, Any] = {"mode": mode, "seed": seed, "n_boot": n_boot, "stability_seeds": len(seeds),
                                "sensitivity": bool(sensitivity), "source_order": list(SOURCES)}
    extra: dict[str, Any] = {}
    if mode == "faithful":
        res = run_faithful(data, seed=seed, n_boot=n_boot, stability_seeds=seeds)
        rows = [c.row for c in res["cells"]]
        pairs_used = {j: np.zeros(len(data.sources), int) for j in data.judges}
        H = data.human.strict
        for j, p in data.judges.items():
            both = np.isfinite(H) & np.isfinite(p.strict)
            cnt = both.sum(axis=(0, 2))
            ex = data.excluded(j)
            if ex is not None:
                cnt[data.sources.index(ex)] = 0
            pairs_used[j] = cnt
        dq = data_quality(data, mode, pairs_used, None, False)
        extra["tertile_cutoffs"] = {"fixed": list(CATEGORY_CUTOFFS), "recomputed": res["tertile_cutoffs"],
                                    "note": "relative tertiles (33rd/67th percentiles of the rounded ICC(C,1) "
                                            "CI widths), not absolute standards"}
        cfg_json.update(category_cutoffs=list(CATEGORY_CUTOFFS), near_cutoff=NEAR_CUTOFF)
        internals["cells"] = res["cells"]
        internals["pairs"] = {(c.judge, c.attribute): (c.h, c.l) for c in res["cells"]}
        if sensitivity:
            extra["sensitivity"] = sensitivity_panel(data, rows, seed, n_boot)
    else:
        cfg = default_config or DefaultConfig(n_boot=n_boot, stability_seeds=len(seeds))
        cfg.n_boot = n_boot
        res = run_default(data, cfg, seed=seed, stability_seeds=seeds)
        rows = res["rows"]
        dq = data_quality(data, mode, res["pairs_used"], res["misaligned"], cfg.drop_misaligned)
        extra["differences_from_faithful"] = list(DIFFERENCES_FROM_FAITHFUL)
        extra["n_conversations"] = res["n_conversations"]
        extra["n_excluded_misaligned_rows"] = res["n_excluded_misaligned"]
        cfg_json["default_config"] = res["config"]
        internals["pairs"] = res["pairs"]
        if sensitivity:
            base = run_faithful(data, seed=seed, n_boot=n_boot)
            extra["sensitivity"] = sensitivity_panel(data, [c.row for c in base["cells"]], seed, n_boot)
    cfg_json["thresholds"] = THRESHOLDS
    metadata = {
        "mode": mode,
        "config_hash": _config_hash(cfg_json),
        "config": cfg_json,
        "inputs": {k: data.inputs[k] for k in sorted(data.inputs)},
        "input_kind": data.source_kind,
        "library_versions": _versions(),
        "seeds": {"bootstrap": seed, "stability": [seeds[0], seeds[-1]] if seeds else [],
                  "stability_rng": "numpy.random.default_rng",
                  "bootstrap_rng": "legacy numpy.random (docs/statistics.md#legacy-bootstrap)" if mode == "faithful"
                  else "numpy.random.default_rng"},
        "thresholds_version": THRESHOLDS["version"],
        "self_exclusion": {j: (data.excluded(j) if mode == "faithful" else data.excluded_family(j))
                           for j in data.judges},
        "labels": {"model_means_*": "means of model means (the authors' ICC printout), not pooled pairs",
                   "bias": "mean(judge − human); positive means the judge inflates",
                   "kappa_*, kripp_alpha_ordinal": "on the 1–5 categories; a real-valued rating (a mean or "
                   "median ensemble, averaged human raters) is binned half up (3.5 → 4); ICC, CCC, bias "
                   "and errors use the values as they are"},
    }
    out: dict[str, Any] = {"mode": mode, "seed": seed, "metadata": metadata,
                           "data_facts": data_facts(data), **extra,
                           "cells": [clean_row(r, ALL_COLUMNS) for r in rows],
                           "data_quality": dq}
    if keep_internals:
        out["_internals"] = internals
    return out


def _dumps(result: dict[str, Any]) -> str:
    public = {k: v for k, v in result.items() if not k.startswith("_")}
    return json.dumps(public, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_outputs(result: dict[str, Any], out: str | os.PathLike[str], html: str | os.PathLike[str] | None = None,
                  *, write_html: bool = True) -> dict[str, Path]:
    """Write FILE.json, FILE.csv (per-cell table) and the HTML page, each via temp name + rename."""
    out = Path(out)
    csv_path = out.with_suffix(".csv")
    html_path = Path(html) if html is not None else out.with_suffix(".html")
    texts: dict[Path, str] = {out: _dumps(result), csv_path: to_csv(result["cells"], ALL_COLUMNS)}
    if "data_quality" in result:
        texts[out.with_name(out.stem + ".data_quality.csv")] = to_csv(result["data_quality"], DQ_COLUMNS)
    if write_html:

        texts[html_path] = render_html(result)
    write_texts_together(texts)
    return {"json": out, "csv": csv_path, **({"html": html_path} if write_html else {})}
