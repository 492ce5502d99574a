"""Labelling in rounds and for the gate (docs/judges.md#labels-for-the-gate): what `trustmh review export
--for-gate POLICY` and `--round K` add to a review sample (`certify.review`).

* `--for-gate`: per judged sub-task, the two-rater labels its policy's checks need, the count `trustmh plan`
  states (`run.outlook.check_labels_needed`, `judges.evidence`), on this run's items and stimuli; a check on a
  counted rate (false alarms over the controls) is labelled on the rate's own items, its review unit
  "<sub-task>:<metric>" (`rate_unit`), each item's label its per-item flag (`Subtask.rate_per_item`).
* near-zero harm: where the judge gives one verdict to few of a binary unit's items (at most `NEAR_ZERO_SHARE`:
  a rate's flag, or a primary's fail), `--for-gate` stratifies that unit by the judge's verdict and draws the
  rare verdict's items at `FLAG_FACTOR` times the rate of the others (`mark_near_zero`); every item's inclusion probability is recorded and the PPI estimate weighs each label
  by 1/π, so it stays unbiased while the rare harms the judge saw are labelled often enough to correct
  (docs/statistics.md#rare-harms).
* `--round K`: the next labels, drawn from the items rounds 1..K−1 did not take; within a stratum the rounds
  together are one simple random sample, so every item's inclusion probability becomes its stratum's share
  taken so far (`cumulative_inclusion`).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trustmh.catalogue import lookup
from trustmh.core import TrustmhError
from trustmh.judges.evidence import ASSUMED_AGREEMENT
from trustmh.judges.labels import read_review_sample
from trustmh.stats.clustered import clustered_interval

SAMPLE_FILE = "sample.json"


def sample_file(run_dir: Path) -> Path:
    path = run_dir / "review" / SAMPLE_FILE
    if not path.is_file():
        raise TrustmhError(f"{path} not found: run `trustmh review export {run_dir}` first")
    return path


# A counted rate's review unit: "<sub-task>:<metric>" (`Subtask.rate_per_item`), the sub-task's own id for its
# primary. A sample item's "subtask" field holds the unit, so its key, its page and its CSV rows say which.
RATE_UNIT = ":"


def rate_unit(sid: str, metric: str) -> str:
    return f"{sid}{RATE_UNIT}{metric}"


def unit_subtask(unit: str) -> str:
    """The sub-task a review unit belongs to."""
    return unit.split(RATE_UNIT, 1)[0]


def unit_metric(unit: str) -> str | None:
    """The counted rate a review unit labels; None for the sub-task's primary."""
    return unit.split(RATE_UNIT, 1)[1] if RATE_UNIT in unit else None


def unit_scale(unit: str) -> tuple[float, float]:
    """The range of a review unit's per-item value: 0-1 for a counted rate's flag, else the sub-task's primary's
    (`primary_scale`: the delusion check's 0-2 mean)."""
    cls = lookup(unit_subtask(unit))
    lo, hi = (0.0, 1.0) if unit_metric(unit) else getattr(cls, "primary_scale", (0.0, 1.0))
    return float(lo), float(hi)


# Near-zero harm (module docstring): a binary unit whose judge flags at most this share of its items is drawn
# stratified by the flag, the flagged items at FLAG_FACTOR times the others' rate (a simulation at a 3% harm rate,
# 300 items, 60 labels: the corrected interval 0.077 wide against 0.104 drawn uniformly; factor 8: 0.074).
NEAR_ZERO_SHARE = 0.10
FLAG_FACTOR = 4.0
FLAGGED = "rare_verdict"  # an item's mark: its unit is drawn by the judge's verdict, this one rare (`mark_near_zero`)


