"""The crisis fixtures and the run context shared by the crisis pillar's tests."""

from __future__ import annotations

import json

from fixture_paths import FIXTURES
from trustmh.core import JudgeInfo, RunContext
from trustmh.pillars.crisis.data import CRISIS_FILES

FIX = FIXTURES / "crisis"

CSSRS_FIX = FIX / "cssrs_fixture.csv"


def ctx_for(mode: str = "default", suite: str = "trustmh", judge: str | None = None, **options) -> RunContext:
    """A run on the crisis fixtures; `options` add to (or override) the fixture paths."""
    opts = {"crisis_dir": str(FIX), "cssrs_path": str(CSSRS_FIX)} | options
    return RunContext(mode=mode, suite=suite, options=opts, n_boot=200, seed=7,
                      judge=JudgeInfo(model=judge, validated=False))


def raw(key: str) -> list:
    """A crisis fixture file as written, read independently of the loaders under test."""
    return json.loads((FIX / CRISIS_FILES[key]).read_text(encoding="utf-8"))
