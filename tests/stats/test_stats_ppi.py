"""Judge-corrected means (PPI / PPI++) against ppi-python (dev-only oracle) within 1e-9, and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from trustmh.stats.ppi import inverse_probability_weights, ppi_mean, ppi_mean_batch

TOL = 1e-9


def _data(kind: str, seed: int = 7, n: int = 80, N: int = 1500) -> dict[str, np.ndarray]:
    """A judge of known bias: binary (misses 30% of harmful items, 5% false alarms) or ordinal 1..5 (reads
    one point high a third of the time)."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        y = rng.binomial(1, 0.2, n + N)
        yhat = np.where(y == 1, rng.binomial(1, 0.7, n + N), rng.binomial(1, 0.05, n + N))
    else:
        y = rng.integers(1, 6, n + N)
        yhat = np.clip(y + rng.binomial(1, 1 / 3, n + N) - rng.binomial(1, 0.1, n + N), 1, 5)
    return {"Y": y[:n].astype(float), "Yhat": yhat[:n].astype(float), "Yhat_unlabeled": yhat[n:].astype(float),
            "w": rng.uniform(0.5, 4.0, n), "w_unlabeled": rng.uniform(0.5, 2.0, N)}


CASES = [(kind, lam, weighting) for kind in ("binary", "ordinal") for lam in (None, 1.0)
         for weighting in ("none", "labelled", "both")]
IDS = [f"{k}-lam{'tuned' if lam is None else lam}-w_{w}" for k, lam, w in CASES]


def _ours_and_oracle(kind: str, lam: float | None, weighting: str):
    ppi_py = pytest.importorskip("ppi_py")
    d = _data(kind)
    w = d["w"] if weighting != "none" else None
    wu = d["w_unlabeled"] if weighting == "both" else None
    ours = ppi_mean(d["Y"], d["Yhat"], d["Yhat_unlabeled"], weights=w, weights_unlabeled=wu, lam=lam, alpha=0.05)
    point = ppi_py.ppi_mean_pointestimate(d["Y"], d["Yhat"], d["Yhat_unlabeled"], lam=lam, w=w, w_unlabeled=wu)
    lo, hi = ppi_py.ppi_mean_ci(d["Y"], d["Yhat"], d["Yhat_unlabeled"], alpha=0.05, lam=lam, w=w, w_unlabeled=wu)
    return ours, float(np.squeeze(point)), float(np.squeeze(lo)), float(np.squeeze(hi)), d, w, wu


@pytest.mark.parametrize(("kind", "lam", "weighting"), CASES, ids=IDS)
def test_point_estimate_matches_ppi_python(kind: str, lam: float | None, weighting: str) -> None:
    ours, point, *_ = _ours_and_oracle(kind, lam, weighting)
    assert abs(ours.estimate - point) < TOL


@pytest.mark.parametrize(("kind", "lam", "weighting"), CASES, ids=IDS)
def test_lower_bound_matches_ppi_python(kind: str, lam: float | None, weighting: str) -> None:
    ours, _, lo, _, *_ = _ours_and_oracle(kind, lam, weighting)
    assert abs(ours.ci[0] - lo) < TOL


@pytest.mark.parametrize(("kind", "lam", "weighting"), CASES, ids=IDS)
def test_upper_bound_matches_ppi_python(kind: str, lam: float | None, weighting: str) -> None:
    ours, _, _, hi, *_ = _ours_and_oracle(kind, lam, weighting)
    assert abs(ours.ci[1] - hi) < TOL


@pytest.mark.parametrize("weighting", ["none", "labelled"])
def test_tuned_lambda_matches_ppi_python(weighting: str) -> None:
    """λ̂ itself: ppi-python at our λ̂ gives its own tuned estimate (λ̂ is identified: the judge and the
    labels differ on this data, so the estimate moves with λ)."""
    ours, point, _, _, d, w, wu = _ours_and_oracle("binary", None, weighting)
    ppi_py = pytest.importorskip("ppi_py")
    at_ours = ppi_py.ppi_mean_pointestimate(d["Y"], d["Yhat"], d["Yhat_unlabeled"], lam=ours.lam, w=w,
                                            w_unlabeled=wu)
    assert abs(float(np.squeeze(at_ours)) - point) < TOL


