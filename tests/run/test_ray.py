"""`--workers N --engine ray`: the shards run as tasks on a Ray cluster (here a local one on loopback) and
merge into the single-process result (the cluster in a network namespace with loopback only); a failing shard is named with its error and the run continues when
started again; without Ray the option is a one-line error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopback_server import LoopbackServer, message_text
from test_shards import comparable
from trustmh.cli import main

KEY = "sk-loop-canary-0123456789abcdef"


def _respond(messages, request) -> str:  # noqa: ANN001
    return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"


def run_on_loopback_only(request: pytest.FixtureRequest) -> bool:
    """Run this test again in a network namespace whose only interface is loopback (Ray would otherwise
    announce and use the machine's own address); True when that was done and the caller must return.
    Inside the namespace (False), the test runs here."""
    from ray_cluster import IN_NETNS, loopback_only, netns_command, netns_unavailable

    if loopback_only():
        return False
    if os.environ.get(IN_NETNS):  # started by netns_command and still not isolated: never start another
        pytest.fail("the network namespace made for Ray has an interface besides loopback")
    why = netns_unavailable()
    if why:
        pytest.skip(f"Ray tests run only where no traffic can leave loopback: {why}")
    inner = subprocess.run(netns_command([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                                          request.node.nodeid]),
                           cwd=request.config.rootpath, capture_output=True, text=True, timeout=900)
    out = inner.stdout + inner.stderr
    last = out.strip().splitlines()[-1] if out.strip() else ""
    if inner.returncode == 0 and " skipped" in last and " passed" not in last:
        reason = [line for line in out.splitlines() if line.startswith("SKIPPED")]
        pytest.skip(reason[0] if reason else "skipped inside the network namespace")
    assert inner.returncode == 0, out[-4000:]
    assert " passed" in last, out[-4000:]
    return True


@pytest.mark.slow
def test_ray_shards_merge_into_the_single_process_result(tmp_path: Path, request: pytest.FixtureRequest
                                                         ) -> None:
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'trustmh[ray]')")
    if run_on_loopback_only(request):
        return
    from ray_cluster import CLIENT_ENV, RayCluster

    with LoopbackServer(_respond, api_key=KEY, max_requests=200, max_seconds=400) as server:
        env = {**os.environ, **server.env(), **CLIENT_ENV}
        try:
            cluster = RayCluster(server.env(), num_cpus=2, max_seconds=400)
            address = cluster.__enter__()
        except RuntimeError as exc:
            pytest.skip(f"Ray cannot start here: {exc}")
        try:
            base = [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite",
                    "trustmh", "--subtasks", "knowledge", "--limit", "8", "--no-judge", "--display", "none",
                    "--n-boot", "300"]
            one = subprocess.run([*base, "--out", str(tmp_path / "one")], env=env, timeout=200)
            assert one.returncode == 0
            calls_single = len(server.completed())

            # shard 1 cannot write its directory: it fails, is named with its error, and nothing is merged
            out = tmp_path / "ray"
            (out / "workers").mkdir(parents=True)
            (out / "workers" / "1").write_text("in the way")
            # --no-cache: the shards must not answer from the single run's cache (calls are counted below)
            ray_cmd = [*base, "--workers", "2", "--engine", "ray", "--ray-address", address, "--no-cache",
                       "--out", str(out)]
            failed = subprocess.run(ray_cmd, env=env, timeout=300, capture_output=True, text=True)
            assert failed.returncode != 0
            report = failed.stderr.strip().splitlines()[-1]
            assert "1 of 2 shard(s) failed" in report
            assert "shard 1/2 (exit code 2)" in report
            assert "workers/1: is a file" in report
            assert (out / "workers" / "0" / "results.json").exists()
            assert not (out / "results.json").exists()
            calls_before = len(server.completed())

            # started again, shard 0 is not run again; shard 1 runs; the merge equals the single process
            (out / "workers" / "1").unlink()
            again = subprocess.run(ray_cmd, env=env, timeout=300, capture_output=True, text=True)
            assert again.returncode == 0, again.stderr[-3000:]
            shard1 = len((out / "workers" / "1" / "items.jsonl").read_text().splitlines())
            assert len(server.completed()) - calls_before == shard1
            assert calls_before - calls_single == calls_single - shard1  # shard 0's items, once
        finally:
            cluster.__exit__()
    assert comparable(out) == comparable(tmp_path / "one")
    assert json.loads((out / "run.json").read_text()) == json.loads((tmp_path / "one" / "run.json").read_text())
    # the shards' output came back through Ray, redacted; no key in it or anywhere in the run directory
    assert (out / "workers" / "0.log").read_text().strip()
    for path in out.rglob("*"):
        if path.is_file() and "cache" not in path.parts:
            assert KEY.encode() not in path.read_bytes(), path


def test_engine_ray_without_ray_is_a_one_line_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code = main(["run", "--subtasks", "knowledge", "--workers", "2", "--engine", "ray", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2
    assert len(err) == 1
    assert "pip install 'trustmh[ray]'" in err[0]
    assert not (tmp_path / "workers").exists()


def test_launch_options_need_their_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--ray-address", "127.0.0.1:6379", "--workers", "2"]) == 2
    assert "--ray-address and --ray-cpus go with --engine ray" in capsys.readouterr().err
    assert main(["run", "--engine", "ray"]) == 2
    assert "pass --workers" in capsys.readouterr().err


def test_shard_commands_drop_the_launch_options() -> None:
    from trustmh.run.launch import shard_argv

    argv = ["run", "--model", "m/x", "--workers", "4", "--engine=ray", "--ray-address", "h:1", "--ray-cpus",
            "0.5", "--out", "o", "--seed", "3"]
    assert shard_argv(argv, Path("/runs/o"), 2, 4) == ["run", "--model", "m/x", "--seed", "3", "--shard", "2/4",
                                                       "--out", "/runs/o/workers/2"]


@pytest.mark.slow
def test_a_ray_shard_does_not_outlive_its_worker(tmp_path: Path) -> None:
    """The shard process of a Ray task is stopped when the worker that started it dies (Linux), so that a
    resumed run never has two processes writing one shard directory. No Ray needed: a plain parent plays
    the worker and is killed while its shard waits on a slow endpoint."""
    import signal
    import time

    from trustmh.run.launch import _WITH_PARENT

    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    # replies never come while the test runs: the shard can only end by the signal
    with LoopbackServer(_respond, latency=600, max_requests=50, max_seconds=300) as server:
        argv = ["run", "--model", server.model_name("m"), "--suite", "trustmh", "--subtasks", "knowledge",
                "--limit", "2", "--no-judge", "--display", "none", "--out", str(tmp_path / "shard")]
        worker = ("import subprocess, sys, os, time\n"
                  "p = subprocess.Popen([sys.executable, '-c', sys.argv[1], str(os.getpid()), *sys.argv[2:]])\n"
                  "print(p.pid, flush=True)\n"
                  "time.sleep(300)\n")
        parent = subprocess.Popen([sys.executable, "-c", worker, _WITH_PARENT, *argv],
                                  env={**os.environ, **server.env()}, stdout=subprocess.PIPE, text=True)
        assert parent.stdout is not None
        shard_pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 90
        while not server.chat_requests and time.monotonic() < deadline:  # the shard is waiting on a reply
            time.sleep(0.5)
        assert server.chat_requests
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                os.kill(shard_pid, 0)
            except ProcessLookupError:
                break
            with open(f"/proc/{shard_pid}/stat") as fh:  # an exited child of init not yet reaped counts
                if fh.read().split(")")[-1].split()[0] == "Z":
                    break
            time.sleep(0.5)
        else:
            os.kill(shard_pid, signal.SIGKILL)
            pytest.fail("the shard outlived the process that started it")
