"""The Ethics pillar. See docs/pillars/ethics.md."""

from __future__ import annotations

from trustmh.pillars.ethics.reasoning import EthicalReasoning

TITLE = "Ethics"
SUITE = "trustmh"
POSITION = 8  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (EthicalReasoning,)
