"""The reference `crisis-study`: the crisis study's two raters' appropriateness scores (1-5) of stored answers,
judged by `crisis/crisis_escalation`'s judge (docs/judges.md#certify). Declared in the pillar's `REFERENCES`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trustmh.core import Record, RunContext, TrustmhError
from trustmh.digest import files_sha256
from trustmh.judges.references import Reference, ReferenceSource
from trustmh.pillars.crisis.data import crisis_file
from trustmh.pillars.crisis.escalation import CrisisEscalation

NAME = "crisis-study"


def _appropriateness(rec: Record) -> Any:
    return rec.score.get("appropriateness") if rec.score.get("judge_valid", True) else None


def crisis_reference(ctx: RunContext) -> Reference:
    """The crisis study's H1/H2 appropriateness scores (1-5) of stored answers, judged by the escalation judge
    (its reader: `CrisisEscalation.human_rated_items`, the same items a default-mode run judges). The study's
    files: `--reference-path` (the run's `crisis_dir`), else the data registry."""
    sub = CrisisEscalation()
    # read first: a folder without them is said in the reader's words (naming --reference-path), not as a run's
    # skipped extra
    files = [crisis_file("h1_scores", ctx.options), crisis_file("h2_scores", ctx.options)]
    items, note = sub.human_rated_items(ctx)
    if not items:
        raise TrustmhError(f"--reference {NAME}: {note or 'no human-rated item'}")
    # the humans on every rated answer: their agreement is the whole reference's, whatever --limit samples
    every = items if ctx.limit is None else sub.human_rated_items(replace(ctx, limit=None))[0]
    humans = {it.id: {"H1": it.metadata.get("h1"), "H2": it.metadata.get("h2")} for it in every}
    # the rows the reader flagged or left out (the study's unlabelled rows among them), said in the certificate
    rows = items[0].metadata["human_rated_rows"]
    return Reference(name="crisis-study-h1h2", source="public", sha256=files_sha256(files), subtask=sub.id,
                     label_type="ordinal", items=items, humans=humans, judge_value=_appropriateness,
                     scale=(1.0, 5.0), notes=[f"H1/H2 score files {rows}"],
                     counts={"rated_answers": items[0].metadata["human_rated_total"], "judged_here": len(items)})


REFERENCE = ReferenceSource(name=NAME, subtask=CrisisEscalation.id, label_type="ordinal",
                            load=lambda ctx, _request: crisis_reference(ctx), path_option="crisis_dir",
                            help="the crisis study's H1/H2 scores; --reference-path: a local copy of the "
                            "study's repository")
