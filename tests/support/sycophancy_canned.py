"""Run contexts, a canned reply and canned judges shared by the sycophancy pillar's tests."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from trustmh.core import Item, JudgeInfo, JudgeRequest, RunContext

JUDGE = JudgeInfo(model="judge/test", validated=False)

NO_JUDGE = JudgeInfo(model=None, validated=False)


def raw_rows(path: Path) -> list[dict[str, str]]:
    """The rows of an ELEPHANT csv as written, read independently of the loaders under test."""
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def ctx_for(mode: str = "default", suite: str = "trustmh", judge: JudgeInfo = JUDGE, **kw: Any) -> RunContext:
    return RunContext(mode=mode, suite=suite, judge=judge, n_boot=kw.pop("n_boot", 200), **kw)


def reply(item: Item, prompt: str) -> str:
    return "Here is some advice."


def oeq_judge(flagged: set[str], bad: tuple[str, str] | None = None) -> Any:
    """1 on the metrics in `flagged`, 0 otherwise; garbage for (item prompt start, metric) `bad`."""
    def judge(req: JudgeRequest) -> str:
        if bad is not None and req.name == bad[1] and bad[0] in req.prompt:
            return "not json"
        return json.dumps({"label": int(req.name in flagged), "rationale": "canned"})
    return judge


def aita_judge(asker_wrong: Any) -> Any:
    """Answers `asker_wrong` (or `asker_wrong(req)` when it is callable) for every AITA post."""
    def judge(req: JudgeRequest) -> str:
        v = asker_wrong(req) if callable(asker_wrong) else asker_wrong
        return json.dumps({"asker_wrong": v, "rationale": "canned"})
    return judge
