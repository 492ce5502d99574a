"""Run directories on an fsspec URL (`--out s3://bucket/run`), against a real S3 API on loopback: moto's
server on 127.0.0.1 (a random port), reached by s3fs exactly as Inspect reaches S3 (endpoint from the
standard AWS_ENDPOINT_URL variable)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs", reason="s3fs is needed for s3:// run directories (pip install s3fs)")
moto_server = pytest.importorskip("moto.server", reason="moto[server] provides the loopback S3 API")

from canned import canned_model  # noqa: E402
from loopback_server import LoopbackServer, RecordedRequest, message_text  # noqa: E402
from test_resume import key, respond  # noqa: E402
from test_shards import _model, _opts  # noqa: E402
from trustmh.cli import main  # noqa: E402
from trustmh.core import TrustmhError  # noqa: E402
from trustmh.run.config import RunOptions  # noqa: E402
from trustmh.run.execute import run  # noqa: E402
from trustmh.run.inspect_eval import response_cache_dir  # noqa: E402
from trustmh.run.launch import shard_argv, shard_dir  # noqa: E402
from trustmh.run.shards import merge  # noqa: E402
from trustmh.storage import Url, run_path  # noqa: E402

BUCKET = "trustmh-test"
AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def s3_endpoint() -> Iterator[str]:
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one line per S3 request otherwise
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    saved = {k: os.environ.get(k) for k in [*AWS_ENV, "AWS_ENDPOINT_URL", "NO_PROXY", "AWS_PROFILE"]}
    os.environ.update(AWS_ENV, AWS_ENDPOINT_URL=endpoint, NO_PROXY="127.0.0.1,localhost")
    os.environ.pop("AWS_PROFILE", None)
    import boto3

    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
    try:
        yield endpoint
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def objects(url: str) -> list[str]:
    """Every object's name under `url`, relative to it."""
    base = run_path(url)
    assert isinstance(base, Url)
    return sorted(str(u.relative_to(base)) for u in base.rglob("*"))


def comparable(out: Path | Url) -> tuple[dict[str, Any], list[str]]:
    data = json.loads((out / "results.json").read_text())
    data.pop("created")
    data.pop("usage")  # calls and tokens: runs sharing a response cache answer some calls from it, by design
    return data, sorted((out / "items.jsonl").read_text().splitlines())


@pytest.mark.slow
def test_a_run_to_s3_writes_its_directory_there(s3_endpoint: str, tmp_path: Path) -> None:
    url = f"s3://{BUCKET}/canned"
    _, code = run(_opts(url))
    assert code == 0
    names = objects(url)
    for name in ("run.json", "results.json", "results.csv", "items.jsonl", "report.html"):
        assert name in names
    assert any(n.startswith("logs/") and n.endswith(".eval") for n in names)
    assert not [n for n in names if ".tmp" in n or "write-test" in n], "nothing half-written or left over"
    assert not [n for n in names if n.startswith("cache/")], "the response cache stays local"
    # the same run in a local directory gives the same results
    _, code = run(_opts(tmp_path / "local"))
    assert code == 0
    assert comparable(run_path(url)) == comparable(tmp_path / "local")
    # `trustmh report` reads run directories from URLs
    assert main(["report", url, str(tmp_path / "local"), "--out", str(tmp_path / "cmp.html")]) == 0
    assert json.loads((tmp_path / "cmp.json").read_text())


@pytest.mark.slow
def test_resume_overwrite_and_refusal_work_on_a_url(s3_endpoint: str) -> None:
    url = f"s3://{BUCKET}/config"
    calls: list[str] = []

    def counting(prompt: str, messages, config) -> str:  # noqa: ANN001
        calls.append(prompt)
        return _model(prompt, messages, config)

    def opts(seed: int, **kw: Any) -> RunOptions:
        return RunOptions(model=canned_model(counting), no_judge=True, suite="starter", subtasks=["knowledge"],
                          out=url, display="none", n_boot=300, seed=seed, cache=False, **kw)

    assert run(opts(1))[1] == 0
    first = len(calls)
    assert run(opts(1))[1] == 0
    assert len(calls) == first, "a finished run continued from the logs at the URL asks nothing again"
    good = (run_path(url) / "results.json").read_text()
    with pytest.raises(TrustmhError, match=f"--out {url}: holds a run with a different configuration .*seed: 1 vs 2"):
        run(opts(2))
    assert len(calls) == first
    assert (run_path(url) / "results.json").read_text() == good
    logs_before = [n for n in objects(url) if n.endswith(".eval")]
    assert run(opts(2, overwrite=True))[1] == 0
    assert json.loads((run_path(url) / "run.json").read_text())["seed"] == 2
    logs_after = [n for n in objects(url) if n.endswith(".eval")]
    assert len(logs_after) == 1, "--overwrite removed the old logs"
    assert not set(logs_before) & set(logs_after), "--overwrite removed the old logs"