@pytest.mark.parametrize("weighting", ["none", "labelled"])
def test_human_only_interval_matches_classical_mean_ci(weighting: str) -> None:
    ours, _, _, _, d, w, _ = _ours_and_oracle("ordinal", None, weighting)
    from ppi_py import classical_mean_ci

    lo, hi = classical_mean_ci(d["Y"], w=w, alpha=0.05)
    assert np.allclose(ours.human_only.ci, (lo, hi), rtol=0, atol=TOL)


def test_judge_only_interval_matches_classical_mean_ci_on_the_judged_items() -> None:
    ours, _, _, _, d, _, wu = _ours_and_oracle("binary", None, "both")
    from ppi_py import classical_mean_ci

    lo, hi = classical_mean_ci(d["Yhat_unlabeled"], w=wu, alpha=0.05)
    assert np.allclose(ours.judge_only.ci, (lo, hi), rtol=0, atol=TOL)


# --- by hand: Y = 1 0 1 1, the judge 1 0 0 1 on them, 1 0 0 0 1 0 on six unlabelled items -----------------

Y4, YHAT4, YU6 = [1, 0, 1, 1], [1, 0, 0, 1], [1, 0, 0, 0, 1, 0]


def test_plain_ppi_by_hand() -> None:
    # 2/6 judged harmful, plus the mean error 1/4 where humans labelled
    assert ppi_mean(Y4, YHAT4, YU6, lam=1).estimate == pytest.approx(1 / 3 + 1 / 4, abs=1e-15)


def test_plain_ppi_standard_error_by_hand() -> None:
    # Var(Ŷ̃) = (1/3)(2/3) over N = 6; Var(Y − Ŷ) = (1/4)(3/4) over n = 4
    assert ppi_mean(Y4, YHAT4, YU6, lam=1).se == pytest.approx(math.sqrt(2 / 9 / 6 + 3 / 16 / 4), abs=1e-15)


def test_tuned_lambda_by_hand() -> None:
    # Cov_n(Y, Ŷ) = 1/2 − 3/4·1/2 = 1/8; pooled Ŷ: 4 of 10, variance (ddof 1) 2.4/9 = 4/15; 1 + n/N = 5/3
    assert ppi_mean(Y4, YHAT4, YU6).lam == pytest.approx((1 / 8) / (5 / 3 * 4 / 15), abs=1e-15)


def test_tuned_estimate_by_hand() -> None:
    # λ = 9/32: 9/32·1/3 + (3/4 − 9/32·1/2) = 45/64
    assert ppi_mean(Y4, YHAT4, YU6).estimate == pytest.approx(45 / 64, abs=1e-15)


def test_lambda_zero_is_the_human_only_mean() -> None:
    r = ppi_mean(Y4, YHAT4, YU6, lam=0)
    assert (r.estimate, r.ci) == (r.human_only.estimate, r.human_only.ci)


def test_interval_is_z_times_se() -> None:
    r = ppi_mean(Y4, YHAT4, YU6, alpha=0.1)
    assert r.ci[1] - r.ci[0] == pytest.approx(2 * 1.6448536269514722 * r.se, abs=1e-12)


def test_judge_only_is_the_mean_over_the_judged_items() -> None:
    assert ppi_mean(Y4, YHAT4, YU6).judge_only.estimate == pytest.approx(1 / 3, abs=1e-15)


# --- weights -----------------------------------------------------------------------------------------------

def test_only_weight_ratios_matter() -> None:
    w = [1, 2, 3, 4]
    a, b = ppi_mean(Y4, YHAT4, YU6, weights=w), ppi_mean(Y4, YHAT4, YU6, weights=np.multiply(w, 7.5))
    assert np.allclose([a.estimate, *a.ci], [b.estimate, *b.ci], rtol=0, atol=1e-15)


def test_equal_weights_are_no_weights() -> None:
    a, b = ppi_mean(Y4, YHAT4, YU6, weights=[0.2] * 4), ppi_mean(Y4, YHAT4, YU6)
    assert np.allclose([a.estimate, *a.ci, a.lam], [b.estimate, *b.ci, b.lam], rtol=0, atol=1e-15)


def test_weighted_human_only_is_the_hajek_mean() -> None:
    # strata: items 0-1 drawn with π = 1/2, items 2-3 with π = 1/8: weights 2, 2, 8, 8
    w = inverse_probability_weights([0.5, 0.5, 0.125, 0.125])
    assert ppi_mean(Y4, YHAT4, YU6, weights=w).human_only.estimate == pytest.approx((2 * 1 + 8 * 2) / 20)


