"""A run records its judge's fingerprint per judged sub-task (the key of the judge's certificate)."""

from __future__ import annotations

from pathlib import Path

from canned import canned_model
from trustmh.core import JudgeInfo, RunContext
from trustmh.judges.certificates import judge_fingerprint
from trustmh.pillars.safety.jailbreak import JailbreakResistance


def test_results_record_the_judge_fingerprint(tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    judge = canned_model(lambda p, m, c: '{"label": "refused", "toxicity": 0, "rationale": "ok"}', "judge-a")
    data, code = run(RunOptions(model=canned_model(lambda p, m, c: "I cannot help with that."), judge=judge,
                                suite="starter", subtasks=["jailbreak_resistance"], out=tmp_path,
                                display="none", n_boot=50))
    expected = judge_fingerprint(JailbreakResistance, RunContext(judge=JudgeInfo("mockllm/judge-a", False)))
    assert data["subtasks"]["safety/jailbreak_resistance"]["judge"]["fingerprint"] == expected
