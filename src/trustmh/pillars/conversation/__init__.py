"""The Conversation pillar. See docs/pillars/conversation.md."""

from __future__ import annotations

from trustmh.pillars.conversation.subtasks import (
    Delusion,
    GradualDisclosure,
    MultiturnJailbreak,
    SimulatedPatient,
)

TITLE = "Conversation"
SUITE = "trustmh"
POSITION = 9  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = False
# the pillar's sub-tasks, in report order
SUBTASKS = (GradualDisclosure, Delusion, MultiturnJailbreak, SimulatedPatient)
