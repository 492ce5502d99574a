"""trustmh.storage: local paths stay Paths; URLs are read and written through fsspec without ever leaving a
half-written file (memory://, in-process; the S3 tests are in test_url_rundir.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.core import TrustmhError
from trustmh.run.config import RunOptions
from trustmh.run.execute import run
from trustmh.storage import Url, atomic_path, run_path, write_text_atomic


def fresh() -> Url:
    url = run_path(f"memory://trustmh-tests/{uuid.uuid4().hex}")
    assert isinstance(url, Url)
    return url


def test_local_paths_stay_paths_and_urls_keep_their_double_slash() -> None:
    assert run_path("runs/a") == Path("runs/a")
    assert run_path("file:///tmp/runs/a") == Path("/tmp/runs/a")
    url = run_path("s3://bucket/runs/a/")
    assert isinstance(url, Url)
    assert str(url) == "s3://bucket/runs/a"
    assert str(url / "logs" / "x.eval") == "s3://bucket/runs/a/logs/x.eval"
    assert (url / "results.json").with_suffix(".csv") == Url("s3://bucket/runs/a/results.csv")
    assert (url / "logs" / "x.eval").relative_to(url).parts == ("logs", "x.eval")


def test_atomic_write_list_and_remove_on_a_url() -> None:
    out = fresh()
    write_text_atomic(out / "run.json", "{}\n")
    write_text_atomic(out / "logs" / "b.eval", "b")
    write_text_atomic(out / "logs" / "a.eval", "a")
    write_text_atomic(out / "run.json", '{"seed": 1}\n')
    assert (out / "run.json").read_text() == '{"seed": 1}\n'
    assert [u.name for u in (out / "logs").glob("*.eval")] == ["a.eval", "b.eval"]
    assert [str(u.relative_to(out)) for u in out.rglob("*")] == ["logs/a.eval", "logs/b.eval", "run.json"]
    (out / "logs" / "a.eval").unlink()
    (out / "logs" / "missing").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (out / "logs" / "missing").unlink()
    (out / "logs").rmtree()
    assert [u.name for u in out.rglob("*")] == ["run.json"]


def test_a_failed_write_leaves_the_old_content_and_no_temporary(monkeypatch: pytest.MonkeyPatch) -> None:
    out = fresh()
    write_text_atomic(out / "results.json", "old")
    fs = out.fs

    def broken_mv(*args: object, **kwargs: object) -> None:
        raise OSError("connection lost")

    monkeypatch.setattr(type(fs), "mv", broken_mv)
    with pytest.raises(OSError, match="connection lost"):
        write_text_atomic(out / "results.json", "new")
    assert (out / "results.json").read_text() == "old"
    assert [u.name for u in out.rglob("*")] == ["results.json"]


def test_unknown_or_missing_filesystems_are_one_line_errors() -> None:
    with pytest.raises(TrustmhError, match=r"^zzq://b/run: unknown filesystem 'zzq'"):
        run_path("zzq://b/run").exists()


def test_a_run_and_its_continuation_on_a_memory_url() -> None:
    calls: list[str] = []

    def model(prompt: str, messages, config) -> str:  # noqa: ANN001
        calls.append(prompt)
        return "Answer: A"

    out = fresh()
    opts = RunOptions(model=canned_model(model), no_judge=True, suite="starter", subtasks=["knowledge"], out=out,
                      display="none", n_boot=300, cache=False)
    data, code = run(opts)
    assert code == 0
    assert calls
    names = {str(u.relative_to(out)) for u in out.rglob("*")}
    assert {"run.json", "results.json", "results.csv", "items.jsonl", "report.html"} <= names
    assert any(n.startswith("logs/") and n.endswith(".eval") for n in names)
    assert not [n for n in names if ".tmp" in n or n.startswith("cache/")]
    asked = len(calls)
    again, code = run(opts)
    assert code == 0, "the finished run continues from its logs at the URL"
    assert len(calls) == asked, "the finished run continues from its logs at the URL"
    assert again["subtasks"] == json.loads((out / "results.json").read_text())["subtasks"] == data["subtasks"]


def test_the_ray_launcher_hands_the_url_on_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL is the same place on every node: the Ray shards get it as it is (a local path is made absolute),
    and each shard's redacted output is written beside them at the URL."""
    from trustmh.run import launch

    seen: list[list[str]] = []

    def fake_ray(commands: list[list[str]], address: str | None = None, cpus: float = 1.0
                 ) -> list[launch.ShardOutcome]:
        seen.extend(commands)
        return [launch.ShardOutcome(i, 0, f"shard {i} done\n") for i in range(len(commands))]

    monkeypatch.setattr(launch, "run_ray", fake_ray)
    monkeypatch.setattr(launch, "ray_available", lambda: True)
    out = fresh()
    launch.launch("ray", ["run", "--workers", "2", "--out", str(out), "--engine", "ray"], out, 2)
    assert [c[-4:] for c in seen] == [["--shard", f"{i}/2", "--out", f"{out}/workers/{i}"] for i in range(2)]
    assert (out / "workers" / "1.log").read_text() == "shard 1 done\n"


def test_atomic_path_puts_what_a_writer_wrote_by_name_in_place(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "model.bin"
    with atomic_path(target) as tmp:
        assert tmp.parent == target.parent
        tmp.write_bytes(b"weights")
    assert target.read_bytes() == b"weights"
    assert [p.name for p in target.parent.iterdir()] == ["model.bin"]


def test_atomic_path_leaves_nothing_when_the_writer_fails(tmp_path: Path) -> None:
    target = tmp_path / "model.bin"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("writer failed")
    assert list(tmp_path.iterdir()) == []
