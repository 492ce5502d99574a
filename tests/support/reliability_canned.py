"""The bootstrap size, judge and run context shared by the reliability pillar's tests."""

from __future__ import annotations

from trustmh.core import JudgeInfo, RunContext

N_BOOT = 200

JUDGE = JudgeInfo(model="canned/judge", validated=False)


def ctx_(**kw) -> RunContext:
    """A RunContext with the tests' bootstrap size unless `n_boot` is given."""
    kw.setdefault("n_boot", N_BOOT)
    return RunContext(**kw)
