"""`trustmh run --batch` against the loopback Batch API (tests/support/batch_server.py): every item scored,
results equal to the live run's, usage that separates batched tokens; and a run killed with batches in
flight, started again, pays for no finished request twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from batch_server import BatchServer
from loopback_server import message_text
from trustmh.cli import main
from trustmh.models.batch import JOURNAL

SUBTASKS = "knowledge,ethical_reasoning"
# made-up rates: batch at half the live ones
PRICES = """["openai/gpt-4o-mini"]
input = 100.0
output = 400.0
batch_input = 50.0
batch_output = 200.0

["openai/gpt-4o"]
input = 1000.0
output = 4000.0
batch_input = 500.0
batch_output = 2000.0
"""


def respond(messages: list[dict[str, Any]], body: dict[str, Any]) -> str:
    text = message_text(messages[-1])
    if "sc1" in text:  # the ethics judge
        return '{"sc1": 4, "sc2": 4, "sc3": 5, "sc4": 3, "sc5": 4, "sc1_reason": "ok"}'
    if "Scenario:" in text:  # the ethics question
        return '{"choice": "A", "reasoning": "Synthetic reasoning."}'
    return "Answer: A"


def run(out: Path, *more: str) -> dict[str, Any]:
    code = main(["run", "--model", "openai/gpt-4o-mini", "--judge", "openai/gpt-4o", "--suite", "trustmh",
                 "--subtasks", SUBTASKS, "--limit", "3", "--seed", "5", "--out", str(out), "--display", "none",
                 "--n-boot", "200", *more])
    assert code == 0
    return json.loads((out / "results.json").read_text())


def scores(results: dict[str, Any]) -> dict[str, Any]:
    return {sid: (sub["value"], sub["n"], sub["metrics"].get("sc1")) for sid, sub in results["subtasks"].items()}


@pytest.fixture(scope="module")
def live_and_batch(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One live run, then the same run with --batch, against one loopback server (Inspect keeps one client
    per model name in a process, so both runs must see the same base URL)."""
    tmp = tmp_path_factory.mktemp("batch-run")
    with BatchServer(respond) as server, pytest.MonkeyPatch.context() as mp:
        for k, v in {**server.env(), "TRUSTMH_BATCH_TICK": "0.1", "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(k, v)
        prices = tmp / "prices.toml"
        prices.write_text(PRICES)
        live = run(tmp / "live", "--prices", str(prices))
        live_calls = sum(server.live_bodies.values())
        batched = run(tmp / "batch", "--batch", "--prices", str(prices))
    return live, batched, server, live_calls, tmp


@pytest.mark.slow
def test_a_batch_run_scores_every_item_as_the_live_run_does(live_and_batch: Any) -> None:
    live, batched, _, _, _ = live_and_batch
    assert (scores(batched), [sub["n"] for sub in batched["subtasks"].values()]) == (scores(live), [3, 3])


@pytest.mark.slow
def test_a_batch_run_judges_the_anchor_items_as_the_live_run_does(live_and_batch: Any) -> None:
    live, batched, _, _, _ = live_and_batch
    sid = "ethics/ethical_reasoning"  # the judged sub-task: its judge's anchors (docs/judge-probes.md#drift)
    assert (len(batched["subtasks"][sid]["judge"]["anchors"]), batched["subtasks"][sid]["judge"]["anchors"]) == (
        20, live["subtasks"][sid]["judge"]["anchors"])


@pytest.mark.slow
def test_a_batch_run_sends_every_call_through_batches(live_and_batch: Any) -> None:
    _, batched, server, live_calls, _ = live_and_batch
    assert (sum(server.live_bodies.values()), sum(server.answered_bodies.values()) > 0, server.twice()) == (
        live_calls, True, {})


@pytest.mark.slow
def test_usage_counts_batched_tokens_apart(live_and_batch: Any) -> None:
    live, batched, _, _, _ = live_and_batch
    assert (batched["usage"]["totals"]["input_tokens"], batched["usage"]["totals"]["batch_calls"] > 0,
            batched["usage"]["totals"]["batch_input_tokens"]) == (
        0, True, live["usage"]["totals"]["input_tokens"])


@pytest.mark.slow
def test_a_batch_run_costs_half_the_live_run_at_half_rates(live_and_batch: Any) -> None:
    live, batched, _, _, _ = live_and_batch
    assert batched["usage"]["totals"]["cost"] == pytest.approx(live["usage"]["totals"]["cost"] / 2)


@pytest.mark.slow
def test_results_put_the_planned_batch_cost_beside_the_actual_one(live_and_batch: Any) -> None:
    _, batched, _, _, _ = live_and_batch
    row = batched["usage"]["subtasks"]["ethics/ethical_reasoning"][0]
    assert row["planned"]["cost_scenarios"]["batch"]["expected"] < row["planned"]["cost_scenarios"]["live"]["expected"]


@pytest.mark.slow
def test_the_report_has_the_batch_columns(live_and_batch: Any) -> None:
    page = (live_and_batch[4] / "batch" / "report.html").read_text()
    assert "batch calls" in page and "planned cost (live / batch)" in page


@pytest.mark.slow
def test_batched_usage_separates_cache_reads_and_writes_and_prices_each(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_text('["openai/gpt-4o-2024-08-06"]\ninput = 1000.0\noutput = 1000.0\nbatch_input = 500.0\n'
                      'batch_output = 500.0\ncached_input = 100.0\ncache_write = 2000.0\n')
    with BatchServer(respond, cached_tokens=lambda body: 3, cache_write_tokens=lambda body: 2) as server, \
            pytest.MonkeyPatch.context() as mp:
        for k, v in {**server.env(), "TRUSTMH_BATCH_TICK": "0.1", "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(k, v)
        assert main(["run", "--model", "openai/gpt-4o-2024-08-06", "--no-judge", "--suite", "trustmh",
                     "--subtasks", "knowledge", "--limit", "2", "--out", str(tmp_path / "run"), "--display", "none",
                     "--n-boot", "200", "--batch", "--prices", str(prices)]) == 0
    t = json.loads((tmp_path / "run" / "results.json").read_text())["usage"]["totals"]
    assert (t["batch_calls"], t["cached_tokens"], t["cache_write_tokens"], t["cost"]) == (
        2, 3 * 2, 2 * 2, pytest.approx(
            (500 * (t["batch_input_tokens"] + t["batch_output_tokens"]) + 100 * t["cached_tokens"]
             + 2000 * t["cache_write_tokens"]) / 1e6))


@pytest.mark.slow
def test_a_batch_run_reuses_the_replies_a_live_run_cached(tmp_path: Path) -> None:
    with BatchServer(respond) as server, pytest.MonkeyPatch.context() as mp:
        for k, v in {**server.env(), "TRUSTMH_CACHE_DIR": str(tmp_path / "cache"), "TRUSTMH_BATCH_TICK": "0.1",
                     "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(k, v)
        for out, more in (("live", []), ("batch", ["--batch"])):
            assert main(["run", "--model", "openai/gpt-4o-2024-11-20", "--no-judge", "--suite", "trustmh",
                         "--subtasks", "knowledge", "--limit", "2", "--out", str(tmp_path / out), "--display",
                         "none", "--n-boot", "200", *more]) == 0
    assert (sum(server.live_bodies.values()), len(server.batches)) == (2, 0)


def batch_command(out: Path) -> list[str]:
    return [sys.executable, "-m", "trustmh.cli", "run", "--model", "openai/gpt-4o-mini", "--judge",
            "openai/gpt-4o", "--suite", "trustmh", "--subtasks", SUBTASKS, "--limit", "3", "--seed", "5",
            "--out", str(out), "--display", "none", "--n-boot", "200", "--batch"]


def submitted(server: BatchServer) -> int:
    return len(server.batches)


@pytest.mark.slow
@pytest.mark.parametrize("batches_before_kill", [1, 2])
def test_sigkill_with_batches_in_flight_then_the_same_command_pays_for_nothing_twice(
        tmp_path: Path, batches_before_kill: int) -> None:
    out = tmp_path / "run"
    # each batch takes 2 s at the provider, so the run is killed while its latest batch is in flight
    with BatchServer(respond, delay=2.0, max_seconds=240) as server:
        env = {k: v for k, v in {**os.environ, **server.env(), "TRUSTMH_BATCH_TICK": "0.1",
                                 "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        proc = subprocess.Popen(batch_command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while submitted(server) < batches_before_kill and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # the provider has accepted the batch and answered its creation
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        in_flight = [b.id for b in server.batches.values() if b.status == "in_progress"]
        submitted_before = sum(server.submitted_bodies.values())
        time.sleep(2.5)  # the provider finishes the batches of the dead process
        again = subprocess.run(batch_command(out), env=env, capture_output=True, text=True, timeout=180)
        counts = (server.twice(), max(server.submitted_bodies.values()))
    assert (again.returncode, in_flight != [], submitted_before > 0, counts) == (0, True, True, ({}, 1))
    assert (out / JOURNAL).is_file()
    results = json.loads((out / "results.json").read_text())
    assert [sub["n"] for sub in results["subtasks"].values()] == [3, 3]


# issue 53.1 (Must show): SIGKILL with two batches in flight, the journal's last line torn in half by the kill, the
# same command again: the torn batch is looked up at the provider by its id (a line says so) and the loopback
# server receives every request body once, answers none twice
@pytest.mark.slow
def test_sigkill_with_two_batches_in_flight_and_a_torn_journal_submits_every_request_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with BatchServer(respond, delay=2.0, max_seconds=240) as server:
        env = {k: v for k, v in {**os.environ, **server.env(), "TRUSTMH_BATCH_TICK": "0.1",
                                 "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items()
               if k not in ("TRUSTMH_CACHE_DIR", "INSPECT_CACHE_DIR")}
        proc = subprocess.Popen(batch_command(out), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while submitted(server) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)  # the provider has accepted the second batch and answered its creation
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        in_flight = sum(1 for b in server.batches.values() if b.status == "in_progress")
        journal = out / JOURNAL
        lines = journal.read_bytes().splitlines(keepends=True)
        journal.write_bytes(b"".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2])  # the kill cut the last line
        again = subprocess.run(batch_command(out), env=env, capture_output=True, text=True, timeout=180)
        submitted_once = (max(server.submitted_bodies.values()), server.twice())
        print(f"torn journal: {in_flight} batches in flight at the kill, {len(server.submitted_bodies)} request bodies, "
              f"each submitted at most {submitted_once[0]} time(s), answered twice: {submitted_once[1]}; rerun exit "
              f"{again.returncode}; " + " | ".join(line for line in again.stderr.splitlines() if "was cut" in line))
    assert in_flight == 2
    assert again.returncode == 0
    assert f"{journal} line {len(lines)} was cut (a kill mid-write)" in again.stderr
    assert submitted_once == (1, {})
    assert [sub["n"] for sub in json.loads((out / "results.json").read_text())["subtasks"].values()] == [3, 3]


# issue 43.4: a batch that ends as a whole (here cancelled after answering one request) ends the run with one line
# naming the batch, the journal and what to do, results written for what was answered; the same command again
# asks the rest in a new batch; no request is answered twice, none submitted more than once more than needed
@pytest.fixture(scope="module")
def cancelled_batch_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("ended-run")
    out = tmp / "run"
    # a model name no other in-process test of this file uses: Inspect keeps a model's client and batcher for the
    # process's life, so a name an earlier test used would still point at that test's stopped server
    argv = ["run", "--model", "openai/gpt-4o-mini-2024-07-18", "--no-judge", "--suite", "trustmh", "--subtasks",
            "knowledge", "--limit", "3", "--seed", "5", "--out", str(out), "--display", "none", "--n-boot", "200", "--batch"]
    with BatchServer(respond, end_batches=1, end_status="cancelled", answered_before_end=1) as server, \
            pytest.MonkeyPatch.context() as mp:
        for k, v in {**server.env(), "TRUSTMH_CACHE_DIR": str(tmp / "cache"), "TRUSTMH_BATCH_TICK": "0.1",
                     "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(k, v)
        import contextlib
        import io
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            first = main(argv)
        results = json.loads((out / "results.json").read_text())
        submitted_in_run = max(server.submitted_bodies.values())
        # the same command again is a new process (Inspect keeps a model's batcher for the process's life)
        again = subprocess.run([sys.executable, "-m", "trustmh.cli", *argv], env=dict(os.environ),
                               capture_output=True, text=True, timeout=180).returncode
        final = json.loads((out / "results.json").read_text())
    return first, err.getvalue(), results, submitted_in_run, again, final, server, out


@pytest.mark.slow
def test_a_cancelled_batch_ends_the_run_incomplete(cancelled_batch_run: Any) -> None:
    from trustmh.exit_codes import INCOMPLETE

    assert cancelled_batch_run[0] == INCOMPLETE


@pytest.mark.slow
def test_a_cancelled_batch_is_one_line_naming_the_batch_the_journal_and_the_way_out(cancelled_batch_run: Any) -> None:
    err, out = cancelled_batch_run[1], cancelled_batch_run[7]
    lines = [line for line in err.splitlines() if line.startswith("trustmh: batch batch_1 cancelled")]
    assert len(lines) == 1 and f"journal {out / JOURNAL}" in lines[0] and "run the same command again" in lines[0]


@pytest.mark.slow
def test_a_cancelled_batch_writes_results_for_what_it_answered(cancelled_batch_run: Any) -> None:
    assert cancelled_batch_run[2]["subtasks"]["reliability/knowledge"]["n"] == 1


@pytest.mark.slow
def test_a_cancelled_batch_is_submitted_once_in_its_run(cancelled_batch_run: Any) -> None:
    assert cancelled_batch_run[3] == 1


@pytest.mark.slow
def test_the_same_command_after_a_cancelled_batch_finishes_the_run(cancelled_batch_run: Any) -> None:
    assert (cancelled_batch_run[4], cancelled_batch_run[5]["subtasks"]["reliability/knowledge"]["n"]) == (0, 3)


@pytest.mark.slow
def test_a_cancelled_batch_run_pays_each_request_once(cancelled_batch_run: Any) -> None:
    server = cancelled_batch_run[6]
    assert (server.twice(), max(server.submitted_bodies.values())) == ({}, 2)


# issue 53.1: a batch that expires or fails at the provider ends a judged run within 120 s, exit 5, results written
# (it hung: one error instance raised by every request it left, whose growing traceback Inspect rendered per sample)
@pytest.mark.slow
@pytest.mark.parametrize("status", ["expired", "failed"])
def test_a_batch_that_ends_badly_ends_a_judged_run_with_results(tmp_path: Path, status: str) -> None:
    from trustmh.exit_codes import INCOMPLETE

    out = tmp_path / "run"
    argv = ["run", "--model", f"openai/gpt-4o-mini-{status}", "--judge", "openai/gpt-4o", "--suite", "trustmh",
            "--subtasks", SUBTASKS, "--limit", "3", "--seed", "5", "--out", str(out), "--display", "none",
            "--n-boot", "200", "--batch"]
    with BatchServer(respond, end_batches=1, end_status=status, answered_before_end=0) as server:
        env = {**os.environ, **server.env(), "TRUSTMH_CACHE_DIR": str(tmp_path / "cache"),
               "TRUSTMH_BATCH_TICK": "0.1", "TRUSTMH_BATCH_SEND_DELAY": "0.3"}
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "trustmh.cli", *argv], env=env, capture_output=True, text=True,
                              timeout=150)
        seconds = time.monotonic() - started
    assert (done.returncode, (out / "results.json").is_file(), seconds < 120) == (INCOMPLETE, True, True)