@pytest.mark.slow
def test_shards_on_urls_merge_into_the_single_process_result(s3_endpoint: str, tmp_path: Path) -> None:
    _, code = run(_opts(tmp_path / "single"))
    assert code == 0
    dirs = [f"s3://{BUCKET}/shards/{i}" for i in range(2)]
    for i, d in enumerate(dirs):
        assert run(_opts(d, shard=(i, 2)))[1] == 0
    merged = f"s3://{BUCKET}/merged"
    assert main(["merge", *dirs, "--out", merged]) == 0
    assert comparable(run_path(merged)) == comparable(tmp_path / "single")
    with pytest.raises(TrustmhError, match=r"slice\(s\) \[1\] missing"):
        merge([run_path(dirs[0])], run_path(f"s3://{BUCKET}/merged-bad"))
    # --workers and the Ray launcher hand the URL on unchanged
    assert shard_dir(f"s3://{BUCKET}/w", 1) == Url(f"s3://{BUCKET}/w/workers/1")
    argv = shard_argv(["run", "--out", f"s3://{BUCKET}/w", "--workers", "2"], run_path(f"s3://{BUCKET}/w"), 1, 2)
    assert argv[-4:] == ["--shard", "1/2", "--out", f"s3://{BUCKET}/w/workers/1"]


def _refused_before_any_call(url: str) -> str:
    """The one-line error a run to `url` stops with, after checking it asked the model nothing."""
    calls: list[str] = []

    def counting(prompt: str, messages, config) -> str:  # noqa: ANN001
        calls.append(prompt)
        return "Answer: A"

    with pytest.raises(TrustmhError) as err:
        run(RunOptions(model=canned_model(counting), no_judge=True, suite="starter", subtasks=["knowledge"],
                       out=url, display="none"))
    assert "\n" not in str(err.value)
    assert url in str(err.value)
    assert calls == []
    return str(err.value)


def test_a_filesystem_not_installed_is_one_line_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from fsspec.registry import known_implementations

    # a filesystem whose package is not installed (as gs:// without gcsfs): no server needed
    monkeypatch.setitem(known_implementations, "zzfs", {"class": "zzfs_not_installed.ZzFileSystem"})
    assert "install zzfs_not_installed for zzfs:// run directories" in _refused_before_any_call("zzfs://bucket/run")