def test_inverse_probability_weights() -> None:
    assert inverse_probability_weights([0.5, 0.25, 1]).tolist() == [2.0, 4.0, 1.0]


@pytest.mark.parametrize("bad", [[0.5, 0.0], [0.5, 1.5], [0.5, float("nan")]])
def test_inverse_probability_weights_rejects_impossible_probabilities(bad: list[float]) -> None:
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        inverse_probability_weights(bad)


def test_non_positive_weight_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        ppi_mean(Y4, YHAT4, YU6, weights=[1, 1, 0, 1])


# --- degenerate cases --------------------------------------------------------------------------------------

def test_no_human_label_is_refused() -> None:
    with pytest.raises(ValueError, match="no human label"):
        ppi_mean([], [], YU6)


def test_no_judged_item_is_refused() -> None:
    with pytest.raises(ValueError, match="no unlabelled judged item"):
        ppi_mean(Y4, YHAT4, [])


def test_one_label_gives_an_estimate() -> None:
    # λ = 1: 2/6 + (1 − 0)
    assert ppi_mean([1], [0], YU6, lam=1).estimate == pytest.approx(4 / 3)


def test_one_label_gives_no_interval() -> None:
    assert ppi_mean([1], [0], YU6, lam=1).ci is None


def test_one_label_says_why() -> None:
    assert "no variance estimate" in ppi_mean([1], [0], YU6, lam=1).reason


def test_constant_judge_tunes_lambda_to_zero() -> None:
    assert ppi_mean(Y4, [1, 1, 1, 1], [1] * 6).lam == 0.0


def test_constant_judge_gives_the_human_only_interval() -> None:
    r = ppi_mean(Y4, [1, 1, 1, 1], [1] * 6)
    assert r.ci == r.human_only.ci


def test_all_labels_equal_tunes_lambda_to_zero() -> None:
    assert ppi_mean([0, 0, 0, 0], YHAT4, YU6).lam == 0.0


def test_all_labels_equal_estimate_is_that_label() -> None:
    assert ppi_mean([0, 0, 0, 0], YHAT4, YU6).estimate == 0.0


def test_all_labels_equal_withholds_the_zero_width_interval() -> None:
    assert ppi_mean([0, 0, 0, 0], YHAT4, YU6).ci is None


def test_all_labels_equal_says_why() -> None:
    assert "every human label is 0" in ppi_mean([0, 0, 0, 0], YHAT4, YU6).reason


def test_all_labels_equal_with_fixed_lambda_has_an_interval() -> None:
    # λ = 1 keeps the judge's spread: se² = Var(Ŷ̃)/6 + Var(0 − Ŷ)/4
    assert ppi_mean([0, 0, 0, 0], YHAT4, YU6, lam=1).se == pytest.approx(math.sqrt(2 / 9 / 6 + 1 / 4 / 4))


def test_unusable_verdict_is_refused() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        ppi_mean(Y4, [1, 0, float("nan"), 1], YU6)


def test_mismatched_labelled_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="same shape"):
        ppi_mean(Y4, YHAT4[:3], YU6)


# --- batch = one call per row ------------------------------------------------------------------------------

def test_batch_rows_equal_single_calls() -> None:
    rng = np.random.default_rng(3)
    Y = rng.binomial(1, 0.3, (5, 40)).astype(float)
    Yh = np.where(rng.random((5, 40)) < 0.8, Y, 1 - Y)
    Yu = rng.binomial(1, 0.3, (5, 300)).astype(float)
    b = ppi_mean_batch(Y, Yh, Yu)
    singles = [ppi_mean(Y[i], Yh[i], Yu[i]) for i in range(5)]
    assert np.allclose(np.c_[b.estimate, b.lo, b.hi, b.lam],
                       [[s.estimate, *s.ci, s.lam] for s in singles], rtol=0, atol=1e-15)


def test_to_json_round_trips_the_interval() -> None:
    out = ppi_mean(Y4, YHAT4, YU6).to_json()
    assert (out["ci"], out["n"], out["N"], out["lam_tuned"]) == (list(ppi_mean(Y4, YHAT4, YU6).ci), 4, 6, True)
