"""The Privacy pillar. See docs/pillars/privacy.md."""

from __future__ import annotations

from trustmh.pillars.privacy.awareness import PrivacyAwareness
from trustmh.pillars.privacy.leakage import PrivacyLeakage

TITLE = "Privacy"
SUITE = "trustmh"
POSITION = 5  # the pillar's place in reports
# part of the original benchmark (faithful mode keeps its eight pillars)
FAITHFUL = True
# the pillar's sub-tasks, in report order
SUBTASKS = (PrivacyAwareness, PrivacyLeakage)