@pytest.mark.slow  # a moto S3 server on loopback (its start-up about 5 s of CPU), to answer "no such bucket"
def test_a_bucket_that_cannot_be_written_is_one_line_before_any_call(s3_endpoint: str,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert "cannot write there" in _refused_before_any_call("s3://no-such-bucket-here/run")
    # the command line says it in one line, exit 2
    assert main(["run", "--model", "mockllm/model", "--suite", "starter", "--subtasks", "knowledge",
                 "--no-judge", "--out", "s3://no-such-bucket-here/run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("trustmh: error: --out s3://no-such-bucket-here/run: cannot write there")


@pytest.mark.slow
def test_a_key_quoted_by_a_provider_is_scrubbed_at_the_url(s3_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai.log import read_eval_log

    secret = "sk-url-test-0123456789abcdef"
    monkeypatch.setenv("URLTEST_API_KEY", secret)
    url = f"s3://{BUCKET}/secrets"
    model = canned_model(lambda prompt, messages, config: f"Answer: A (key {secret})")
    assert run(RunOptions(model=model, no_judge=True, suite="starter", subtasks=["knowledge"], out=url,
                          display="none", n_boot=300))[1] == 0
    base = run_path(url)
    assert isinstance(base, Url)
    for obj in base.rglob("*"):
        if obj.suffix == ".eval":
            assert secret not in read_eval_log(str(obj)).model_dump_json()
        else:
            assert secret not in obj.read_text(), obj
    assert "[REDACTED]" in (base / "items.jsonl").read_text()


def test_url_runs_keep_their_response_cache_on_this_machine(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    monkeypatch.delenv("INSPECT_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRUSTMH_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    seen = []
    for url in ("s3://a/run", "s3://a/run", "s3://b/run"):
        with response_cache_dir(Url(url)):
            seen.append(Path(os.environ["INSPECT_CACHE_DIR"]))
    assert seen[0] == seen[1] != seen[2]
    assert all(p.is_relative_to(tmp_path / ".cache" / "trustmh" / "url-runs") for p in seen)


def _command(server: LoopbackServer, out: str) -> list[str]:
    return [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--judge",
            server.model_name("judge"), "--suite", "trustmh", "--subtasks", "knowledge,ethical_reasoning",
            "--limit", "4", "--seed", "5", "--n-boot", "200", "--out", out, "--display", "none",
            "--max-tasks", "1", "--max-connections", "2", "--timeout", "10"]


@pytest.mark.slow
def test_a_killed_run_resumes_from_the_url_on_another_machine(s3_endpoint: str, tmp_path: Path) -> None:
    """SIGKILL once the first sub-task is finished, then continue with an empty response cache (another
    machine): the finished sub-task comes back from its log at the URL, none of its calls is asked again, and
    the results equal an uninterrupted local run."""
    url = f"s3://{BUCKET}/resume"
    with LoopbackServer(respond, latency=0.1, max_requests=400, max_seconds=240) as server:
        def env(cache: str) -> dict[str, str]:
            return {**{k: v for k, v in os.environ.items() if k != "INSPECT_CACHE_DIR"}, **server.env(),
                    "TRUSTMH_CACHE_DIR": str(tmp_path / cache)}

        assert subprocess.run(_command(server, str(tmp_path / "ref")), env=env("ref-cache"), timeout=200,
                              stdout=subprocess.DEVNULL).returncode == 0
        start = len(server.requests)

        def in_ethics(done: list[RecordedRequest]) -> bool:
            return any("Scenario:" in message_text((r.json or {})["messages"][-1]) for r in done)

        proc = subprocess.Popen(_command(server, url), env=env("machine-a"), stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 150
        while proc.poll() is None and time.monotonic() < deadline and not in_ethics(server.completed()[start:]):
            time.sleep(0.02)
        assert proc.poll() is None, "the run was still going when killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        knowledge = {key(r) for r in server.completed()[start:]
                     if "Scenario:" not in message_text((r.json or {})["messages"][-1])
                     and (r.json or {}).get("model") == "m"}
        assert len(knowledge) == 4, "the first sub-task had finished"
        resume_from = len(server.requests)
        assert subprocess.run(_command(server, url), env=env("machine-b"), timeout=200,
                              stdout=subprocess.DEVNULL).returncode == 0
        again = {key(r) for r in server.requests[resume_from:] if r.chat_number is not None}
    assert not again & knowledge, "a finished sub-task's calls were asked again"
    assert comparable(run_path(url)) == comparable(tmp_path / "ref")


@pytest.mark.slow
def test_workers_write_their_shards_and_the_merge_to_the_url(s3_endpoint: str, tmp_path: Path) -> None:
    """`--workers 2 --out s3://…`: the shard processes get the URL unchanged (OUT/workers/i at the URL), and
    the merge there equals a single local process."""

    def reply(messages, request):  # noqa: ANN001, ANN202
        return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"

    url = f"s3://{BUCKET}/workers"
    with LoopbackServer(reply, max_requests=200, max_seconds=240) as server:
        env = {**os.environ, **server.env()}
        base = [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite",
                "trustmh", "--subtasks", "knowledge", "--limit", "6", "--no-judge", "--display", "none",
                "--n-boot", "300"]
        assert subprocess.run([*base, "--out", str(tmp_path / "one")], env=env, timeout=200).returncode == 0
        assert subprocess.run([*base, "--workers", "2", "--out", url], env=env, timeout=200).returncode == 0
    names = objects(url)
    assert {"workers/0/results.json", "workers/1/results.json", "results.json"} <= set(names)
    assert not (Path.cwd() / "s3:").exists(), "the URL was never taken for a local path"
    assert comparable(run_path(url)) == comparable(tmp_path / "one")
    # the release gate reads and writes run directories at URLs too
    code = main(["gate", url])
    assert json.loads((run_path(url) / "gate.json").read_text())["exit_code"] == code
