"""What a planned run will be able to decide (`trustmh plan`): for each check of the gate policy, the items the run
will score against its min_n and the interval width expected; with `--target-width` / `--detect-difference`,
the items needed per sub-task (`stats/power.py`), from a pilot run's per-item variance or a stated rate,
capped by the data available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from trustmh.catalogue import lookup
from trustmh.core import Item, RunContext, Subtask, TrustmhError
from trustmh.gate import load_policy
from trustmh.gate.policy import Check
from trustmh.judges.certificates import (
    certificate_path,
    default_certificates_dir,
    find_certificate,
    judge_fingerprint,
)
from trustmh.judges.evidence import LabelsNeeded, labels_needed
from trustmh.results import load_items, load_results
from trustmh.results.item_scores import item_scores
from trustmh.run.plan_figures import GateCheckOutlook, GateOutlook, ItemsNeeded, PlanSettings, PowerRow
from trustmh.stats.power import effective_n, items_for_difference, items_for_width, normal_width, wilson_width

if TYPE_CHECKING:  # the plan's module imports the Inspect glue, loaded only when a run is planned
    from trustmh.run.select import RunPlan

# The rate assumed for interval widths and power when neither a pilot nor --rate says otherwise (the widest).
DEFAULT_RATE = 0.5


def pilot_sds(run_dir: str | Path) -> dict[str, tuple[float, int]]:
    """Per sub-task (per-item SD, items) from a finished run's items.jsonl (its per-item primary scores)."""
    try:
        results = load_results(run_dir)
    except TrustmhError as exc:
        raise TrustmhError(f"--pilot {run_dir}: not a finished run directory ({exc})") from None
    records = load_items(run_dir)
    if records is None:
        raise TrustmhError(f"--pilot {run_dir}: no items.jsonl (a run directory of trustmh >= 0.2 is needed)")
    out: dict[str, tuple[float, int]] = {}
    for sid in (results.get("subtasks") or {}):
        scores, _, _ = item_scores(sid, records, results)
        values = list(scores.values())
        if len(values) >= 2:
            mean = sum(values) / len(values)
            sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
            out[sid] = (sd, len(values))
    return out


def planned_units(sid: str, subtask: Subtask, planned: list[Item]) -> tuple[dict[str, int], dict[str, list[int]]]:
    """What a planned sub-task's checks are sized on: the items its primary is over (under `sid`), each counted
    rate's items (`"<sid>:<metric>"`) and, when the items say the persona's country, that rate's items per country
    (`"<sid>:<metric>@<country>"`: a jurisdiction's check counts its own, `Check.personas`); and the conversations
    per stimulus of the primary and of each rate, where they share stimuli (their design effect)."""
    units, sizes = {sid: subtask.primary_items(planned)}, {}
    by_country: dict[str, list[Item]] = {}
    for item in planned:
        if item.metadata.get("locale"):
            by_country.setdefault(str(item.metadata["locale"]), []).append(item)
    for metric in subtask.counted_rates:
        units[f"{sid}:{metric}"] = subtask.rate_items(metric, planned)
        units |= {f"{sid}:{metric}@{c}": subtask.rate_items(metric, part) for c, part in by_country.items()}
        if (rate_sizes := subtask.rate_cluster_sizes(metric, planned)) is not None:
            sizes[f"{sid}:{metric}"] = rate_sizes
    if (primary_sizes := subtask.primary_cluster_sizes(planned)) is not None:
        sizes[sid] = primary_sizes
    return units, sizes


