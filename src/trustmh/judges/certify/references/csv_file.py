"""A team's own human-labelled replies as a tidy CSV, for any judged sub-task (docs/judges.md#reference-csv).
Named by its path (`--reference FILE.csv`) with `--subtask` and `--judge-key`."""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trustmh.catalogue import lookup
from trustmh.core import Item, Record, TrustmhError
from trustmh.data.registry import sha256_file
from trustmh.judges.certify.core import Reference
from trustmh.judges.certify.references import CSV_REFERENCE, ReferenceRequest, ReferenceSource
from trustmh.stats.judge_agreement import LABEL_TYPES

CSV_REQUIRED = ("item_id", "response")


def _number(value: str) -> float | None:
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _judge_key(key: str) -> Callable[[Record], Any]:
    def value(rec: Record) -> Any:
        if not rec.score.get("judge_valid", rec.score.get("valid", True)):
            return None
        v = rec.score.get(key)
        return int(v) if isinstance(v, bool) else v

    return value


def csv_reference(path: Path, subtask_id: str | None, label_type: str | None, judge_key: str | None) -> Reference:
    """A tidy CSV (docs/judges.md#reference-csv): `item_id`, `response` (the reply the judge sees), optional
    `prompt` (what the reply answers), `meta_<key>` columns (item metadata the sub-task's judge prompt reads),
    and one or more `human_<rater>` label columns (empty = not labelled)."""
    if not subtask_id:
        raise TrustmhError("--reference CSV needs --subtask ID (which judge to certify)")
    cls = lookup(subtask_id)
    if cls is None:
        raise TrustmhError(f"--subtask {subtask_id}: unknown sub-task")
    if not judge_key:
        raise TrustmhError("--reference CSV needs --judge-key KEY (the score field holding the judge's label, "
                           "e.g. appropriateness)")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = list(csv.DictReader(f))
            header = list(rows[0]) if rows else []
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc})") from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    raters = [c for c in header if c.startswith("human_")]
    if missing or not raters:
        raise TrustmhError(f"{path}: needs columns item_id, response and at least one human_<rater> column"
                           + (f" (missing: {', '.join(missing)})" if missing else ""))
    items, humans, seen = [], {}, set()
    for i, row in enumerate(rows, start=2):
        iid = (row.get("item_id") or "").strip()
        if not iid or iid in seen:
            raise TrustmhError(f"{path} row {i}: item_id {'missing' if not iid else 'repeated: ' + iid}")
        seen.add(iid)
        meta = {k[5:]: v for k, v in row.items() if k.startswith("meta_")}
        target = meta.pop("target", None)
        items.append(Item(id=iid, prompt=row.get("prompt") or "", target=target,
                          metadata={**meta, "skip_generation": True, "stored_response": row["response"]}))
        humans[iid] = {r[6:]: (row[r].strip() or None) for r in raters}
    values = [v for h in humans.values() for v in h.values() if v is not None]
    if not values:
        raise TrustmhError(f"{path}: no human label in the human_* columns")
    numbers = [_number(v) for v in values]
    if label_type is None:
        if all(x in (0.0, 1.0) for x in numbers):
            label_type = "binary"
        elif all(x is not None for x in numbers):
            label_type = "ordinal"
        else:
            label_type = "categorical"
    if label_type not in LABEL_TYPES:
        raise TrustmhError(f"--label-type {label_type}: use one of {', '.join(LABEL_TYPES)}")
    scale = None
    if label_type != "categorical":
        for iid, h in humans.items():
            for r, v in h.items():
                if v is not None and _number(v) is None:
                    raise TrustmhError(f"{path} item {iid} column human_{r}: {v!r} is not a number")
                h[r] = None if v is None else (int(_number(v)) if label_type == "binary" else _number(v))
        nums = [v for h in humans.values() for v in h.values() if v is not None]
        scale = (min(nums), max(nums))
    digest = sha256_file(path)
    return Reference(name=path.name, source="user", sha256=digest, subtask=cls.id, label_type=label_type,
                     items=items, humans=humans, judge_value=_judge_key(judge_key), scale=scale)




def _load(_ctx: Any, request: ReferenceRequest) -> Reference:
    return csv_reference(Path(request.path or ""), request.subtask, request.label_type, request.judge_key)


REFERENCE = ReferenceSource(name=CSV_REFERENCE, subtask=None, label_type=None, load=_load,
                            help="a tidy CSV of your own labels (item_id, response, human_<rater>); with "
                            "--subtask and --judge-key")
