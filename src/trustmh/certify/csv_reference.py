"""A team's own human-labelled replies as a tidy CSV, for any judged sub-task (docs/judges.md#reference-csv).
Named by its path (`--reference FILE.csv`) with `--subtask` and `--judge-key`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from trustmh.catalogue import lookup
from trustmh.core import Item, Record, RunContext, TrustmhError
from trustmh.digest import sha256_file
from trustmh.judges.labels import META_PREFIX, check_label_type, read_reference_csv
from trustmh.judges.references import CSV_REFERENCE, Reference, ReferenceRequest, ReferenceSource
from trustmh.sampling import apply_limit


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
    # the labels' type is the command's (--label-type), never guessed: one stray label would change it
    content = read_reference_csv(path, str(check_label_type(label_type, "--reference CSV")))
    items = []
    for row in content.rows:
        meta = {k[len(META_PREFIX):]: v for k, v in row.items() if k.startswith(META_PREFIX)}
        target = meta.pop("target", None)
        items.append(Item(id=row["item_id"].strip(), prompt=row.get("prompt") or "", target=target,
                          metadata={**meta, "skip_generation": True, "stored_response": row["response"]}))
    humans, scale = content.humans, content.scale
    digest = sha256_file(path)
    return Reference(name=path.name, source="user", sha256=digest, subtask=cls.id, label_type=str(label_type),
                     items=items, humans=humans, judge_value=_judge_key(judge_key), scale=scale,
                     judge_key=judge_key)


def limited(ref: Reference, ctx: RunContext) -> Reference:
    """The reference's items under the run's `--limit`: a seeded sample stratified by the first rater's label
    (every label kept where the limit allows). The humans stay on every item: their own agreement is the whole
    reference's (judges/reference_quality.py), and a certification on a sample is a trial."""
    def first_label(item: Item) -> str:
        labels = ref.humans.get(item.id) or {}
        return str(next((labels[r] for r in sorted(labels) if labels[r] is not None), None))

    chosen = apply_limit(ref.items, ctx, first_label, min_per_stratum=True)
    if len(chosen) == len(ref.items):
        return ref
    return replace(ref, items=chosen, notes=[*ref.notes, f"--limit: a seeded sample of {len(chosen)} of "
                                             f"{len(ref.items)} items (stratified by the first rater's label)"])


def _load(ctx: RunContext, request: ReferenceRequest) -> Reference:
    return limited(csv_reference(Path(request.path or ""), request.subtask, request.label_type, request.judge_key),
                   ctx)


REFERENCE = ReferenceSource(name=CSV_REFERENCE, subtask=None, label_type=None, load=_load,
                            help="a tidy CSV of your own labels (item_id, response, human_<rater>); with "
                            "--subtask, --judge-key and --label-type")