def gate_outlook(samples: Mapping[str, int], items: Mapping[str, int], settings: PlanSettings,
                 ctx: RunContext, primary: Mapping[str, int] | None = None,
                 stimuli: Mapping[str, list[int]] | None = None) -> GateOutlook:
    """For each check of the gate policy: the items the run will score against min_n (for a check on the
    primary, the items the primary is over: `Subtask.primary_items`; for a counted rate, `Subtask.rate_items`,
    under "<sub-task>:<metric>"), and the interval width expected at the stated rate (the check's own limit when
    it is a rate, else --rate, else 0.5). A check on a primary whose items share stimuli (`stimuli`:
    conversations per stimulus) is planned on its effective n instead (`stimulus_check`)."""
    policy = load_policy(settings.policy)
    pilot = pilot_sds(settings.pilot) if settings.pilot else {}
    measured = settings.pilot_correlations if stimuli else {}
    rows = []
    for check in policy.checks:
        cls = lookup(check.subtask)
        untestable = cls.untestable_rates() if check.subtask in items and hasattr(cls, "untestable_rates") else {}
        if check.metric in untestable:  # as the gate will say (gate.evaluate's not_testable)
            rows.append(GateCheckOutlook(id=check.id, subtask=check.subtask, metric=check.metric, items=0,
                                         min_n=check.min_n or policy.min_n, in_run=True, decidable=False,
                                         reason=f"not testable on this product: {untestable[check.metric]}",
                                         width=None, width_basis="no items can show it", not_testable=True))
            continue
        # a primary's stimuli under the sub-task's id; a counted rate's (false alarms) under "<sub-task>:<metric>"
        unit_key = check.subtask if check.metric == "value" else f"{check.subtask}:{check.metric}"
        if stimuli and stimuli.get(unit_key):
            rows.append(pilot_check(check, stimuli[unit_key], policy.min_n, settings, ctx, pilot,
                                    measured.get(unit_key)))
            continue
        n = items.get(check.subtask, 0)
        if check.metric == "value" and primary and check.subtask in primary:
            n = primary[check.subtask]
        elif primary and f"{check.subtask}:{check.metric}" in primary:  # a counted rate: over its own items
            n = primary[f"{check.subtask}:{check.metric}"]
        whose = ""
        if check.personas:  # decided on its jurisdiction's personas alone, as the gate counts them
            n = sum((primary or {}).get(f"{check.subtask}:{check.metric}@{c}", 0) for c in check.personas)
            whose = f" of {', '.join(check.personas)}"
        min_n = check.min_n or policy.min_n
        limit = check.max if check.max is not None else check.min
        if check.subtask not in items:
            decidable, reason = False, "sub-task not in this run"
        elif n < min_n:
            decidable, reason = False, (f"{items_text(n)}{whose} < min_n {min_n}: the gate will say insufficient "
                                        "evidence")
        else:
            decidable, reason = True, f"{items_text(n)}{whose} >= min_n {min_n}"
        labels: LabelsNeeded | None = None
        if decidable and check.counted and cls is not None and cls.judge_templates and ctx.judges \
                and usable_certificate(cls, ctx) is None:  # a judged counted rate: the gate asks for evidence
            if check.metric in getattr(cls, "rule_rates", ()):  # unless a rule reads it (gate.evaluate)
                reason += ", read by a rule (no judge evidence needed)"
            else:
                labels = check_labels_needed(check, n, float(n), min_n, settings)
                decidable, reason = labels_reason(check, labels)
        width: float | None
        if check.subtask in pilot and check.metric == "value" and pilot[check.subtask][0] > 0:
            sd, _ = pilot[check.subtask]
            width, basis = normal_width(sd, n), f"pilot per-item SD {sd:.3f}"
        elif limit is not None and not 0 <= float(limit) <= 1:
            width, basis = None, "not a rate (its limit is on another scale): give --pilot RUN_DIR for its expected width"
        else:
            rate = settings.rate if settings.rate is not None else (
                float(limit) if limit is not None and 0 < float(limit) < 1 else DEFAULT_RATE)
            width, basis = (wilson_width(rate, n) if n else None), f"Wilson 95% at rate {rate:g}"
        rows.append(GateCheckOutlook(id=check.id, subtask=check.subtask, metric=check.metric, items=n,
                                     min_n=min_n, in_run=check.subtask in items, decidable=decidable,
                                     reason=reason, width=width, width_basis=basis,
                                     labels_needed=None if labels is None else labels.n,
                                     labels_basis=None if labels is None else labels.to_json()))
    return GateOutlook(policy=policy.version, source=policy.source, checks=tuple(rows))


def items_text(n: int) -> str:
    """The count with its noun: 1 item, 2,500 items."""
    return f"{n:,} item" if n == 1 else f"{n:,} items"


