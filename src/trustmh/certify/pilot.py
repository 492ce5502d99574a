"""A pilot run's within-unit correlations, for `trustmh plan --pilot RUN_DIR` (docs/statistics.md#pilot-correlation).

The plan sits a floor below the review's reading of a run, so the command reads them here and hands them to
the plan (`PlanSettings.pilot_correlations`)."""

from __future__ import annotations

from pathlib import Path

from trustmh.certify.review import judged_items
from trustmh.certify.review_rounds import unit_correlations
from trustmh.core import TrustmhError


def pilot_correlations(run_dir: str | Path) -> dict[str, float]:
    """Per review unit of conversations (a sub-task's primary under its id, a counted rate under
    "<sub-task>:<metric>"), the within-unit correlation of a pilot run's judged values (`unit_correlations`,
    the gate's own estimate), for `trustmh plan --pilot` (`PlanSettings.pilot_correlations`); {} for a run with
    nothing judged."""
    try:
        _, items = judged_items(Path(run_dir), None, rates=True)
    except TrustmhError:
        return {}
    return unit_correlations(items)  # its units are named as the plan's: "<sub-task>:<metric>" for a rate
