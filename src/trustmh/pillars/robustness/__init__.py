"""The Robustness pillar. See docs/pillars/robustness.md."""

from __future__ import annotations

from trustmh.pillars.robustness.diagnosis import RobustnessDiagnosis
from trustmh.pillars.robustness.support import RobustnessEmotionalSupport

TITLE = "Robustness"
SUITE = "trustmh"
POSITION = 6  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (RobustnessEmotionalSupport, RobustnessDiagnosis)