def power(plan: RunPlan, items: Mapping[str, int], settings: PlanSettings) -> dict[str, PowerRow]:
    """Items needed per sub-task for --target-width / --detect-difference, capped by the data available."""
    pilot = pilot_sds(settings.pilot) if settings.pilot else {}
    rate = settings.rate if settings.rate is not None else DEFAULT_RATE
    rows: dict[str, PowerRow] = {}
    for sid in items:
        sd, basis = math.sqrt(rate * (1 - rate)), f"stated rate {rate:g} (SD {math.sqrt(rate * (1 - rate)):.3f})"
        if sid in pilot:
            pilot_sd, n_pilot = pilot[sid]
            if pilot_sd > 0:
                sd, basis = pilot_sd, f"pilot {settings.pilot}: per-item SD {pilot_sd:.3f} over {n_pilot} items"
            else:  # every pilot item scored the same: no spread to size a run from
                basis = f"pilot {settings.pilot}: no spread over {n_pilot} items, so {basis}"
        if sid not in pilot or pilot[sid][0] <= 0:
            refuse_rate_targets(sid, settings)
        available = available_items(plan, sid)

        def needed(need: int, target: float, difference: bool, available: int | None = available) -> ItemsNeeded:
            return ItemsNeeded(target=target, items_needed=need, capped=available is not None and need > available,
                               items=min(need, available) if available is not None else need, difference=difference)

        rows[sid] = PowerRow(
            basis=basis, planned_items=items[sid], available_items=available,
            target_width=None if settings.target_width is None else needed(
                items_for_width(sd, settings.target_width), settings.target_width, False),
            detect_difference=None if settings.detect_difference is None else needed(
                items_for_difference(sd, settings.detect_difference), settings.detect_difference, True))
    return rows


def refuse_rate_targets(sid: str, settings: PlanSettings) -> None:
    """A sub-task sized from a rate (no pilot spread) measures a proportion: a width or difference of 1 or
    more spans the whole 0-1 range, so it is a typo (5 for 0.05?) that would plan 1 item, never a plan."""
    for flag, value in (("--target-width", settings.target_width), ("--detect-difference", settings.detect_difference)):
        if value is not None and value >= 1:
            raise TrustmhError(f"{flag} {value:g}: {sid} is sized as a rate (0 to 1), so {flag} must be below 1 "
                               f"(e.g. 0.05 for five points)")


def available_items(plan: RunPlan, sid: str) -> int | None:
    """Items of a sub-task without --limit (None when they cannot be loaded here)."""
    try:
        return len(plan.subtasks[sid].items(replace(plan.ctx, limit=None)))
    except Exception:  # noqa: BLE001  data not on this machine: no cap is stated
        return None


# The 95% width a conversation check is sized for (docs/conversations.md#sets): narrower, and a model near the
# limit can be told from one past it. It is a share of the scale's range (`deciding_width`): 0.15 on a 0-1 rate,
# 0.30 on the delusion check's 0-2 mean, the same resolution relative to what the figure can be.
DECIDING_WIDTH = 0.15


def deciding_width(scale: tuple[float, float]) -> float:
    """The width a check on a primary of this `scale` (lo, hi) is sized for: DECIDING_WIDTH of its range."""
    lo, hi = scale
    return DECIDING_WIDTH * (hi - lo)


def pilot_check(check: Check, sizes: list[int], min_n: int, settings: PlanSettings, ctx: RunContext,
                pilot: Mapping[str, tuple[float, int]], measured: float | None) -> GateCheckOutlook:
    """`stimulus_check` at the correlation a pilot run's judged values showed within the units (`measured`,
    `PlanSettings.pilot_correlations`) where it showed one, the figures at the assumed `--icc` stated beside
    (docs/statistics.md#pilot-correlation); else at the assumed one."""
    assumed = stimulus_check(check, sizes, min_n, settings, ctx, pilot)
    if measured is None:
        return assumed
    row = stimulus_check(check, sizes, min_n, replace(settings, icc=measured), ctx, pilot)
    return replace(row, icc_assumed=settings.icc, icc_measured=measured,
                   reason=f"{row.reason} [at the correlation {measured:.2f} the pilot's judged values show within "
                          f"the units; at the assumed {settings.icc:g}: {assumed.reason}]",
                   at_assumed_icc={"icc": settings.icc, "effective_n": assumed.effective_n, "width": assumed.width,
                                   "decidable": assumed.decidable, "labels_needed": assumed.labels_needed})


