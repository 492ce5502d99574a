"""Anytime-valid intervals for a rate: a confidence sequence that stays valid however often it is looked at.

`trustmh run --until-decided` (`trustmh.run.rounds`) looks at a sub-task's counts after every round and stops
once each check it feeds is decided. A fixed-n interval (Wilson) looked at after every round and acted on
when it first clears a limit covers the true rate far less often than 95% (benchmarks/sequential_coverage.py
measures it); a confidence sequence (CS) covers it at every n at once, so a verdict read where the run stopped
is as valid as one read at a fixed n.

Method: the conjugate-mixture (beta-binomial) likelihood-ratio CS of Robbins (1970, "Statistical methods
related to the law of the iterated logarithm", Ann. Math. Statist. 41), in the form of Howard, Ramdas,
McAuliffe & Sekhon (2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49,
§3 conjugate mixtures). For x harmful of n items drawn independently with rate p,

    M_n(p) = ∫ q^x (1 − q)^(n − x) dBeta(q; a, b) / (p^x (1 − p)^(n − x))
           = B(x + a, n − x + b) / B(a, b) / (p^x (1 − p)^(n − x))

is a nonnegative martingale with M_0 = 1 under p, so by Ville's inequality P(∃ n: M_n(p) ≥ 1/α) ≤ α and
{p : M_n(p) < 1/α} is a 1 − α confidence sequence. It reads only the counts (x, n), the figures results.json
keeps, and needs no tuning; a Jeffreys mixture (a = b = 1/2) keeps it narrow near 0 and 1, where the gate's
limits sit. Its price for validity at every n is width: at n = 100 it is about 1.5 times a Wilson interval.

A bounded mean (a 1-5 rubric, a 0-2 mark) uses the same sequence on the scores rescaled to [0, 1]
(`mean_sequence`): a variable in [0, 1] with mean p is sub-Bernoulli, since q ↦ (q/p)^y ((1 − q)/(1 − p))^(1 − y)
is convex in y and so its expectation is at most its value for a Bernoulli(p), 1 (Howard, Ramdas, McAuliffe &
Sekhon 2020, "Time-uniform Chernoff bounds via nonnegative supermartingales", Probab. Surveys 17, Fact 1:
Hoeffding's argument). M_n(p) with x the sum of the rescaled scores is then a nonnegative supermartingale, and
Ville's inequality holds as for counts. It reads only the sum and n, which results.json keeps (the mean and
its effective n), so a round needs no per-item history. Its price: it does not narrow for a low-variance
score as a betting confidence sequence does (Waudby-Smith & Ramdas 2024, "Estimating means of bounded random
variables by betting", JRSS-B 86; implemented in `confseq`, last released January 2023, which needs every
item's score in play order): it is valid, and conservative for scores bunched near their mean.

Items are the set's stimuli in a seeded random order; as for the gate's fixed-n intervals, the rate is the
product's on items like these (the set is a sample of them), not on the finite set itself.
"""

from __future__ import annotations

import math

ALPHA = 0.05
JEFFREYS = (0.5, 0.5)  # the mixing Beta(a, b)

METHOD = ("beta-binomial mixture confidence sequence (Robbins 1970; Howard et al. 2021), anytime-valid 95%, "
          "Jeffreys mixture")
MEAN_METHOD = ("beta-binomial mixture confidence sequence on the scores rescaled to [0, 1] (sub-Bernoulli: "
               "Howard et al. 2020), anytime-valid 95%")


def log_martingale(p: float, x: float, n: float, prior: tuple[float, float] = JEFFREYS) -> float:
    """log M_n(p): the mixture likelihood ratio against rate p after x harmful of n items."""
    # imported on use: the gate imports this module, and `trustmh --help` should not pay for scipy
    from scipy.special import betaln

    a, b = prior
    if p <= 0.0:
        return 0.0 if x == 0 else math.inf
    if p >= 1.0:
        return 0.0 if x == n else math.inf
    return (betaln(x + a, n - x + b) - betaln(a, b)) - (x * math.log(p) + (n - x) * math.log1p(-p))


def rate_sequence(x: float, n: float, alpha: float = ALPHA,
                  prior: tuple[float, float] = JEFFREYS) -> tuple[float, float]:
    """The confidence sequence's interval for a rate after x of n items ((0, 1) before any item). x and n may be
    fractional (an effective n: `trustmh.run.rounds`)."""
    from scipy.optimize import brentq

    if n <= 0:
        return 0.0, 1.0
    if not 0 <= x <= n:
        raise ValueError(f"rate_sequence: {x} of {n} is not a count within its total")
    level = math.log(1.0 / alpha)
    centre = x / n  # M_n ≤ 1 at the maximum-likelihood rate: always inside

    def over(p: float) -> float:
        return log_martingale(p, x, n, prior) - level

    eps = 1e-12
    lo = 0.0 if x == 0 or over(eps) < 0 else brentq(over, eps, max(centre, 2 * eps), xtol=1e-10)
    hi = 1.0 if x == n or over(1 - eps) < 0 else brentq(over, min(centre, 1 - 2 * eps), 1 - eps, xtol=1e-10)
    return float(lo), float(hi)


def mean_sequence(total: float, n: float, scale: tuple[float, float], alpha: float = ALPHA,
                  prior: tuple[float, float] = JEFFREYS) -> tuple[float, float]:
    """The confidence sequence's interval for a mean of scores on `scale` (lo, hi) after n items summing to
    `total` (module docstring: the rate sequence on the scores rescaled to [0, 1], mapped back)."""
    lo, hi = float(scale[0]), float(scale[1])
    if not hi > lo:
        raise ValueError(f"mean_sequence: scale {scale} is not a range (low end below high end)")
    if n <= 0:
        return lo, hi
    x = (float(total) - lo * n) / (hi - lo)
    if not -1e-9 * n <= x <= n * (1 + 1e-9):
        raise ValueError(f"mean_sequence: mean {total / n:g} of {n:g} items lies outside the scale {lo:g}-{hi:g}")
    a, b = rate_sequence(min(max(x, 0.0), n), n, alpha, prior)
    return lo + a * (hi - lo), lo + b * (hi - lo)


# The share of α the first labelling round is read at; each later round gets ROUND_DECAY times the one before.
ROUND_DECAY = 0.2


def round_alpha(round_: int, alpha: float = ALPHA) -> float:
    """The error level the K-th labelling round's corrected interval is read at: α(1 − r)r^(K−1) with
    r = ROUND_DECAY, so the levels of every round together sum to α and the 1 − α coverage holds jointly over
    every round however many are labelled, with no maximum fixed in advance (a Bonferroni spending of α over
    the rounds, most of it on the first, where most checks decide; docs/statistics.md#labelling-rounds).
    Round 1 is read at 96%, round 2 at 99.2%, round 3 at 99.84%."""
    if round_ < 1:
        raise ValueError("round_alpha: rounds count from 1")
    return alpha * (1.0 - ROUND_DECAY) * ROUND_DECAY ** (round_ - 1)


def round_z(round_: int, alpha: float = ALPHA) -> float:
    """The two-sided normal quantile of `round_alpha`: the z of round K's CLT interval."""
    from scipy.special import ndtri

    return float(ndtri(1.0 - round_alpha(round_, alpha) / 2.0))
