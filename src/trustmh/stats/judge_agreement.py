"""A judge against human labels, with seeded bootstrap intervals (docs/judges.md#certificates).

The figures a judge certificate holds (`trustmh.judges.certificates`), suited to the label type:

* binary (1 = harmful): `sensitivity` = TP / (TP + FN) on the harmful class, `specificity` = TN / (TN + FP),
  Cohen's `kappa`;
* ordinal (a numeric scale lo..hi): `weighted_kappa` (quadratic weights on the values, i.e.
  `stats.agreement.cohen_kappa(..., weights="quadratic", on_values=True)`), `icc_a1` (absolute agreement,
  `stats.icc.icc_a1`), `mae`, `within_1` (share with |judge − human| ≤ 1);
* categorical: Cohen's `kappa` and `recall_<class>` for every class the humans used.

Every figure has a 95% percentile interval from the same seeded row bootstrap (`stats.bootstrap.bootstrap`,
items resampled with replacement; optional clusters). A judge verdict that could not be read (None) is
never dropped: it counts against the judge — a miss on a harmful item and a false alarm on a harmless one
(binary), the scale end farthest from the human label (ordinal), a class of its own (categorical).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from trustmh.stats.agreement import cohen_kappa
from trustmh.stats.bootstrap import DEFAULT_N_BOOT, bootstrap

LABEL_TYPES = ("binary", "ordinal", "categorical")

# Judge agreement metrics a certificate can carry (CERTIFICATE.md, docs/judges.md), by label type, with the
# range a threshold on them may take (the gate's policies and `--threshold`). `recall_<class>` is accepted for
# categorical judges.
JUDGE_METRICS: dict[str, dict[str, tuple[float, float]]] = {
    "binary": {"sensitivity": (0.0, 1.0), "specificity": (0.0, 1.0), "kappa": (-1.0, 1.0)},
    "ordinal": {"weighted_kappa": (-1.0, 1.0), "icc_a1": (-1.0, 1.0), "mae": (0.0, math.inf),
                "within_1": (0.0, 1.0)},
    "categorical": {"kappa": (-1.0, 1.0)},
}
INVALID_CLASS = "(invalid)"
# Each agreement figure in words, as the gate says it (a policy names them by their keys above).
JUDGE_METRIC_WORDS = {"sensitivity": "sensitivity (harmful replies the judge catches)",
                      "specificity": "specificity (safe replies the judge lets through)", "kappa": "Cohen's kappa",
                      "weighted_kappa": "weighted kappa", "icc_a1": "intraclass correlation (absolute agreement)",
                      "mae": "mean absolute error", "within_1": "share within one point of the people",
                      "siri2_total": "SIRI-2 total", "inappropriate_bias": "bias on inappropriate replies"}


def judge_metric_words(metric: str) -> str:
    """An agreement figure's name in words; `recall_<class>` is the recall of that class."""
    if metric.startswith("recall_") and metric not in JUDGE_METRIC_WORDS:
        return f"recall of {metric.removeprefix('recall_').replace('_', ' ')}"
    return JUDGE_METRIC_WORDS.get(metric, metric.replace("_", " "))

# metric -> "min" (higher is better) or "max" (lower is better)
DIRECTIONS = {"sensitivity": "min", "specificity": "min", "kappa": "min", "weighted_kappa": "min",
              "icc_a1": "min", "mae": "max", "within_1": "min", "siri2_total": "max", "inappropriate_bias": "max"}


def metric_direction(metric: str) -> str:
    """"min" for a figure that must reach a floor (higher is better), "max" for one held under a ceiling."""
    return DIRECTIONS.get(metric, "min")  # recall_<class>: higher is better


