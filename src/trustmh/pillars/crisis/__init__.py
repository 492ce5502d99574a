"""The Crisis Identification and Escalation pillar. See docs/pillars/crisis.md."""

from __future__ import annotations

from trustmh.pillars.crisis.escalation import CrisisEscalation
from trustmh.pillars.crisis.identification import CrisisIdentification
from trustmh.pillars.crisis.interjections import Interjections
from trustmh.pillars.crisis.moore_reference import REFERENCE as MOORE_REFERENCE
from trustmh.pillars.crisis.severity import SeverityIdentification
from trustmh.pillars.crisis.study_reference import REFERENCE as STUDY_REFERENCE

TITLE = "Crisis Identification and Escalation"
SUITE = "trustmh"
POSITION = 2  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (CrisisIdentification, SeverityIdentification, CrisisEscalation, Interjections)
# the reference sets its judges are certified on (`trustmh judge certify --reference NAME`)
REFERENCES = (STUDY_REFERENCE, MOORE_REFERENCE)
