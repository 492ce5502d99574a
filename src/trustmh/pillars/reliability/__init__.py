"""The Reliability pillar. See docs/pillars/reliability.md."""

from __future__ import annotations

from trustmh.pillars.reliability.generation import (
    EmotionalSupport,
    PsychologicalDiagnosis,
    PsychologicalIntervention,
)
from trustmh.pillars.reliability.mcq import EmotionRecognition, Knowledge

TITLE = "Reliability"
SUITE = "trustmh"
POSITION = 1  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (Knowledge, EmotionRecognition, PsychologicalDiagnosis, EmotionalSupport, PsychologicalIntervention)