def stimulus_check(check: Check, sizes: list[int], min_n: int, settings: PlanSettings, ctx: RunContext,
                   pilot: Mapping[str, tuple[float, int]]) -> GateCheckOutlook:
    """A check on a primary whose conversations share stimuli: its clusters, the effective n at `--icc`, the
    expected width (Wilson on the effective n for a rate; for a mean, 1.96·SD/√n_eff from the pilot's SD or
    the spread `assumed_rating_spread` states at the limit), and decidable only when that width fits and a certificate
    of the check's judge can be used; otherwise what is missing (docs/statistics.md#clustered-intervals)."""
    n, n_eff = sum(sizes), effective_n(sizes, settings.icc)
    limit = check.max if check.max is not None else check.min
    cls = lookup(check.subtask)
    lo, hi = getattr(cls, "primary_scale", (0.0, 1.0))
    target = deciding_width((lo, hi))  # a rate below is a 0-1 share whatever the primary's scale
    if check.metric == "value" and check.subtask in pilot and pilot[check.subtask][0] > 0:
        width, basis = normal_width(pilot[check.subtask][0], n_eff), "pilot per-item SD"
    elif check.rate or (lo, hi) == (0.0, 1.0):
        target = DECIDING_WIDTH
        rate = settings.rate if settings.rate is not None else (
            float(limit) if limit is not None and 0 < float(limit) < 1 else DEFAULT_RATE)
        width, basis = wilson_width(rate, n_eff), f"Wilson 95% at rate {rate:g}"
    else:
        mean = float(limit) if limit is not None and lo < float(limit) < hi else (lo + hi) / 2
        spread, spread_basis = assumed_rating_spread(cls, mean)
        width, basis = normal_width(math.sqrt(spread), n_eff), spread_basis
    # a conversation set's unit is its design cell joined with the stimulus (docs/statistics.md#the-unit)
    units = "clusters (design cell × stimulus)" if getattr(cls, "cell_unit", False) else "stimuli"
    basis += f" on the effective n {n_eff:.0f} ({len(sizes)} {units}, ICC {settings.icc:g})"
    cert = usable_certificate(cls, ctx)
    labels: LabelsNeeded | None = None
    if n < min_n:
        decidable, reason = False, f"{items_text(n)} < min_n {min_n}: the gate will say insufficient evidence"
    elif width is None or width > target:
        decidable, reason = False, (f"not decidable: expected width {width:.3f} > {target:g} "
                                    f"({len(sizes)} {units}, effective n {n_eff:.0f}): more {units.split()[0]} "
                                    "narrow it")
    elif check.metric in getattr(cls, "rule_rates", ()):  # read by a rule: no judge to certify or correct
        decidable, reason = True, f"{items_text(n)} on {len(sizes)} {units}, read by a rule (no judge evidence needed)"
    elif cert is None:
        sd = pilot[check.subtask][0] if check.metric == "value" and pilot.get(check.subtask, (0.0,))[0] > 0 else None
        labels = check_labels_needed(check, n, n_eff, min_n, settings, None if sd is None else sd ** 2, sizes)
        decidable, reason = labels_reason(check, labels)
        if sd is None and labels is not None and not check.rate and (lo, hi) != (0.0, 1.0):
            reason += at_largest_spread(check, n, n_eff, min_n, settings, sizes, lo, hi)
    else:
        decidable, reason = True, f"{items_text(n)} on {len(sizes)} {units}, certificate {cert}"
    return GateCheckOutlook(id=check.id, subtask=check.subtask, metric=check.metric, items=n, min_n=min_n,
                            in_run=True, decidable=decidable, reason=reason, width=width, width_basis=basis,
                            clusters=len(sizes), effective_n=n_eff, icc_assumed=settings.icc,
                            certificate_path=cert, labels_needed=None if cert or labels is None else labels.n,
                            labels_basis=None if cert or labels is None else labels.to_json())


