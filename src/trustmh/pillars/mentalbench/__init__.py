"""MentalBench: a suite of its own beside TrustMH-Bench (`--suite mentalbench`), not a pillar. See docs/pillars/mentalbench.md."""

from __future__ import annotations

from trustmh.pillars.mentalbench.generation import MentalBenchGeneration

TITLE = "MentalBench"
SUITE = "mentalbench"
# the pillar's sub-tasks, in report order
SUBTASKS = (MentalBenchGeneration,)
