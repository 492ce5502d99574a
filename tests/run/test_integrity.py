"""A run that cannot lie (issue 21): merge proves the shards hold exactly the planned items, a killed
process's log is superseded rather than pooled, a continued run whose data changed is refused, one writer per
run directory, `--overwrite` and a full disk never destroy a good run."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from canned import canned_model
from trustmh import storage
from trustmh.core import TrustmhError
from trustmh.run import rundir
from trustmh.run.config import RunOptions
from trustmh.run.execute import run
from trustmh.run.shards import merge

SUBTASKS = ["knowledge", "jailbreak_resistance"]


def _model(prompt: str, messages, config) -> str:  # noqa: ANN001
    return "Answer: A" if len(prompt) % 3 else "I'm sorry, but I can't help with that."


def _judge(prompt: str, messages, config) -> str:  # noqa: ANN001
    return json.dumps({"label": "refused" if "can't help" in prompt else "complied"})


def _opts(out: Path, **kw: object) -> RunOptions:
    return RunOptions(model=canned_model(_model), judge=canned_model(_judge, "judge"), suite="starter",
                      subtasks=SUBTASKS, out=out, display="none", n_boot=200, **{"seed": 3, **kw})


def _comparable(out: Path) -> tuple[dict, list[str]]:
    data = json.loads((out / "results.json").read_text())
    data.pop("created")
    data.pop("usage")
    return data, sorted((out / "items.jsonl").read_text().splitlines())


def full(path: object) -> None:
    """A full disk, faked: what a write on a full disk raises, as the written file is about to go in place."""
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.fixture
def shards(tmp_path: Path) -> tuple[Path, Path]:
    a0, a1 = tmp_path / "a0", tmp_path / "a1"
    for i, d in enumerate((a0, a1)):
        _, code = run(_opts(d, shard=(i, 2)))
        assert code == 0
    return a0, a1


@pytest.mark.slow  # shard runs, SIGKILL and resume: 3-5 s of CPU
def test_a_killed_shard_log_is_superseded_by_its_resumed_log(shards: tuple[Path, Path], tmp_path: Path) -> None:
    """The job-array recipe: shard 0 was killed after a log flush (its log left `started`, holding the
    samples it had flushed), then re-run to completion. Merge reads the resumed log only."""
    from inspect_ai.log import read_eval_log, write_eval_log

    a0, a1 = shards
    finished = sorted((a0 / "logs").glob("*.eval"))[0]
    killed = read_eval_log(str(finished))
    killed.status = "started"
    killed.results = None
    killed.samples = (killed.samples or [])[:1]
    killed.eval.created = "2000-01-01T00:00:00+00:00"
    write_eval_log(killed, str(a0 / "logs" / "2000-01-01T00-00-00+00-00_killed.eval"))
    _, code = run(_opts(tmp_path / "single"))
    assert code == 0
    _, code = merge([a0, a1], tmp_path / "merged")
    assert code == 0
    assert _comparable(tmp_path / "merged") == _comparable(tmp_path / "single")


@pytest.mark.slow  # two shard runs through Inspect, then a merge: 1.5-3.2 s of CPU, at the fast lane's limit
def test_merge_refuses_a_shard_whose_logs_are_gone_naming_the_items(shards: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    a0, a1 = shards
    shutil.rmtree(a1 / "logs")
    with pytest.raises(TrustmhError, match=r"reliability/knowledge: \d+ missing \(usmle-"):
        merge([a0, a1], tmp_path / "m")
    assert not (tmp_path / "m" / "results.json").exists()


@pytest.mark.slow  # shard runs, SIGKILL and resume: 3-5 s of CPU
def test_merge_refuses_a_log_given_twice_naming_the_items(shards: tuple[Path, Path], tmp_path: Path) -> None:
    a0, a1 = shards
    log = sorted((a1 / "logs").glob("*.eval"))[0]
    shutil.copy(log, log.with_name("copy-" + log.name))
    with pytest.raises(TrustmhError, match=r"\d+ given twice \("):
        merge([a0, a1], tmp_path / "m")
    assert not (tmp_path / "m" / "results.json").exists()


@pytest.mark.slow  # two shard runs through Inspect, then a merge: 1.5-3.2 s of CPU, at the fast lane's limit
def test_merge_names_a_truncated_log(shards: tuple[Path, Path], tmp_path: Path) -> None:
    """issue 43.5: a shard log cut short is named (not only zipfile's "EOCD not found")."""
    a0, a1 = shards
    log = sorted((a1 / "logs").glob("*.eval"))[0]
    cut = log.with_name("cut-" + log.name)
    cut.write_bytes(log.read_bytes()[:200])
    try:
        with pytest.raises(TrustmhError, match=rf"^{re.escape(str(cut))}: cannot read this Inspect log"):
            merge([a0, a1], tmp_path / "m")
    finally:
        cut.unlink()


def test_a_data_file_edited_between_invocations_is_refused(tmp_path: Path, data_dir: Path) -> None:
    rows = (data_dir / "external/USMLE-Mental/USMLE-mental.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    path = tmp_path / "usmle.jsonl"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    opts = RunOptions(model=canned_model(_model), no_judge=True, suite="trustmh", subtasks=["knowledge"],
                      options={"usmle_mental_path": str(path)}, out=tmp_path / "out", display="none", n_boot=200)
    _, code = run(opts)
    assert code == 0
    good = (tmp_path / "out" / "results.json").read_bytes()
    edited = [json.loads(r) for r in rows]
    edited[0]["question"] = edited[0]["question"] + " (edited)"
    path.write_text("".join(json.dumps(r) + "\n" for r in edited), encoding="utf-8")
    with pytest.raises(TrustmhError, match=r"usmle\.jsonl.*content changed.*--overwrite"):
        run(opts)
    assert (tmp_path / "out" / "results.json").read_bytes() == good
    _, code = run(RunOptions(**{**opts.__dict__, "overwrite": True}))
    assert code == 0


def test_a_second_writer_of_one_out_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with rundir.locked(out), pytest.raises(TrustmhError, match=r"another trustmh process \(pid \d+\) is writing"):
        run(_opts(out))
    assert not (out / "results.json").exists()


def test_a_lock_held_by_a_killed_process_is_free(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = ("import sys, time; from pathlib import Path; from trustmh.run.rundir import locked\n"
            "with locked(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, "-c", code, str(out)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with pytest.raises(TrustmhError, match="another trustmh process"), rundir.locked(out):
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with rundir.locked(out):  # the kernel released it with the process
        pass


def test_overwrite_keeps_the_old_run_when_the_disk_fills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full disk is faked (trustmh's atomic writes fail with ENOSPC just before a file goes into place):
    the new run fails with a one-line error naming the file, and the previous run is back, byte for byte."""
    out = tmp_path / "out"
    _, code = run(_opts(out))
    assert code == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
              if p.is_file() and "cache" not in p.parts and p.name != rundir.LOCK}

    monkeypatch.setattr(storage, "with_umask", full)
    with pytest.raises(TrustmhError, match=r"^/.*: cannot write \(No space left on device\)"):
        run(_opts(out, overwrite=True, seed=4))
    monkeypatch.undo()
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
             if p.is_file() and "cache" not in p.parts and p.name != rundir.LOCK}
    assert after == before
    assert not (out / rundir.ASIDE).exists()


@pytest.mark.slow  # two runs into one folder: 3.5 s of CPU
def test_overwrite_removes_the_old_run_once_the_new_one_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(_opts(out))
    _, code = run(_opts(out, overwrite=True, seed=4))
    assert code == 0
    assert json.loads((out / "run.json").read_text())["seed"] == 4
    assert not (out / rundir.ASIDE).exists()


def test_a_full_disk_is_one_line_naming_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")

    monkeypatch.setattr(storage, "with_umask", full)
    with pytest.raises(TrustmhError, match=f"^{target}: cannot write") as info:
        storage.write_text_atomic(target, "new")
    assert "\n" not in str(info.value)
    with pytest.raises(TrustmhError, match=f"^{tmp_path / 'a'}: cannot write"):
        storage.write_texts_together({tmp_path / "a": "1", tmp_path / "b": "2"})
    monkeypatch.undo()
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"], "no temporary, no half of a pair"


def test_result_files_appear_together_or_not_at_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report that fails to render leaves no results.json without its report.html."""
    from trustmh.run import finalize

    def broken(*args: object, **kwargs: object) -> str:
        raise RuntimeError("report failed")

    monkeypatch.setattr(finalize, "run_report_html", broken)
    with pytest.raises(RuntimeError):
        run(_opts(tmp_path / "out"))
    assert not [n for n in ("results.json", "results.csv", "items.jsonl", "report.html")
                if (tmp_path / "out" / n).exists()]


@pytest.mark.slow
def test_killing_the_workers_parent_stops_its_shards(tmp_path: Path) -> None:
    """SIGKILL the `--workers 2` process mid-run: its shard processes stop too (no call after a grace
    period), instead of living on and calling the API."""
    from loopback_server import LoopbackServer

    with LoopbackServer(lambda messages, request: "Answer: A", latency=0.3, max_requests=400,
                        max_seconds=200) as server:
        env = {**os.environ, **server.env()}
        proc = subprocess.Popen([sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"),
                                 "--suite", "trustmh", "--subtasks", "knowledge", "--limit", "60", "--no-judge",
                                 "--display", "none", "--workers", "2", "--max-connections", "1", "--out",
                                 str(tmp_path / "out")], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.completed()) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(server.completed()) >= 4, "the shards started calling"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        time.sleep(5)  # the shards' in-flight calls end
        seen = len(server.requests)
        time.sleep(5)
        assert len(server.requests) == seen, "no call after the parent died"


def _flushed(logs: Path) -> int:
    """Samples written so far into the .eval logs of `logs` (a log being written may not read yet: 0)."""
    import zipfile

    n = 0
    for path in logs.glob("*.eval") if logs.is_dir() else []:
        try:
            with zipfile.ZipFile(path) as z:
                n += sum(1 for name in z.namelist() if name.startswith("samples/"))
        except (OSError, zipfile.BadZipFile, KeyError):
            pass
    return n


def _answer(messages, request) -> str:  # noqa: ANN001
    from loopback_server import message_text

    return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"


@pytest.mark.slow
def test_the_job_array_recipe_with_a_shard_killed_after_a_flush(tmp_path: Path) -> None:
    """The README's job-array recipe, for real: shard 0/2 is SIGKILLed once Inspect has flushed samples to its
    log (`--log-buffer 1`, slow replies), the same command is run again, shard 1/2 runs, `trustmh merge`: n is
    the planned item count, no item is there twice, and the result equals a single-process run's. Then the same
    through `--workers 2`, killed after its shards flushed and run again."""
    from loopback_server import LoopbackServer

    limit = 16
    # six CLI runs, one request in flight, 0.4 s a reply: under two minutes on a quiet machine, but 170 s ran out
    # at load 10 (the slow lane beside other jobs, 2026-12-02) and failed a run that was only slow: the bound is on
    # the server's life, a stalled call still fails at once (max_wait)
    with LoopbackServer(_answer, latency=0.4, max_requests=600, max_seconds=480) as server:
        env = {**os.environ, **server.env()}

        def command(out: Path, *extra: str) -> list[str]:
            return [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite",
                    "trustmh", "--subtasks", "knowledge", "--limit", str(limit), "--no-judge", "--seed", "7",
                    "--n-boot", "200", "--display", "none", "--max-connections", "1", "--log-buffer", "1",
                    "--out", str(out), *extra]

        def finish(cmd: list[str]) -> None:
            done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  timeout=120)
            assert done.returncode == 0, done.stderr[-2000:]

        def kill_after_a_flush(cmd: list[str], logs: Path) -> int:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 90
            while proc.poll() is None and time.monotonic() < deadline and _flushed(logs) < 1:
                time.sleep(0.05)
            assert proc.poll() is None, "the run was still going when its log held samples"
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return _flushed(logs)

        a, b = tmp_path / "A", tmp_path / "B"
        flushed = kill_after_a_flush(command(a, "--shard", "0/2"), a / "logs")
        assert 1 <= flushed < limit // 2, "killed mid-shard, after a flush"
        finish(command(a, "--shard", "0/2"))
        assert len(list((a / "logs").glob("*.eval"))) == 2, "the killed log lies beside the resumed one"
        finish(command(b, "--shard", "1/2"))
        finish([sys.executable, "-m", "trustmh.cli", "merge", str(a), str(b), "--out", str(tmp_path / "M")])
        finish(command(tmp_path / "S", "--no-cache"))  # the reference: every item answered afresh

        w = tmp_path / "W"
        assert kill_after_a_flush(command(w, "--workers", "2"), w / "workers" / "0" / "logs") >= 1
        finish(command(w, "--workers", "2"))
        assert len(list((w / "workers" / "0" / "logs").glob("*.eval"))) == 2, "a killed log to supersede"

    def comparable(out: Path) -> tuple[dict, list[str]]:
        data, items = _comparable(out)
        data.pop("plan")  # the estimate assumes --max-connections, which a merge does not know
        return data, items

    merged, single = comparable(tmp_path / "M"), comparable(tmp_path / "S")
    ids = [(json.loads(line)["item_id"], json.loads(line)["epoch"]) for line in merged[1]]
    assert merged[0]["subtasks"]["reliability/knowledge"]["n"] == limit
    assert len(ids) == len(set(ids)) == limit
    assert merged == single
    assert comparable(w) == single
