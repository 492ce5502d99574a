"""The Clinical judgment pillar: how a model's clinical judgment compares with experts' and with people's.
See docs/pillars/clinical.md."""

from __future__ import annotations

from trustmh.pillars.clinical.judge_check import REFERENCE as SIRI2_REFERENCE
from trustmh.pillars.clinical.siri2 import Siri2

TITLE = "Clinical judgment"
SUITE = "trustmh"
POSITION = 10  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = False
# the pillar's sub-tasks, in report order
SUBTASKS = (Siri2,)
# the reference sets its judges are certified on (`trustmh judge certify --reference NAME`)
REFERENCES = (SIRI2_REFERENCE,)
