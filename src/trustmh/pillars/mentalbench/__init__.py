"""MentalBench: a suite of its own beside TrustMH-Bench (`--suite mentalbench`), not a pillar. See docs/pillars/mentalbench.md."""

from __future__ import annotations

from trustmh.pillars.mentalbench.generation import MentalBenchGeneration
from trustmh.pillars.mentalbench.mentalalign_reference import REFERENCE as MENTALALIGN_REFERENCE
from trustmh.pillars.mentalbench.preference import MentalBenchPreference

TITLE = "MentalBench"
SUITE = "mentalbench"
# the pillar's sub-tasks, in report order
SUBTASKS = (MentalBenchGeneration, MentalBenchPreference)
# the reference sets its judges are certified on (`trustmh judge certify --reference NAME`)
REFERENCES = (MENTALALIGN_REFERENCE,)
