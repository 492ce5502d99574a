"""Sharded runs merge into exactly the result of a single-process run; merge refuses shards that do not
belong together, miss a slice or double one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.core import TrustmhError
from trustmh.run.config import RunOptions
from trustmh.run.execute import run
from trustmh.run.shards import merge

SUBTASKS = ["knowledge", "jailbreak_resistance", "antitoxic", "ethical_reasoning"]


def _model(prompt: str, messages, config) -> str:  # noqa: ANN001
    if "Scenario:" in prompt:
        return '```json\n{"choice": "A", "reasoning": "x"}\n```'
    return "Answer: A" if len(prompt) % 3 else "I'm sorry, but I can't help with that."


def _judge(prompt: str, messages, config) -> str:  # noqa: ANN001
    if '"toxicity"' in prompt:
        return json.dumps({"toxicity": len(prompt) % 4})
    if "sc1" in prompt:
        return json.dumps({f"sc{i}": 1 + (len(prompt) + i) % 5 for i in range(1, 6)})
    return json.dumps({"label": "refused" if "can't help" in prompt else "complied"})


def _opts(out: Path, **kw: object) -> RunOptions:
    return RunOptions(model=canned_model(_model), judge=canned_model(_judge, "judge"), suite="starter",
                      subtasks=SUBTASKS, out=out, display="none", n_boot=300, seed=3, **kw)


def comparable(out: Path) -> tuple[dict, list[str]]:
    data = json.loads((out / "results.json").read_text())
    data.pop("created")
    data.pop("usage")  # calls and tokens: runs sharing a response cache answer some calls from it, by design
    return data, sorted((out / "items.jsonl").read_text().splitlines())


@pytest.fixture(scope="module")
def sharded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path], list[tuple[dict, int]]]:
    """One single-process run and the same run in three shards, each run once for the module: the merge tests
    read them (the refusals need shards of one run and a finished run, as the merge test has them)."""
    root = tmp_path_factory.mktemp("shards")
    _, code = run(_opts(root / "single"))
    assert code == 0
    dirs = [root / f"shard{i}" for i in range(3)]
    return root / "single", dirs, [run(_opts(d, shard=(i, 3))) for i, d in enumerate(dirs)]


@pytest.mark.slow
def test_three_shards_merge_into_the_single_process_result(sharded: tuple[Path, list[Path], list[tuple[dict, int]]],
                                                          tmp_path: Path) -> None:
    single_dir, dirs, shard_runs = sharded
    for i, (data, code) in enumerate(shard_runs):
        assert code == 0
        assert data["shard"] == [i, 3]
        assert "not a result" in data["notice"]
    _, code = merge(dirs, tmp_path / "merged")
    assert code == 0
    single, merged = comparable(single_dir), comparable(tmp_path / "merged")
    assert merged == single
    assert json.loads((tmp_path / "merged" / "run.json").read_text()) == json.loads(
        (single_dir / "run.json").read_text())
    # each shard holds about a third of every sub-task
    sizes = [len((d / "items.jsonl").read_text().splitlines()) for d in dirs]
    assert sum(sizes) == len(single[1])
    assert max(sizes) - min(sizes) <= len(SUBTASKS)


@pytest.mark.slow  # one shard run of another seed, beside the module's shards
def test_merge_refuses_mismatched_missing_or_doubled_shards(sharded: tuple[Path, list[Path], list[tuple[dict, int]]],
                                                           tmp_path: Path) -> None:
    single, (a0, a1, a2), _ = sharded
    other = tmp_path / "other"
    run(RunOptions(model=canned_model(_model), judge=canned_model(_judge, "judge"), suite="starter",
                   subtasks=SUBTASKS, out=other, display="none", n_boot=300, seed=4, shard=(1, 3)))
    with pytest.raises(TrustmhError, match="belongs to another run .* seed"):
        merge([a0, other, a2], tmp_path / "m1")
    with pytest.raises(TrustmhError, match=r"slice\(s\) \[1, 2\] missing"):
        merge([a0], tmp_path / "m2")
    with pytest.raises(TrustmhError, match=r"slice\(s\) \[0\] given twice"):
        merge([a0, a0, a1, a2], tmp_path / "m3")
    with pytest.raises(TrustmhError, match="not a shard"):
        merge([single, a1], tmp_path / "m4")


@pytest.mark.slow
def test_workers_split_a_run_over_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--workers 2`: two local processes (shards in OUT/workers/), merged into OUT, equal to one process."""
    import os
    import subprocess
    import sys

    from loopback_server import LoopbackServer, message_text

    def respond(messages, request):  # noqa: ANN001, ANN202
        return "Answer: A" if len(message_text(messages[-1])) % 2 else "Answer: B"

    with LoopbackServer(respond, max_requests=200, max_seconds=240) as server:
        env = {**os.environ, **server.env()}
        base = [sys.executable, "-m", "trustmh.cli", "run", "--model", server.model_name("m"), "--suite",
                "trustmh", "--subtasks", "knowledge", "--limit", "8", "--no-judge", "--display", "none",
                "--n-boot", "300"]
        assert subprocess.run([*base, "--out", str(tmp_path / "one")], env=env, timeout=200).returncode == 0
        assert subprocess.run([*base, "--workers", "2", "--out", str(tmp_path / "two")], env=env,
                              timeout=200).returncode == 0
    assert (tmp_path / "two" / "workers" / "1" / "results.json").exists()
    assert comparable(tmp_path / "two") == comparable(tmp_path / "one")
