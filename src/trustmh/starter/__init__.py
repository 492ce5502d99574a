"""The starter suite: items written by this project, one JSONL file per sub-task, for the offline demo.

They are a demonstration of the pipeline, not a substitute for the real datasets. File name: the sub-task
id with "/" replaced by "__", e.g. `reliability__knowledge.jsonl`. Each line is one JSON object whose
fields the sub-task's loader defines (usually the same fields as the real dataset's rows).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from trustmh.core import TrustmhError
from trustmh.data.files import read_jsonl


def starter_file_name(subtask_id: str) -> str:
    return subtask_id.replace("/", "__") + ".jsonl"


def load_starter(subtask_id: str) -> list[dict[str, Any]]:
    name = starter_file_name(subtask_id)
    path = resources.files("trustmh.starter").joinpath(name)
    if not path.is_file():
        raise TrustmhError(f"no starter items for {subtask_id} (expected trustmh/starter/{name})")
    return read_jsonl(path, name=f"starter/{name}")