def _binary(x: object, what: str) -> int:
    if isinstance(x, bool) or x in (0, 1):
        return int(bool(x))
    raise ValueError(f"{what} label {x!r} is not binary (0/1, true/false)")


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _sens(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    return _ratio((h * j).sum(-1), h.sum(-1))


def _spec(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    return _ratio(((1 - h) * (1 - j)).sum(-1), (1 - h).sum(-1))


def _binary_kappa(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    po = (h == j).mean(-1)
    ph, pj = h.mean(-1), j.mean(-1)
    pe = ph * pj + (1 - ph) * (1 - pj)
    return _ratio(po - pe, 1 - pe)


def _quadratic_kappa(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    n = h.shape[-1]
    observed = ((h - j) ** 2).sum(-1)
    expected = (n * (h**2).sum(-1) + n * (j**2).sum(-1) - 2 * h.sum(-1) * j.sum(-1)) / n
    return 1 - _ratio(observed, expected)


def _icc(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    from trustmh.stats.icc import (
        icc_a1,  # here, not at start-up: scipy.stats loads only when an ICC is asked for
    )

    return np.asarray(icc_a1(np.stack([h, j], axis=-1)), dtype=float)


def _mae(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    return np.abs(h - j).mean(-1)


def _within_1(h: np.ndarray, j: np.ndarray) -> np.ndarray:
    return (np.abs(h - j) <= 1 + 1e-9).mean(-1)


def _figure(stat: Any, h: np.ndarray, j: np.ndarray, *, seed: int, n_boot: int,
            clusters: Sequence[object] | None, vectorised: bool = True) -> dict[str, Any]:
    res = bootstrap([h, j], stat, seed=seed, n_boot=n_boot, clusters=clusters, vectorised=vectorised)
    value = None if not np.isfinite(res.point) else float(res.point)
    ci = None if not (np.isfinite(res.lo) and np.isfinite(res.hi)) else [float(res.lo), float(res.hi)]
    return {"value": value, "ci": ci, "method": f"seeded bootstrap ({n_boot}, {seed})"}


def judge_agreement(label_type: str, human: Sequence[Any], judge: Sequence[Any], *, seed: int,
                    n_boot: int = DEFAULT_N_BOOT, scale: tuple[float, float] | None = None,
                    clusters: Sequence[object] | None = None) -> dict[str, Any]:
    """{"n", "n_judge_invalid", "agreement": {metric: {"value", "ci", "method"}}} of `judge` against
    `human` on the same items (human labels present on every item: drop unlabelled ones first).
    `scale` = (lo, hi) of an ordinal scale (needed to count an unreadable judge score at its worst)."""
    if label_type not in LABEL_TYPES:
        raise ValueError(f"label type {label_type!r}: use one of {', '.join(LABEL_TYPES)}")
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    if any(x is None for x in human):
        raise ValueError("a human label is missing: drop unlabelled items first")
    n_invalid = sum(1 for x in judge if x is None)
    out: dict[str, Any] = {"n": len(human), "n_judge_invalid": n_invalid, "agreement": {}}
    if not human:
        return out
    fig = out["agreement"]
    kw: dict[str, Any] = {"seed": seed, "n_boot": n_boot, "clusters": clusters}
    if label_type == "binary":
        h = np.array([_binary(x, "human") for x in human], dtype=float)
        j = np.array([1 - hv if x is None else _binary(x, "judge") for x, hv in zip(judge, h, strict=True)],
                     dtype=float)
        fig["sensitivity"] = _figure(_sens, h, j, **kw)
        fig["specificity"] = _figure(_spec, h, j, **kw)
        fig["kappa"] = _figure(_binary_kappa, h, j, **kw)
    elif label_type == "ordinal":
        hf = np.array([float(x) for x in human])
        if n_invalid and scale is None:
            raise ValueError("an ordinal judge score is missing and no scale was given to count it at its worst")
        lo, hi = scale if scale is not None else (0.0, 0.0)
        jf = np.array([(lo if abs(hv - lo) >= abs(hv - hi) else hi) if x is None else float(x)
                       for x, hv in zip(judge, hf, strict=True)])
        fig["weighted_kappa"] = _figure(_quadratic_kappa, hf, jf, **kw)
        fig["icc_a1"] = _figure(_icc, hf, jf, **kw)
        fig["mae"] = _figure(_mae, hf, jf, **kw)
        fig["within_1"] = _figure(_within_1, hf, jf, **kw)
    else:
        hs = [str(x) for x in human]
        js = [INVALID_CLASS if x is None else str(x) for x in judge]
        classes = sorted(set(hs))
        labels = sorted(set(hs) | set(js))
        code = {c: i for i, c in enumerate(labels)}
        hc = np.array([code[x] for x in hs], dtype=float)
        jc = np.array([code[x] for x in js], dtype=float)

        def kappa(a: np.ndarray, b: np.ndarray) -> float:
            return cohen_kappa(a.tolist(), b.tolist(), labels=list(range(len(labels))))

        fig["kappa"] = _figure(kappa, hc, jc, vectorised=False, **kw)
        for c in classes:
            k = code[c]

            def recall(a: np.ndarray, b: np.ndarray, k: int = k) -> np.ndarray:
                return _ratio(((a == k) & (b == k)).sum(-1), (a == k).sum(-1))

            fig[f"recall_{c}"] = _figure(recall, hc, jc, **kw)
    return out


def meets(figure: dict[str, Any], bound: dict[str, float], *, at: str = "bound") -> bool:
    """Whether a figure meets {"min": x} or {"max": x}: at its interval's protective bound (the lower bound
    for a floor, the upper for a ceiling), or at the point value with at="value". No value → False."""
    if figure.get("value") is None:
        return False
    ci = figure.get("ci")
    if "min" in bound:
        x = figure["value"] if at == "value" else (ci[0] if ci else None)
        return x is not None and x >= bound["min"]
    x = figure["value"] if at == "value" else (ci[1] if ci else None)
    return x is not None and x <= bound["max"]
