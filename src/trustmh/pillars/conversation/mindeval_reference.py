"""MindEval's clinicians' ratings (four per conversation, five criteria, 1-6) of its 60 multi-turn
conversations, judged by the rubric judge of `conversation/simulated_patient` on each whole transcript
(docs/references.md#mindeval). The publisher's files have no licence: read in place, never copied."""

from __future__ import annotations

from trustmh.core import RunContext
from trustmh.judges.references import Reference, ReferenceSource
from trustmh.pillars.conversation import mindeval
from trustmh.pillars.conversation.scoring import RUBRIC_KEYS
from trustmh.sampling import apply_limit

NAME = "mindeval"


def mindeval_reference(ctx: RunContext, path: str | None) -> Reference:
    """The judgeable conversations of `data/human_annotations.jsonl` (under `path`, a copy of the repository,
    else from the data registry) with the clinicians' criterion ratings; the judge is asked through
    `mindeval.StoredConversationRubric` (the request a run sends). `ctx.limit`: a seeded sample, stratified by
    therapist model."""
    ann = mindeval.read_annotations(mindeval.locate(path or None, mindeval.ANNOTATIONS))
    items, humans = mindeval.reference_items(ann)
    chosen = apply_limit(items, ctx, lambda it: str(it.metadata.get("model")), min_per_stratum=True)
    notes = [f"criteria: {mindeval.MAPPING_SOURCE}",
             "0 = not applicable: never a score; a clinician's criterion rating is the mean of their applicable "
             "ratings over its fields"]
    if len(chosen) < len(items):
        notes.append(f"--limit: a seeded sample of {len(chosen)} of {len(items)} conversations (stratified by "
                     "therapist model)")
    return Reference(name="mindeval-clinicians", source="public", sha256=ann.sha256, subtask=mindeval.SIMULATED_PATIENT,
                     # the humans on every conversation: their agreement is the whole reference's, whatever
                     # --limit samples for the judge (judges/reference_quality.py)
                     label_type="ordinal", items=chosen, humans=dict(humans),
                     judge_value=lambda rec: rec.score.get("rubric"), scale=(1.0, 6.0), notes=notes,
                     attributes=RUBRIC_KEYS, clusters=ann.clusters, judging=mindeval.StoredConversationRubric(),
                     counts={"conversations": len(ann.conversations), "judgeable": len(items)},
                     report=ann.report, unit="conversation")


REFERENCE = ReferenceSource(name=NAME, subtask=mindeval.SIMULATED_PATIENT, label_type="ordinal", unit="conversation",
                            load=lambda ctx, request: mindeval_reference(ctx, request.path),
                            help="MindEval's four clinicians' ratings of 60 conversations (the simulated-patient "
                            "rubric judge); --reference-path: a copy of SWORDHealth/mind-eval, else the data "
                            "registry's")
