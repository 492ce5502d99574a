"""What `trustmh run` prints (issue 42): by default a few lines, trustmh's own progress instead of Inspect's panels,
ending with where the report is and the command to try next; `--verbose` brings Inspect's display back."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from loopback_server import LoopbackServer
from trustmh.cli import main
from trustmh.cli.run import PLAN_YOUR_MODEL, next_steps
from trustmh.run import progress
from trustmh.run.progress import ProgressLine

REPO = Path(__file__).resolve().parents[2]
# a run of one sub-task prints its settings, its progress, what it wrote and the next step: a handful of lines
MAX_LINES = 10


def _run(out: Path, *extra: str) -> str:
    """The console output (stdout and stderr) of `trustmh run` in its own process, as a user sees it."""
    with LoopbackServer(lambda messages, request: "Answer: B", max_requests=50, max_seconds=240) as server:
        env = {k: v for k, v in os.environ.items() if k != "INSPECT_DISPLAY"} | server.env()
        done = subprocess.run([sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name(), "--suite",
                               "trustmh", "--subtasks", "knowledge", "--limit", "3", "--no-judge", "--n-boot", "200",
                               "--out", str(out), *extra], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def quiet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("quiet") / "run"
    return out, _run(out)


@pytest.mark.slow  # its module fixture is a whole quiet run through Inspect (about 7.5 s of CPU): end-to-end
def test_a_run_prints_a_few_lines_by_default(quiet: tuple[Path, str]) -> None:
    assert len(quiet[1].splitlines()) <= MAX_LINES


@pytest.mark.slow  # its module fixture is a whole quiet run through Inspect (about 7.5 s of CPU): end-to-end
def test_a_run_shows_its_progress_in_sub_tasks(quiet: tuple[Path, str]) -> None:
    # the calls made stand beside the samples (issue 52: progress a person can read)
    assert re.search(r"1/1 sub-tasks done, 3 samples, \d+ calls \(reliability/knowledge finished\)", quiet[1])


@pytest.mark.slow  # its module fixture is a whole quiet run through Inspect (about 7.5 s of CPU): end-to-end
def test_a_run_ends_with_the_report_and_the_gate_command(quiet: tuple[Path, str]) -> None:
    out, text = quiet
    last = text.splitlines()[-1]
    assert (str(out / "report.html") in last, f"trustmh gate {out}" in last) == (True, True)


@pytest.mark.slow  # a run of its own with Inspect's display: 10 s of CPU
def test_verbose_shows_inspects_own_display_instead(tmp_path: Path) -> None:
    text = _run(tmp_path / "run", "--verbose")
    assert ("sub-tasks done" in text, len(text.splitlines()) > MAX_LINES) == (False, True)


def test_the_demos_next_step_prices_the_readmes_own_model_and_judge() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    model, judge = re.search(r"trustmh run --model (\S+) --judge (\S+)", readme).groups()  # type: ignore[union-attr]
    last = next_steps(Path("trustmh-out"), demo=True)[-1]
    assert (PLAN_YOUR_MODEL in last, f"--model {model} --judge {judge}" in PLAN_YOUR_MODEL) == (True, True)


def test_a_run_of_ones_own_model_is_not_told_to_plan_one() -> None:
    assert not any("trustmh plan" in line for line in next_steps(Path("out"), demo=False))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_progress_is_one_line_rewritten_in_place() -> None:
    stream = _Terminal()
    line = ProgressLine(2, stream)
    line.started(2)
    line.sample_finished()
    line.task_finished("a")
    line.task_finished("b")
    line.close()
    text = stream.getvalue()
    assert (text.count("\n"), text.rstrip("\n").rsplit("\r", 1)[-1]) == (
        1, "\033[Ktrustmh: 2/2 sub-tasks done, 1 samples, 0 calls")


def test_elsewhere_the_progress_is_a_line_per_finished_sub_task() -> None:
    stream = io.StringIO()
    line = ProgressLine(3, stream)
    line.started(2)  # a resumed run: one sub-task was finished before
    line.sample_finished()
    line.task_finished("a")
    line.close()
    assert stream.getvalue().splitlines() == ["trustmh: 1/3 sub-tasks done, 0 samples, 0 calls (starting 2)",
                                              "trustmh: 2/3 sub-tasks done, 1 samples, 0 calls (a finished)"]


def _errored_run() -> str:
    """A log's progress: two calls answered, then the endpoint fails one sample's call."""
    stream = io.StringIO()
    line = ProgressLine(1, stream)
    line.started(1)
    for key in (1, 2):
        line.call_sent(key, "openai-api/local/m")
        line.call_ended(key, failed=False)
    line.call_sent(3, "openai-api/local/m")
    line.call_ended(3, failed=True)
    line.sample_finished("e1", "Connection error.\nmore detail")
    line.task_finished("crisis/crisis_identification", "e1")
    return stream.getvalue().splitlines()[-1]


def test_the_progress_counts_errored_samples_apart_and_calls() -> None:
    assert _errored_run().startswith("trustmh: 1/1 sub-tasks done, 1 samples (1 errored), 2 calls")


def test_an_errored_sub_task_ends_with_the_endpoint_and_the_first_error() -> None:
    assert _errored_run().endswith("(crisis/crisis_identification finished, 1 sample(s) errored; first: "
                                   "openai-api/local/m: Connection error.)")


def test_a_log_gets_a_line_as_samples_move(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    stream = io.StringIO()
    line = ProgressLine(1, stream)
    line.sample_finished()
    assert stream.getvalue().splitlines() == ["trustmh: 0/1 sub-tasks done, 1 samples, 0 calls"]


def test_an_endpoint_that_stops_answering_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "STALL_AFTER", 0.0)
    stream = io.StringIO()
    line = ProgressLine(1, stream)
    line.call_sent(1, "openai-api/local/m")
    line.check_stalls()
    assert stream.getvalue().startswith("trustmh: openai-api/local/m has not answered for 0 s")


def test_a_stall_is_kept_for_results_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "STALL_AFTER", 0.0)
    line = ProgressLine(1, io.StringIO())
    line.call_sent(1, "openai-api/local/m")
    line.check_stalls()
    assert [stall["endpoint"] for stall in line.stalls] == ["openai-api/local/m"]


@pytest.mark.slow  # a run through Inspect (about 7 s of CPU): the stall reaches the run's record end to end
def test_a_run_records_the_endpoint_that_stopped_answering(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "STALL_AFTER", 0.5)
    out = tmp_path / "run"
    with LoopbackServer(lambda messages, request: "Answer: B", delays={1: 2.0}, max_requests=20,
                        max_seconds=120) as server:
        for key, value in server.env().items():
            monkeypatch.setenv(key, value)
        main(["run", "--model", server.model_name(), "--suite", "trustmh", "--subtasks", "knowledge", "--limit", "1",
              "--no-judge", "--n-boot", "200", "--out", str(out)])
    stalls = json.loads((out / "results.json").read_text()).get("stalled_endpoints") or []
    assert [stall["endpoint"] for stall in stalls] == [server.model_name()]


def test_a_shard_is_told_to_merge_not_to_gate() -> None:
    assert next_steps(Path("w/0"), demo=False, shard=(0, 2)) == [
        "shard 0/2 written to w/0; once every shard has finished: trustmh merge SHARD_DIR... --out RUN_DIR"]
