"""The starter suite: items written by this project, one JSONL file per sub-task, for the offline demo.

They are a demonstration of the pipeline, not a substitute for the real datasets. Each pillar keeps its
starter items beside its code: sub-task `crisis/crisis_identification` reads
`trustmh/pillars/crisis/starter/crisis_identification.jsonl`. Each line is one JSON object whose fields
the sub-task's loader defines (usually the same fields as the real dataset's rows).
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import read_jsonl


def starter_path(subtask_id: str, file_name: str | None = None) -> Traversable:
    """The starter file of a sub-task (or another file in its pillar's starter folder)."""
    pillar, name = subtask_id.split("/", 1)
    return resources.files("trustmh") / "pillars" / pillar / "starter" / (file_name or f"{name}.jsonl")


def starter_file_name(subtask_id: str) -> str:
    """The starter file's name as the package shows it: `pillars/<pillar>/starter/<sub-task>.jsonl`."""
    pillar, name = subtask_id.split("/", 1)
    return f"pillars/{pillar}/starter/{name}.jsonl"


def load_starter(subtask_id: str) -> list[dict[str, Any]]:
    path = starter_path(subtask_id)
    if not path.is_file():
        raise TrustmhError(f"no starter items for {subtask_id} (expected trustmh/{starter_file_name(subtask_id)})")
    return read_jsonl(path, name=starter_file_name(subtask_id))
