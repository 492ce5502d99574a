"""The Reliability pillar. See docs/pillars/reliability.md."""

from __future__ import annotations

from trustmh.pillars.reliability.diagnosis import PsychologicalDiagnosis
from trustmh.pillars.reliability.emotion import EmotionRecognition
from trustmh.pillars.reliability.intervention import PsychologicalIntervention
from trustmh.pillars.reliability.knowledge import Knowledge
from trustmh.pillars.reliability.support import EmotionalSupport

TITLE = "Reliability"
SUITE = "trustmh"
POSITION = 1  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (Knowledge, EmotionRecognition, PsychologicalDiagnosis, EmotionalSupport, PsychologicalIntervention)