def check_labels_needed(check: Check, n: int, n_eff: float, min_n: int, settings: PlanSettings,
                        spread: float | None = None, sizes: list[int] | None = None) -> LabelsNeeded | None:
    """The two-rater labels that decide a judged check on the primary at its `deciding_width` (`judges.evidence`),
    at the rate the plan assumes (--rate, else the check's limit) or, for a mean, the per-item variance
    `spread` (a pilot's) else `assumed_rating_spread` at the limit. A counted rate (false alarms over the
    controls) is labelled on its own items (`Subtask.rate_per_item`; `n`, `n_eff` are those items'). None for a
    check the run's labels cannot correct (a jurisdiction's share, a figure with no per-item flag: a
    certificate decides it). `trustmh plan` and `review export --for-gate` both ask here."""
    cls = lookup(check.subtask)
    flagged = check.counted and check.metric in dict(getattr(cls, "rate_per_item", {}) or {})
    if (check.metric != "value" and not flagged) or check.personas:  # as the gate reads it (gate.evaluate)
        return None
    lo, hi = getattr(cls, "primary_scale", (0.0, 1.0))
    rate = flagged or check.rate or (lo, hi) == (0.0, 1.0)
    limit = check.max if check.max is not None else check.min
    if rate:
        p = settings.rate if settings.rate is not None else (
            float(limit) if limit is not None and 0 < float(limit) < 1 else DEFAULT_RATE)
        return labels_needed(kind="labels", spread=p * (1 - p), n_effective=n_eff, n_items=n, width=DECIDING_WIDTH,
                             min_n=min_n, agreement=settings.assume_agreement, rate=p, sizes=sizes)
    mean = float(limit) if limit is not None and lo < float(limit) < hi else (lo + hi) / 2
    if spread is None:
        spread = assumed_rating_spread(cls, mean)[0]
    return labels_needed(kind="ratings", spread=spread, n_effective=n_eff, n_items=n, width=deciding_width((lo, hi)),
                         min_n=min_n, agreement=settings.assume_agreement, sizes=sizes, scale=(lo, hi), mean=mean)


def assumed_rating_spread(cls: type[Subtask] | None, mean: float) -> tuple[float, str]:
    """The per-item variance the plan assumes for a rating at `mean` with no pilot, and its basis: each of the
    scale's unit steps an independent yes at the mean's share (binomial on the steps, (μ − lo)(hi − μ)/k for k
    steps; for a 0-1 rate, p(1 − p)). The largest the scale allows, every item at an end, is k times that; the
    plan states what it would take beside (`at_largest_spread`; docs/statistics.md#a-ratings-spread)."""
    lo, hi = getattr(cls, "primary_scale", (0.0, 1.0))
    steps = max(1, round(hi - lo))
    spread = (mean - lo) * (hi - mean) / steps
    return spread, f"SD {math.sqrt(spread):.3f} of a {lo:g}-{hi:g} mean at {mean:g} on {steps} independent steps"


def at_largest_spread(check: Check, n: int, n_eff: float, min_n: int, settings: PlanSettings, sizes: list[int],
                      lo: float, hi: float) -> str:
    """The plan's caveat on a rating sized at its assumed spread: what the largest spread its scale allows
    (every item at an end) would need."""
    limit = check.max if check.max is not None else check.min
    mean = float(limit) if limit is not None and lo < float(limit) < hi else (lo + hi) / 2
    largest = check_labels_needed(check, n, n_eff, min_n, settings, (mean - lo) * (hi - mean), sizes)
    said = "no count of labels: more cells" if largest is None or largest.n is None else f"{largest.n} labels"
    return (f"; at the largest SD its scale allows ({math.sqrt((mean - lo) * (hi - mean)):.3f}, every conversation "
            f"at an end) {said}; a pilot's SD (`--pilot RUN_DIR`) says which")


def labels_reason(check: Check, labels: LabelsNeeded | None) -> tuple[bool, str]:
    """(decidable, the plan's line) for a judged check without a usable certificate."""
    if labels is None:
        return False, ("not decidable: needs a certificate (its figure has no per-item flag the run's labels "
                       "could correct, or is one jurisdiction's share; docs/statistics.md#the-runs-own-labels)")
    if labels.n is None:
        return False, f"not decidable by labels: {labels.binding}"
    return True, (f"decidable with {labels.n} two-rater labels of this run (at an assumed judge-human and "
                  f"rater-rater agreement of {labels.agreement:g}; set by {labels.binding}; `trustmh review export "
                  f"RUN_DIR --for-gate POLICY`, or a certificate: trustmh review export RUN_DIR --subtask "
                  f"{check.subtask})")


def usable_certificate(cls: type[Subtask] | None, ctx: RunContext) -> str | None:
    """The path of a certificate that certifies this run's judge of the sub-task (the judge's fingerprint,
    verdict pass, the reference-quality rule satisfied; for a conversation sub-task, measured on
    conversations), else None."""
    if cls is None or not cls.judge_templates or not ctx.judges:
        return None
    try:
        fingerprint = judge_fingerprint(cls, ctx)
    except TrustmhError:
        return None
    found = find_certificate(default_certificates_dir(), fingerprint, cls.id, cls.judged_unit)
    if found is None or found.get("verdict") != "pass":
        return None
    return str(certificate_path(default_certificates_dir(), fingerprint))
