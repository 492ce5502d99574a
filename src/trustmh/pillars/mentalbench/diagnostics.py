"""The MentalBench judges' diagnostics (docs/pillars/mentalbench.md#ensembles-and-diagnostics); how an ensemble
combines its members' scores is the one rule of every sub-task, `trustmh.judges.ensemble`.

Plain numpy on (units × attributes) score matrices, NaN = no valid score. A *unit* is one judged response
(conversation, source); `clusters` gives each unit's conversation for the cluster bootstrap.

* `member_agreement`: ordinal Krippendorff α among the members and pairwise ICC(A,1).
* `self_preference`: a judge's mean on sources of its own family minus its mean on other sources.
* `retest_reliability`: test–retest ICC(A,1) over a judge's repeated ratings of the same units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from trustmh.stats.agreement import krippendorff_alpha
from trustmh.stats.bootstrap import cluster_codes, draw_counts, percentile_ci
from trustmh.stats.icc import icc_a1

SCALE = (1.0, 2.0, 3.0, 4.0, 5.0)


# ---------------------------------------------------------------------------------------------------------
# Agreement among members
# ---------------------------------------------------------------------------------------------------------

def member_agreement(members: Mapping[str, np.ndarray], attributes: Sequence[str]) -> dict[str, Any]:
    """Agreement among ensemble members over the same units.

    `members[name]` is a (units × attributes) array (NaN = no valid score), all with the same units.
    Returns {"kripp_alpha_ordinal": {attr: α, "all": α over (unit, attribute) pairs},
             "icc_a1": {"a|b": {attr: ICC(A,1), "all": ...}}, "n_units": {attr: units with ≥ 2 ratings}}.
    α uses scores rounded half up (κ/α use the rounded score, docs/pillars/mentalbench.md#ensembles-and-diagnostics); ICC uses the scores as they are, on
    the units both members scored. Fewer than 2 members → {}.
    """
    names = list(members)
    if len(names) < 2:
        return {}
    stack = np.stack([np.asarray(members[n], dtype=float) for n in names])  # (M, U, A)
    rounded = np.where(np.isfinite(stack), np.floor(stack + 0.5), np.nan)
    alpha: dict[str, float | None] = {}
    n_units: dict[str, int] = {}
    for j, attr in enumerate(attributes):
        data = rounded[:, :, j]
        n_units[attr] = int((np.isfinite(data).sum(axis=0) >= 2).sum())
        alpha[attr] = _alpha(data)
    alpha["all"] = _alpha(rounded.reshape(len(names), -1))
    iccs: dict[str, dict[str, float | None]] = {}
    for a, b in combinations(range(len(names)), 2):
        cell: dict[str, float | None] = {}
        for j, attr in enumerate(attributes):
            cell[attr] = _pair_icc(stack[a, :, j], stack[b, :, j])
        cell["all"] = _pair_icc(stack[a].ravel(), stack[b].ravel())
        iccs[f"{names[a]}|{names[b]}"] = cell
    return {"kripp_alpha_ordinal": alpha, "icc_a1": iccs, "n_units": n_units}


def _alpha(data: np.ndarray) -> float | None:
    if (np.isfinite(data).sum(axis=0) >= 2).sum() == 0:
        return None
    a = krippendorff_alpha(data, "ordinal", value_domain=SCALE)
    return None if math.isnan(a) else float(a)


def _pair_icc(x: np.ndarray, y: np.ndarray) -> float | None:
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 2:
        return None
    v = float(icc_a1(np.column_stack([x[keep], y[keep]])))
    return None if math.isnan(v) else v


# ---------------------------------------------------------------------------------------------------------
# Self-preference
# ---------------------------------------------------------------------------------------------------------

def _cluster_diff(values: np.ndarray, in_group: np.ndarray, clusters: Sequence[object], *, seed: int,
                  n_boot: int) -> tuple[float | None, tuple[float | None, float | None], int, int]:
    """mean(values[in_group]) − mean(values[~in_group]) with a cluster-bootstrap percentile CI."""
    v = np.asarray(values, dtype=float)
    keep = np.isfinite(v)
    g = np.asarray(in_group, dtype=bool)
    n_same, n_other = int((keep & g).sum()), int((keep & ~g).sum())
    if n_same == 0 or n_other == 0:
        return None, (None, None), n_same, n_other
    point = float(v[keep & g].mean() - v[keep & ~g].mean())
    codes, n_c = cluster_codes(list(clusters))
    vv = np.where(keep, v, 0.0)
    s_same = np.bincount(codes, weights=vv * (keep & g), minlength=n_c)
    c_same = np.bincount(codes, weights=(keep & g).astype(float), minlength=n_c)
    s_oth = np.bincount(codes, weights=vv * (keep & ~g), minlength=n_c)
    c_oth = np.bincount(codes, weights=(keep & ~g).astype(float), minlength=n_c)
    w = draw_counts(n_c, n_boot, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (w @ s_same) / (w @ c_same) - (w @ s_oth) / (w @ c_oth)
    lo, hi = percentile_ci(reps)
    return point, (_none(lo), _none(hi)), n_same, n_other


def _none(x: float) -> float | None:
    return None if x is None or math.isnan(x) else float(x)


def self_preference(judges: Mapping[str, np.ndarray], judge_family: Mapping[str, str | None],
                    source_family: Sequence[str | None], clusters: Sequence[object], *, seed: int,
                    n_boot: int) -> dict[str, dict[str, Any]]:
    """Per judge: mean score on units whose source shares the judge's family minus the mean on the other
    units (`diff`, with a cluster-bootstrap CI). `judges[name]` is a (units,) array of the judge's
    per-unit score (e.g. the mean over the valid attributes; NaN = none).

    With two or more judges a `relative` difference is added: the same contrast on the judge's score minus
    the mean of the other judges' scores on the unit, which removes differences in quality between the
    sources that every judge sees alike.
    """
    names = list(judges)
    out: dict[str, dict[str, Any]] = {}
    fam = np.array([f or "" for f in source_family], dtype=object)
    for name in names:
        family = judge_family.get(name)
        entry: dict[str, Any] = {"family": family}
        if family is None:
            entry.update(diff=None, ci=None, reason="judge family unknown")
            out[name] = entry
            continue
        same = fam == family
        entry["same_family_sources"] = int(same.sum())
        diff, ci, n_same, n_other = _cluster_diff(judges[name], same, clusters, seed=seed, n_boot=n_boot)
        entry.update(diff=diff, ci=None if diff is None else list(ci), n_same=n_same, n_other=n_other)
        if diff is None:
            entry["reason"] = "no judged responses from the judge's own family" if n_same == 0 \
                else "no judged responses from other families"
        others = [n for n in names if n != name]
        if others:
            stack = np.stack([np.asarray(judges[o], dtype=float) for o in others])
            cnt = np.isfinite(stack).sum(axis=0)
            other_mean = np.where(cnt > 0, np.nansum(stack, axis=0) / np.maximum(cnt, 1), np.nan)
            rel = np.asarray(judges[name], dtype=float) - other_mean
            rdiff, rci, _, _ = _cluster_diff(rel, same, clusters, seed=seed, n_boot=n_boot)
            entry["relative"] = {"diff": rdiff, "ci": None if rdiff is None else list(rci)}
        out[name] = entry
    return out


# ---------------------------------------------------------------------------------------------------------
# Test–retest
# ---------------------------------------------------------------------------------------------------------

def retest_reliability(repeats: Sequence[np.ndarray], attributes: Sequence[str]) -> dict[str, Any]:
    """ICC(A,1) over r ≥ 2 repeated ratings of the same units: `repeats[k]` is (units × attributes).

    Per attribute on the units with a valid score in every repeat, plus "all" over (unit, attribute)
    rows; also the share of units rated identically in every repeat.
    """
    if len(repeats) < 2:
        return {}
    stack = np.stack([np.asarray(r, dtype=float) for r in repeats])  # (r, U, A)
    out: dict[str, Any] = {"repeats": len(repeats), "icc_a1": {}, "n_units": {}}
    for j, attr in enumerate(attributes):
        y = stack[:, :, j].T  # (U, r)
        y = y[np.isfinite(y).all(axis=1)]
        out["n_units"][attr] = int(y.shape[0])
        out["icc_a1"][attr] = _icc_rows(y)
    y_all = stack.reshape(len(repeats), -1).T
    y_all = y_all[np.isfinite(y_all).all(axis=1)]
    out["icc_a1"]["all"] = _icc_rows(y_all)
    complete = np.isfinite(stack).all(axis=(0, 2))
    same = (stack == stack[0:1]).all(axis=(0, 2)) & complete
    out["identical_share"] = float(same.sum() / complete.sum()) if complete.any() else None
    return out


def _icc_rows(y: np.ndarray) -> float | None:
    y = y[np.isfinite(y).all(axis=1)]  # targets every repeat scored (listwise)
    if y.shape[0] < 2:
        return None
    v = float(icc_a1(y))
    return None if math.isnan(v) else v