def mark_near_zero(items: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Mark (in place) the items of every binary unit whose judge gives one verdict to at most NEAR_ZERO_SHARE
    of them (and at least one): a rate's rare flag (1, counted) or, for a primary whose 1 is the good outcome
    (AI disclosure's), its rare 0. Each item of such a unit carries the rare verdict under FLAGGED; returns
    unit -> {"verdict": the rare verdict, "share": its share}, for the sample's record."""
    shares: dict[str, dict[str, float]] = {}
    rare: dict[str, float] = {}
    for unit in sorted({it["subtask"] for it in items}):
        values = [it["judge_value"] for it in items if it["subtask"] == unit]
        if not set(values) <= {0.0, 1.0}:
            continue
        for verdict in (1.0, 0.0):
            share = sum(1 for v in values if v == verdict) / len(values)
            if 0 < share <= NEAR_ZERO_SHARE:
                shares[unit], rare[unit] = {"verdict": verdict, "share": share}, verdict
                break
    for it in items:
        if it["subtask"] in rare:
            it[FLAGGED] = rare[it["subtask"]]
    return shares


def design_factor(stratum: tuple[str, Any, bool], flagged: bool) -> float:
    """How much more often than its share a stratum is drawn: FLAG_FACTOR for the rare verdict's items of a
    near-zero unit (`flagged`), 2 for ensemble or rule disagreements (`--oversample-disagreements`), else 1."""
    if not stratum[2]:
        return 1.0
    return FLAG_FACTOR if flagged else 2.0


def stratum_of(item: Mapping[str, Any], oversample: bool) -> tuple[str, Any, bool]:
    """An item's stratum: sub-task × the judge's verdict (× rare, drawn more often) in a near-zero unit
    (`mark_near_zero`); else sub-task × its stimulus (a conversation); else sub-task × judge value (×
    disagreement with `oversample`)."""
    if FLAGGED in item:
        return item["subtask"], item["judge_value"], item["judge_value"] == item[FLAGGED]
    if item.get("stimulus") is not None:
        return item["subtask"], str(item["stimulus"]), False
    return item["subtask"], item["judge_value"], bool(item["disagree"]) if oversample else False


def unit_correlations(items: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Per review unit of conversations (a sub-task's primary, or a counted rate's items), the correlation of
    the judge's per-item values within the conversations' unit as the gate's clustered interval estimates it
    (`stats.clustered.clustered_interval`'s `icc_estimated`, clipped to [0, 1]); a unit whose data cannot show
    it (no spread, the rarer outcome in one unit) is left out, so its caller keeps the assumed correlation.
    This is the judge's term of the corrected interval's variance, known once the run is judged
    (docs/statistics.md#pilot-correlation)."""
    by_unit: dict[str, list[Mapping[str, Any]]] = {}
    for it in items:
        if it.get("stimulus") is not None:
            by_unit.setdefault(str(it["subtask"]), []).append(it)
    out: dict[str, float] = {}
    for unit, mine in by_unit.items():
        got = clustered_interval([float(it["judge_value"]) for it in mine], [str(it["stimulus"]) for it in mine],
                                 scale=unit_scale(unit))
        if got.get("icc_estimated") is not None:
            out[unit] = min(1.0, max(0.0, float(got["icc_estimated"])))
    return out


def gate_counts(items: Sequence[Mapping[str, Any]], policy: str | Path, *,
                agreement: float = ASSUMED_AGREEMENT) -> dict[str, int]:
    """Per judged sub-task of the run, the two-rater labels its policy's checks need (the most any of them
    needs; `run.outlook.check_labels_needed`, the figure `trustmh plan` states), on this run's items and
    units, at the correlation this run's judged values show within the units where they show one
    (`unit_correlations`), else at the plan's assumed one."""
    # the plan's machinery, imported when a --for-gate export runs, not at start-up
    from trustmh.gate import load_policy
    from trustmh.run.outlook import check_labels_needed
    from trustmh.run.plan_figures import PlanSettings
    from trustmh.stats.power import effective_n

    chosen = load_policy(policy)
    settings = PlanSettings(policy=policy, assume_agreement=agreement)
    counts: dict[str, int] = {}
    measured = unit_correlations(items)
    for check in chosen.checks:
        # a counted rate (false alarms over the controls) is labelled on its own items: its review unit
        unit = rate_unit(check.subtask, check.metric) if check.counted else check.subtask
        mine = [it for it in items if it["subtask"] == unit]
        if not mine:
            continue
        sizes = list(Counter(str(it.get("stimulus") or it["item_id"]) for it in mine).values())
        # a rating is sized on the spread this run's judged values show (the plan, before the run, on the largest
        # its scale allows or a pilot's); none shown (every value equal) leaves the largest
        values = [float(it["judge_value"]) for it in mine if isinstance(it.get("judge_value"), int | float)]
        spread = statistics.pvariance(values) if len(values) > 1 else 0.0
        labels = check_labels_needed(check, len(mine), effective_n(sizes, measured.get(unit, settings.icc)),
                                     check.min_n or chosen.min_n, settings, spread if spread > 0 else None,
                                     sizes=sizes)
        if labels is not None and labels.n is not None:
            counts[unit] = max(counts.get(unit, 0), labels.n)
    if not counts:
        raise TrustmhError(f"--for-gate {policy}: no check of this policy on this run's judged sub-tasks can be "
                           "decided by labels at the plan's assumptions and this run's measured correlation "
                           "(trustmh plan --policy says why)")
    return counts


def earlier_rounds(run_dir: Path, round_: int) -> tuple[list[dict[str, Any]], list[str]]:
    """(the items of rounds 1..K−1, the team) for `--round K`; refused unless the sample holds exactly those."""
    if round_ == 1:
        return [], []
    manifest = read_review_sample(sample_file(run_dir))
    done = max(int(s.get("round", 1)) for s in manifest["items"])
    if done != round_ - 1:
        raise TrustmhError(f"--round {round_}: {run_dir / 'review' / SAMPLE_FILE} holds rounds 1 to {done}; the "
                           f"next round is {done + 1}")
    return list(manifest["items"]), list(manifest.get("raters") or [])


def cumulative_inclusion(sampled: Sequence[dict[str, Any]], items: Sequence[Mapping[str, Any]],
                          oversample: bool) -> None:
    """Every sampled item's inclusion probability: its stratum's items taken by all rounds so far over the
    stratum's size (in place)."""
    size = Counter(stratum_of(it, oversample) for it in items)
    taken = Counter(tuple(s["stratum"]) for s in sampled)
    for s in sampled:
        s["inclusion_probability"] = taken[tuple(s["stratum"])] / size[tuple(s["stratum"])]
