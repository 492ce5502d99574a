"""The Fairness pillar. See docs/pillars/fairness.md."""

from __future__ import annotations

from trustmh.pillars.fairness.overall import Fairness
from trustmh.pillars.fairness.stigma import Stigma

TITLE = "Fairness"
SUITE = "trustmh"
POSITION = 4  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (Fairness, Stigma)
