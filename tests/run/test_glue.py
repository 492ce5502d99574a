"""The Inspect glue drives a sub-task exactly like `run_offline`, and `trustmh run` writes the results."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh import catalogue
from trustmh.core import (
    GenConfig,
    Item,
    JudgeInfo,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    same_anchors,
)
from trustmh.judges.parse import judge_scores, parse_mcq
from trustmh.offline import run_offline
from trustmh.stats.bootstrap import bootstrap_mean


class FakeMCQ(Subtask):
    """Three two-option questions; a judge rates each reply 1–5."""

    id = "reliability/knowledge"
    task_name = "knowledge"
    title = "A fake multiple-choice sub-task"
    anchors = same_anchors(0.5, 1.0)
    judge_use = "secondary"
    format_reminder = "Please end with a line `Answer: <letter>`."

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig(max_tokens=64)

    def items(self, ctx: RunContext) -> list[Item]:
        return [Item(id=f"q{i}", prompt=f"Question {i}: pick A or B.", target="A" if i % 2 else "B")
                for i in range(1, 4)]

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        return parse_mcq(text, "AB") is not None

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        return [JudgeRequest("quality", f"Rate this reply 1-5 as JSON {{\"q\": n}}: {response}",
                             validate=lambda t: judge_scores(t, ["q"], 1, 5) is not None)]

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict:
        parsed = parse_mcq(response, "AB")
        q = judge_scores((judge_outputs or {}).get("quality"), ["q"], 1, 5)
        return {"parsed": parsed, "valid": parsed is not None, "correct": parsed == item.target,
                "judge_q": None if q is None else q["q"]}

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        value, ci = bootstrap_mean([float(r.score["correct"]) for r in records],
                                   [r.cluster for r in records], seed=ctx.seed, n_boot=200)
        qs = [r.score["judge_q"] for r in records if r.score["judge_q"] is not None]
        return SubtaskResult(value=value, ci=ci, n=len(records),
                             n_invalid=sum(not r.score["valid"] for r in records), direction="higher",
                             metrics={"judge_mean": sum(qs) / len(qs) if qs else None,
                                      "reasked": sum(r.metadata["reasked"] for r in records)},
                             method="rule")


@pytest.fixture
def fake_subtask(monkeypatch: pytest.MonkeyPatch) -> None:
    real = catalogue.catalogue()
    fake = dataclasses.replace(real, subtasks=tuple(FakeMCQ if c.id == FakeMCQ.id else c for c in real.subtasks))
    monkeypatch.setattr(catalogue, "catalogue", lambda: fake)


def model_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
    # q1: correct at once; q2: unparseable first, correct after the re-ask; q3: wrong.
    if prompt.startswith("Please end"):
        return "Sorry. Answer: B"
    if "Question 1" in prompt:
        return "Answer: A"
    if "Question 2" in prompt:
        return "I am not sure."
    return "Answer: B"


def judge_reply(prompt: str, messages, config) -> str:  # noqa: ANN001
    assert config.temperature == 0.0, "judge must be bound to T=0 and the run seed"
    assert config.seed == 7, "judge must be bound to T=0 and the run seed"
    return '```json\n{"q": 4}\n```' if "Answer: A" in prompt else '{"q": 2}'


def test_inspect_run_matches_offline_driver(fake_subtask: None, tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    data, code = run(RunOptions(model=canned_model(model_reply), judge=canned_model(judge_reply, "judge"),
                                suite="trustmh", seed=7, out=tmp_path, subtasks=["reliability/knowledge"],
                                display="none", n_boot=200))
    assert code == 0
    sub = data["subtasks"]["reliability/knowledge"]
    assert sub["value"] == pytest.approx(2 / 3)
    assert sub["n"] == 3
    assert sub["n_invalid"] == 0
    assert sub["metrics"]["reasked"] == 1
    assert sub["metrics"]["judge_mean"] == pytest.approx((4 + 2 + 2) / 3)
    assert sub["judge"]["validated"] is False

    ctx = RunContext(seed=7, suite="trustmh", judge=JudgeInfo(model="j", validated=False))
    subtask = FakeMCQ()

    def respond(item: Item, prompt: str) -> str:
        return model_reply(prompt, [], None)

    def judge(req: JudgeRequest) -> str:
        return '```json\n{"q": 4}\n```' if "Answer: A" in req.prompt else '{"q": 2}'

    ctx.n_boot = 200
    records, offline = run_offline(subtask, ctx, respond, judge)
    assert offline.value == sub["value"]
    assert offline.ci is not None
    assert list(offline.ci) == pytest.approx(sub["ci"])
    assert [r.score for r in records] == [
        json.loads(line)["score"] for line in (tmp_path / "items.jsonl").read_text().splitlines()]

    for name in ("results.json", "results.csv", "report.html", "items.jsonl"):
        assert (tmp_path / name).is_file()
    assert list((tmp_path / "logs").glob("*.eval")), "Inspect logs are kept beside the results"


def test_inspect_run_without_reasks(fake_subtask: None, tmp_path: Path) -> None:
    """`-O reasks=0` (the offline demo): the Inspect glue never re-asks; the unparseable reply is invalid."""
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    prompts: list[str] = []

    def reply(prompt: str, messages, config) -> str:  # noqa: ANN001
        prompts.append(prompt)
        return model_reply(prompt, messages, config)

    data, code = run(RunOptions(model=canned_model(reply), suite="trustmh", seed=7, out=tmp_path,
                                subtasks=["reliability/knowledge"], display="none", n_boot=200,
                                options={"reasks": 0}))
    assert code == 0
    sub = data["subtasks"]["reliability/knowledge"]
    assert sub["metrics"]["reasked"] == 0
    assert not any(p.startswith("Please end") for p in prompts)
    assert sub["n"] == 3
    assert sub["n_invalid"] == 1
    assert sub["value"] == pytest.approx(1 / 3)
    assert data["options"]["reasks"] == 0


def test_model_output_is_escaped_in_report(fake_subtask: None, tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    evil = "<script>alert('x')</script> Answer: A"
    run(RunOptions(model=canned_model(lambda p, m, c: evil), suite="trustmh", out=tmp_path, no_judge=True,
                   subtasks=["knowledge"], display="none", n_boot=50))
    html = (tmp_path / "report.html").read_text()
    assert "<script>alert" not in html
    # the transcript browser's data: JSON with < and > as \u escapes, shown by textContent
    assert "\\u003cscript\\u003ealert('x')\\u003c/script\\u003e" in html


def test_task_error_gives_nonzero_exit(fake_subtask: None, tmp_path: Path) -> None:
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    def broken(prompt: str, messages, config) -> str:  # noqa: ANN001
        raise RuntimeError("endpoint exploded")

    data, code = run(RunOptions(model=canned_model(broken), suite="trustmh", out=tmp_path, no_judge=True,
                                subtasks=["knowledge"], display="none", n_boot=50, max_retries=0))
    assert code != 0
    assert data["errors"], "the error is reported in results.json"
    assert data["subtasks"]["reliability/knowledge"]["status"] == "not_computed"


def test_results_record_decoding_and_dataset_hashes(tmp_path: Path) -> None:
    """results.json says how each sub-task was decoded and which exact data files (sha256) it read."""
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    data, code = run(RunOptions(model=canned_model(lambda p, m, c: "Answer: A"), suite="trustmh", out=tmp_path,
                                no_judge=True, subtasks=["knowledge"], limit=2, seed=5, display="none",
                                n_boot=50))
    assert code == 0
    assert data["generation"]["reliability/knowledge"] == {"temperature": 0.0, "top_p": None, "samples": 1,
                                                          "max_tokens": 1024, "seed": 5}
    from trustmh.data import DATASETS

    registered = {f.relpath: f.sha256 for f in DATASETS["usmle_mental"].files}
    files = data["datasets"]["usmle_mental"]
    assert files, "the USMLE file read by the run is listed"
    for relpath, digest in files.items():
        assert digest == registered[relpath]
