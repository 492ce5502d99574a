"""MentalAlign's expert ratings of the published MentalBench replies (7 attributes, 1-5), judged by the
MentalBench judge (docs/judges.md#mentalalign)."""

from __future__ import annotations

from typing import Any

from trustmh.core import Item, Record, RunContext, TrustmhError
from trustmh.data import resolve
from trustmh.digest import files_sha256
from trustmh.flag_values import as_typed
from trustmh.judges.references import Reference, ReferenceSource
from trustmh.pillars.mentalbench.data import MENTALBENCH_REL, find_data_file
from trustmh.pillars.mentalbench.generation import FIXED_PROMPT, MentalBenchGeneration
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.reference import HUMAN_REL, TEXTS_MISSING, expert_rated_replies
from trustmh.sampling import apply_limit

NAME = "mentalalign"


def _attribute_scores(rec: Record) -> dict[str, Any]:
    scores = rec.score.get("scores") or {}
    return {a: scores.get(a) for a in ATTRIBUTES}


def mentalalign_reference(ctx: RunContext, path: str | None) -> Reference:
    """MentalAlign's expert ratings of the published MentalBench replies (7 attributes, 1-5), judged by the
    MentalBench judge (`trustmh.pillars.mentalbench.reference`). The workbooks come from
    `-O mentalalign_dir=DIR` or the data registry (TRUSTMH_DATA_DIR); the reply texts from `path`,
    `-O mentalbench_path=FILE` or the registry. `ctx.limit`: a seeded sample of that many replies, stratified
    by source."""
    ma_dir = ctx.options.get("mentalalign_dir")
    if not ma_dir:
        ma_dir = resolve("mentalalign", f"mentalalign/{HUMAN_REL.as_posix()}").parent.parent
    texts = path or ctx.options.get("mentalbench_path")
    try:
        texts_path = resolve("mentalbench", MENTALBENCH_REL, texts)
        if texts_path.is_dir():
            find_data_file(texts_path)  # a folder without the table is said here, as the user typed it
    except TrustmhError as exc:
        if texts:  # said as the user typed it: `--reference-path X` or `-O mentalbench_path=X`
            raise TrustmhError(f"{as_typed('mentalbench_path', texts)}: "
                               f"{str(exc).removeprefix(f'{texts}: ')}") from None
        raise TrustmhError(f"--reference {NAME}: {TEXTS_MISSING} ({exc})".replace("\n", " ")) \
            from None
    rated = expert_rated_replies(ma_dir, texts_path)
    replies = apply_limit(rated.replies, ctx, lambda r: r.source, min_per_stratum=True)
    items: list[Item] = []
    humans: dict[str, dict[str, Any]] = {}
    clusters: dict[str, str] = {}
    for r in replies:
        iid = f"{r.conv_id}:{r.source}"
        items.append(Item(id=iid, prompt=FIXED_PROMPT, cluster=r.conv_id,
                          metadata={"conv_id": r.conv_id, "context": r.context, "source": r.source,
                                    "skip_generation": True, "fixed_response": r.reply}))
        humans[iid] = {"expert": dict(r.expert)}
        clusters[iid] = r.conv_id
    notes = list(rated.notes)
    if len(replies) < len(rated.replies):
        notes.append(f"--limit: a seeded sample of {len(replies)} of {len(rated.replies)} rated replies "
                     "(stratified by source)")
    return Reference(name="mentalalign-experts", source="public", sha256=files_sha256(rated.files),
                     subtask=MentalBenchGeneration.id, label_type="ordinal", items=items, humans=humans,
                     judge_value=_attribute_scores, scale=(1.0, 5.0), notes=notes, attributes=ATTRIBUTES,
                     clusters=clusters, counts={"rated_replies": len(rated.replies), "left_out": rated.skipped})


REFERENCE = ReferenceSource(name=NAME, subtask=MentalBenchGeneration.id, label_type="ordinal",
                            load=lambda ctx, request: mentalalign_reference(ctx, request.path),
                            # --reference-path fills the sub-task's own option too: the anchor items read the
                            # texts the certificate reads, not the registry's
                            path_option="mentalbench_path",
                            help="MentalAlign's expert ratings (the MentalBench judge); --reference-path: the "
                            "MentalBench-100k file holding the rated replies' texts")
