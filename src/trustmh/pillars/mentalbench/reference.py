"""MentalAlign's expert ratings as the reference set of `trustmh judge certify --reference mentalalign`
(docs/judges.md#mentalalign). Plain Python, no Inspect.

The expert workbook (`Human_Judge/Human_judge.xlsx`) holds, per conversation (ConvID), the context and one
JSON rating of the 7 attributes for each of the 10 published replies; it does not hold the replies. Neither
do the LLM-judge workbooks (context and raw judge text only). The reply texts are the MentalBench-100k table
(ConvID i = data row i, docs/pillars/mentalbench.md#data), so a reference set needs both files.

A rated reply enters the set when its conversation's context in the text table equals the expert file's
(whitespace-normalised: the expert file holds another conversation in 19 rows, docs/align.md#data-quality),
its reply is present with visible text (a run in default mode does not judge a missing or reasoning-only
reply either), and the expert gave at least one attribute a valid 1-5 score (0, 6, null and empty cells
are not labels). Everything left out is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trustmh.core import TrustmhError
from trustmh.pillars.mentalbench.align_data import (
    FILE_SOURCES,
    SOURCES,
    normalise_context,
    parse_sheet,
    read_workbook,
)
from trustmh.pillars.mentalbench.data import find_data_file, load_mentalbench
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES
from trustmh.pillars.mentalbench.sources import split_reasoning

HUMAN_REL = Path("Human_Judge") / "Human_judge.xlsx"
JUDGE_DIR = "LLMs_as_a_judge"
TEXTS_MISSING = ("the MentalAlign workbooks hold the contexts and the expert ratings but not the rated replies; "
                 "their texts are MentalBench-100k (github.com/abeerbadawi/MentalBench-Align), not found here: "
                 "pass --reference-path FILE (the MentalBench CSV, its zip or a Hugging Face export folder) "
                 "or run `trustmh data fetch mentalbench`")
SKIP_REASONS = ("no_text_row", "context_differs", "reply_missing", "reasoning_only", "no_expert_rating")


@dataclass
class RatedReply:
    conv_id: str
    source: str  # canonical source key (docs/pillars/mentalbench.md#data)
    context: str  # as the text table gives it (what the judge sees)
    reply: str  # the published reply, as published
    expert: dict[str, float | None]  # attribute -> expert score 1-5, None = no valid rating


@dataclass
class RatedSet:
    replies: list[RatedReply]
    files: list[Path]  # the inputs, for the reference's sha256
    skipped: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def expert_rated_replies(mentalalign_dir: str | Path, texts: str | Path) -> RatedSet:
    """The expert-rated replies of MentalAlign with their texts from the MentalBench table `texts`."""
    root = Path(mentalalign_dir)
    human_path = root / HUMAN_REL
    if not human_path.is_file():
        raise TrustmhError(f"{root}: no {HUMAN_REL.as_posix()} (the MentalAlign expert ratings)")
    sheet = read_workbook(human_path, "human")
    expert = parse_sheet(sheet, "human", "human")
    judge_files = sorted((root / JUDGE_DIR).glob("*.xlsx")) if (root / JUDGE_DIR).is_dir() else []
    reference_contexts = read_workbook(judge_files[0], "judge").contexts if judge_files else None
    table = load_mentalbench(texts, reference_contexts=reference_contexts)
    by_conv = {r.conv_id: r for r in table.rows}
    skipped = dict.fromkeys(SKIP_REASONS, 0)
    replies: list[RatedReply] = []
    for i, cid in enumerate(sheet.conv_ids):
        row = by_conv.get(str(cid))
        if row is None:
            skipped["no_text_row"] += len(FILE_SOURCES)
            continue
        if normalise_context(row.context) != normalise_context(sheet.contexts[i]):
            skipped["context_differs"] += len(FILE_SOURCES)
            continue
        for source in FILE_SOURCES:
            text = row.responses.get(source)
            if text is None:
                skipped["reply_missing"] += 1
                continue
            if not split_reasoning(text).text:
                skipped["reasoning_only"] += 1
                continue
            s = SOURCES.index(source)
            scores = {a: (None if v != v else float(v)) for a, v in zip(ATTRIBUTES, expert.score[i, s], strict=True)}
            if all(v is None for v in scores.values()):
                skipped["no_expert_rating"] += 1
                continue
            replies.append(RatedReply(conv_id=str(cid), source=source, context=row.context, reply=text,
                                      expert=scores))
    if not replies:
        raise TrustmhError(f"{human_path}: no expert-rated reply could be paired with a text in {texts} "
                           f"(left out: {', '.join(f'{k} {v}' for k, v in skipped.items() if v) or 'none'})")
    notes = list(table.notes)
    if skipped["context_differs"]:
        notes.append(f"{skipped['context_differs'] // len(FILE_SOURCES)} conversation(s) left out: the expert "
                     "file's context differs from the text table's (the rating belongs to another conversation)")
    text_files = [] if table.path is None else ([table.path] if table.path.is_file() else find_data_file(table.path))
    files = [human_path, *text_files]
    return RatedSet(replies=replies, files=files, skipped=skipped, notes=notes)
