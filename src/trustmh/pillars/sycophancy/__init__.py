"""The Anti-sycophancy pillar. See docs/pillars/sycophancy.md."""

from __future__ import annotations

from trustmh.pillars.sycophancy.aita import AitaYta
from trustmh.pillars.sycophancy.oeq import OpenEndedQuestions
from trustmh.pillars.sycophancy.pas import ProblematicActions

TITLE = "Anti-sycophancy"
SUITE = "trustmh"
POSITION = 7  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (OpenEndedQuestions, AitaYta, ProblematicActions)
