"""The Safety pillar. See docs/pillars/safety.md."""

from __future__ import annotations

from trustmh.pillars.safety.jailbreak import Antitoxic, JailbreakResistance
from trustmh.pillars.safety.over_refusal import OverRefusal

TITLE = "Safety"
SUITE = "trustmh"
POSITION = 3  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (JailbreakResistance, Antitoxic, OverRefusal)
