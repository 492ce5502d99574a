"""Regenerate tests/fixtures/golden/ethics_log.json: a small Inspect log in JSON format from a canned run.

Run it only when upgrading Inspect on purpose: `python tests/support/make_golden_log.py`. The golden test then
checks that a log written by the previous version still reads back into the same trustmh records.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from inspect_ai import eval as inspect_eval  # noqa: E402

from canned import canned_model  # noqa: E402
from trustmh.core import JudgeInfo, RunContext  # noqa: E402
from trustmh.run.tasks import build_task  # noqa: E402

GOLDEN = Path(__file__).parents[1] / "fixtures" / "golden" / "ethics_log.json"


def reply(prompt: str, messages, config) -> str:  # noqa: ANN001
    if "sc1" in prompt:
        return '{"sc1": 5, "sc2": 4, "sc3": 4, "sc4": 3, "sc5": 5}'
    return '```json\n{"choice": "B", "reasoning": "Synthetic."}\n```'


def main() -> None:
    ctx = RunContext(mode="default", seed=3, suite="starter", limit=3,
                     judge=JudgeInfo(model="mockllm/judge", validated=False, seed=3), n_boot=100)
    task = build_task("ethics/ethical_reasoning", ctx)
    with tempfile.TemporaryDirectory() as tmp:
        [log] = inspect_eval(task, model=canned_model(reply), model_roles={"grader": canned_model(reply, "judge")},
                             log_dir=tmp, log_format="json", display="none")
        assert log.status == "success"
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(log.location, GOLDEN)
    print(f"wrote {GOLDEN}")


if __name__ == "__main__":
    main()
