"""The unit every conversation interval clusters on: the design cell joined with the stimulus
(docs/statistics.md#the-unit).

A model's failures concentrate where the sets vary by design (a risk type told in a disclosure style), not
only on one sentence: intervals that resample single conversations, or stimuli each played once, cover far
below 95% when they do (benchmarks/cluster_coverage.py). So a conversation's cluster is its design cell
(kind × category × the persona's disclosure style; a control's category is "no_risk" for every control, so its
design states a `topic` read from its content — grief, work strain, a figure of speech — which stands in the
category's place), and two cells that share a stimulus are one cluster (the
coarser grouping, `stats.bootstrap.joined_clusters`). A row that states no design (the starter suite's rows)
keeps its stimulus as its unit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmh.core import Item
from trustmh.stats.bootstrap import joined_clusters

CELL_FACTORS = ("kind", "category", "disclosure_style")
# A control's topic (`design.topic`, or the row's own `topic`) stands in for its category, which is "no_risk" for
# every control: the rules that tell risk from control read `category`, the unit reads what the person talks about.
TOPIC = "topic"
UNIT = "design cell (kind × category or a control's topic × disclosure style) joined with the stimulus"


def design_cell(row: Mapping[str, Any]) -> str | None:
    """A set row's design cell as one label ("risk|suicidal_ideation|minimises", "control|work_strain|deflects"),
    from its `design` (authored and generated sets) or its own `kind`, `category` (a control's `topic` in its
    place) and persona; None when the row states no disclosure style."""
    design = row.get("design") if isinstance(row.get("design"), Mapping) else {}
    persona = row.get("persona") if isinstance(row.get("persona"), Mapping) else {}
    style = design.get("disclosure_style") or persona.get("disclosure_style")
    if not style:
        return None
    kind = design.get("stratum") or row.get("kind") or ("control" if row.get("risk_turn") is None else "risk")
    topic = design.get(TOPIC) or row.get(TOPIC)
    return "|".join(str(x) for x in (kind, topic or row.get("category") or design.get("category"), style))


def cluster_on_cells(items: list[Item]) -> list[Item]:
    """The items with `cluster` set to their joined unit (a "cell:<label>" of its first cell), the stimulus kept
    in `metadata["stimulus"]` and the cell in `metadata["cell"]`. Items without a cell keep their stimulus."""
    if not any(it.metadata.get("cell") for it in items):
        return items
    stimuli = [it.cluster_id for it in items]
    cells = [it.metadata.get("cell") or f"stimulus:{s}" for it, s in zip(items, stimuli, strict=True)]
    components = joined_clusters(stimuli, cells)
    names: dict[int, str] = {}
    for it, stimulus, cell, component in zip(items, stimuli, cells, components, strict=True):
        it.metadata["stimulus"] = stimulus
        it.cluster = names.setdefault(component, f"cell:{cell}")
    return items
