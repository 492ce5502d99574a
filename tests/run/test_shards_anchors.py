"""A judged run's anchor items under sharding (docs/judge-probes.md#drift): each shard judges its slice of the
anchors, and `trustmh merge` carries every anchor once, exactly as a single-process run records them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from canned import canned_model
from trustmh.run.config import RunOptions
from trustmh.run.execute import run
from trustmh.run.shards import merge

SUBTASK = "safety/over_refusal"


def _judge(prompt: str, _messages: object, _config: object) -> str:
    return json.dumps({"label": "complied", "helpful": int("small step" in prompt), "rationale": "r"})


def _opts(out: Path, **kw: Any) -> RunOptions:
    return RunOptions(model=canned_model(lambda p, m, c: "Here is a small step you could try.", "m"),
                      judge=canned_model(_judge, "judge"), subtasks=[SUBTASK], out=out, display="none",
                      n_boot=200, limit=4, seed=1, **kw)


def anchors(data: dict[str, Any]) -> dict[str, Any]:
    return data["subtasks"][SUBTASK]["judge"].get("anchors") or {}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("shard-anchors")
    certs = str(tmp / "no-certificates")  # no certificate: the anchors are judged and recorded all the same
    single, _ = run(_opts(tmp / "single", certificates=certs))
    shards = [run(_opts(tmp / f"shard{i}", shard=(i, 2), certificates=certs))[0] for i in range(2)]
    merged, code = merge([tmp / "shard0", tmp / "shard1"], tmp / "merged")
    return {"single": single, "shards": shards, "merged": merged, "code": code}


def test_the_merge_succeeds(runs: dict[str, Any]) -> None:
    assert runs["code"] == 0


def test_each_shard_judges_its_own_slice_of_the_anchors(runs: dict[str, Any]) -> None:
    first, second = (set(anchors(s)) for s in runs["shards"])
    assert (bool(first), bool(second), first & second) == (True, True, set())


def test_the_merged_run_carries_every_anchor_once_as_a_single_run_does(runs: dict[str, Any]) -> None:
    assert anchors(runs["merged"]) == anchors(runs["single"])


def test_a_run_without_a_certificate_records_its_anchors(runs: dict[str, Any]) -> None:
    assert len(anchors(runs["single"])) == 20
