"""End-to-end runs of the bundled model (SmolLM2-135M in-process), small limits, fully offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from trustmh.cli import main
from trustmh.run.config import (
    DEMO_FAIRNESS_VALUES,
    DEMO_JUDGE_TEXT_CHARS,
    DEMO_MAX_TOKENS,
    DEMO_REPLY_CAP,
    RunOptions,
    resolve,
)


def test_demo_trims_apply_to_the_offline_demo_only() -> None:
    """No model call: the bundled model on the starter suite gets the demo's trims; on the full suite only
    its usual reply cap; another judge gets no judge trims."""
    demo = resolve(RunOptions(subtasks=["knowledge"])).context()
    assert demo.limit == 2
    assert demo.options["max_tokens_cap"] == DEMO_REPLY_CAP
    assert demo.options["judge_text_chars"] == DEMO_JUDGE_TEXT_CHARS
    real = resolve(RunOptions(subtasks=["knowledge"], suite="trustmh")).context()
    assert real.limit is None
    assert real.options["max_tokens_cap"] == DEMO_MAX_TOKENS
    assert demo.options["reasks"] == 0
    assert demo.options["fairness_values"] == DEMO_FAIRNESS_VALUES
    assert demo.options["anchors"] == 0  # the bundled judge is never certified: no anchors in the demo
    assert not {"judge_text_chars", "fairness_escalation_items", "awareness_samples", "reasks",
                "fairness_values", "anchors", "answer_schema"} & set(real.options)
    other_judge = resolve(RunOptions(subtasks=["knowledge"], no_judge=True)).context()
    assert "judge_text_chars" not in other_judge.options
    mine = resolve(RunOptions(subtasks=["knowledge"], limit=3, options={"max_tokens_cap": 50}))
    assert mine.limit == 3
    assert mine.context().options["max_tokens_cap"] == 50  # the user's values win


def test_the_users_options_are_never_written_to() -> None:
    asked = {"max_tokens_cap": "50"}
    spec = resolve(RunOptions(subtasks=["knowledge"], options=asked))
    assert spec.options == {"max_tokens_cap": "50"} and asked == {"max_tokens_cap": "50"}


@pytest.mark.slow
def test_demo_run_writes_report(tmp_path: Path) -> None:
    """The bundled model's run records the demo's trims and writes its report and logs. One item per sub-task
    shows that (the demo's own two items and their figures are the golden demo's, tests/golden); three sub-tasks
    of three kinds (a multiple choice, a label, a judged answer)."""
    out = tmp_path / "demo"
    code = main(["run", "--subtasks", "knowledge,emotion_recognition,ethical_reasoning", "--limit", "1",
                 "--out", str(out), "--display", "none", "--n-boot", "200"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["model"] == "gguf/smollm2"
    assert results["suite"] == "starter"
    assert results["judge"] == {"model": "gguf/smollm2", "validated": False, "temperature": 0.0, "seed": 0}
    # the offline demo's trims are recorded (and announced on stderr)
    assert results["options"]["max_tokens_cap"] == DEMO_REPLY_CAP
    assert results["options"]["judge_text_chars"] == DEMO_JUDGE_TEXT_CHARS
    assert results["options"]["fairness_escalation_items"] == 0
    assert results["options"]["awareness_samples"] == 1
    assert results["options"]["reasks"] == 0
    assert results["options"]["fairness_values"] == DEMO_FAIRNESS_VALUES
    assert results["options"]["answer_schema"] == 1
    for sid in ("reliability/knowledge", "reliability/emotion_recognition", "ethics/ethical_reasoning"):
        sub = results["subtasks"][sid]
        # a figure on the one item; its answer held to the sub-task's format (-O answer_schema=1) is read
        assert (sub["status"], sub["n"], 0.0 <= sub["value"] <= 1.0, sub["n_invalid"]) == ("ok", 1, True, 0), sub
    html = (out / "report.html").read_text()
    assert "Demonstration." in html
    assert '<span class="nc">none</span>' in html  # the bundled judge has no certificate
    assert list((out / "logs").glob("*.eval"))


@pytest.mark.slow
def test_inspect_eval_finds_trustmh_tasks_and_provider(tmp_path: Path) -> None:
    """`inspect eval trustmh/<task>` works through the entry point, with the bundled provider."""
    inspect = Path(sys.executable).with_name("inspect")
    env = {**os.environ, "INSPECT_DISPLAY": "none"}
    proc = subprocess.run(
        [str(inspect), "eval", "trustmh/knowledge", "--model", "gguf/smollm2", "-T", "suite=starter",
         "--limit", "1", "--max-tokens", "24", "--log-dir", str(tmp_path), "--display", "none"],
        capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    from inspect_ai.log import read_eval_log

    logs = list(tmp_path.glob("*.eval"))
    assert len(logs) == 1
    log = read_eval_log(str(logs[0]))
    assert log.status == "success"
    assert log.eval.task == "knowledge"
    assert log.eval.metadata["trustmh_subtask"] == "reliability/knowledge"
    assert log.samples
    assert log.samples[0].output.usage.output_tokens > 0
