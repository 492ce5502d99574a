"""The multi-turn extension of the sub-task contract (any pillar's conversations).

`core.Subtask` is single-turn: one prompt, one reply, judge requests about that reply. A
`ConversationSubtask` adds three hooks and keeps the rest of the contract (items, aggregate, not-computed
reasons, catalogue entry):

* `n_turns(item, ctx)` — patient turns to play at most (a `PatientTurn` with `end` stops sooner);
* `patient_turn(item, turns, ctx)` — the patient's next line: fixed text (scripted) or the messages to send
  to the patient model (simulated; the patient sees its brief, never a rubric);
* `conversation_judge_requests(item, turns, ctx)` and `score_turns(item, turns, outputs, ctx)` — judge
  requests about the finished transcript (turn-windowed) and the score, with per-turn marks written into
  the transcript.

The turns are played by the run's one step, `trustmh.steps.play_turns`, under Inspect
(`trustmh.run.conversation`) or offline (`trustmh.offline.run_conversations_offline`). A transcript is
`[{role, content, model, turn, marks}]`; it is stored in `Record.metadata["turns"]`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import (
    GenConfig,
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
    TrustmhError,
    make_record,
)
from trustmh.safe_text import unusable

PATIENT_ROLE = "patient"
# What the patient model is shown when it speaks first (an API needs a user message to answer).
PATIENT_OPENING = "(The chat window has just opened. Write your first message to the assistant.)"
SCRIPT_MODEL = "script"
STARTER_MAX_TOKENS = 64


def transcript_text(turns: Sequence[Mapping[str, Any]]) -> str:
    """The whole conversation as plain lines (what a rubric judge reads, and the record's response)."""
    return "\n".join(f"{t['role']}: {' '.join(str(t['content']).split())}" for t in turns)


@dataclass(frozen=True)
class PatientTurn:
    """The patient's next line: `text` when scripted, else `messages` for the patient model; `elapsed_seconds`
    is the simulated time since the conversation began (a scripted clock, sent only to a product whose
    endpoint file accepts one, docs/products.md#clock), None without a clock."""

    text: str | None = None
    messages: list[dict[str, str]] | None = None
    elapsed_seconds: float | None = None
    end: bool = False  # the patient has nothing more to say: the conversation ends before n_turns


END = PatientTurn(end=True)


def model_messages(turns: Sequence[Mapping[str, Any]], system_prompt: str | None) -> list[dict[str, str]]:
    """The conversation as the model under test sees it."""
    history = [{"role": "assistant" if t["role"] == "model" else "user", "content": str(t["content"])}
               for t in turns]
    return ([{"role": "system", "content": system_prompt}] if system_prompt else []) + history


def patient_messages(brief: str, turns: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The conversation as the patient model sees it: its brief, its own lines as `assistant`."""
    history = [{"role": "assistant" if t["role"] == PATIENT_ROLE else "user", "content": str(t["content"])}
               for t in turns]
    if not history or history[-1]["role"] != "user":
        history.append({"role": "user", "content": PATIENT_OPENING})
    return [{"role": "system", "content": brief}, *history]


# The longest `-O system_prompt` file: far above any deployed system prompt (a few thousand words), far below
# what would make every call of a run needlessly costly.
MAX_SYSTEM_PROMPT_CHARS = 100_000


def read_system_prompt(ctx: RunContext) -> str | None:
    """`-O system_prompt=FILE`: the deployed system's own system prompt for the model under test."""
    path = ctx.options.get("system_prompt")
    if not path:
        return None
    try:
        # read at most one character past the limit: /dev/zero or a huge file is refused, not read to the end
        with Path(str(path)).expanduser().open(encoding="utf-8") as fh:
            text = fh.read(MAX_SYSTEM_PROMPT_CHARS + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise TrustmhError(f"-O system_prompt={path}: cannot read the file ({type(exc).__name__}); give a "
                           "UTF-8 text file") from None
    if len(text) > MAX_SYSTEM_PROMPT_CHARS:
        raise TrustmhError(f"-O system_prompt={path}: longer than {MAX_SYSTEM_PROMPT_CHARS:,} characters (it is "
                           "sent with every call); give the deployed system prompt itself")
    if "\x00" in text:
        raise TrustmhError(f"-O system_prompt={path}: holds NUL characters; give a UTF-8 text file")
    if not text.strip():
        raise TrustmhError(f"-O system_prompt={path}: the file is empty")
    return text


class ConversationSubtask(Subtask):
    """A sub-task whose unit is a whole conversation (see the module docstring)."""

    judge_use = "rule_fallback"
    judged_unit = "conversation"
    modes = ("default",)

    def generation(self, ctx: RunContext) -> GenConfig:
        # chat replies; the starter suite keeps them short so the offline demo's conversations stay cheap
        return GenConfig(temperature=0.0, max_tokens=STARTER_MAX_TOKENS if ctx.suite == "starter" else 512)

    def n_turns(self, item: Item, ctx: RunContext) -> int:
        raise NotImplementedError

    def patient_turn(self, item: Item, turns: Sequence[Mapping[str, Any]], ctx: RunContext) -> PatientTurn:
        raise NotImplementedError

    def conversation_judge_requests(self, item: Item, turns: Sequence[Mapping[str, Any]],
                                    ctx: RunContext) -> list[JudgeRequest]:
        return []

    def score_turns(self, item: Item, turns: Sequence[Mapping[str, Any]], judge_outputs: Mapping[str, str] | None,
                    ctx: RunContext) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """(score, transcript with each turn's `marks` filled in)."""
        raise NotImplementedError

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        raise TrustmhError(f"{self.id}: a conversation is scored from its turns (score_turns), not one reply")

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        raise NotImplementedError


def judge_repeats(ctx: RunContext) -> int:
    """`-O judge_repeats=r`: every conversation judge request asked r times (test-retest)."""
    return max(1, int(ctx.options.get("judge_repeats", 1) or 1))


def is_empty(text: str | None) -> bool:
    """A line or reply with nothing in it (none, or white space only): asked again, never a turn as such."""
    return not (text or "").strip()


def said_something(text: str) -> bool:
    """The check of the re-ask loop (`judges.reask`) for a patient line or a model reply: not empty."""
    return not is_empty(text)


def empty_turns(turns: Sequence[Mapping[str, Any]]) -> list[int]:
    """The turns that stayed empty after their re-asks: a model reply with nothing in it, or a model reply to a
    patient line with nothing in it (the model was asked nothing). Their judge marks are not asked for and
    read as unreadable, and the conversation counts as invalid. A turn whose text came damaged (a lone surrogate
    or a control character, kept as U+FFFD: `trustmh.safe_text`) is read the same way: nothing is scored on
    text that is not what was said."""
    return sorted({int(t["turn"]) for t in turns
                   if is_empty(str(t.get("content") or "")) or unusable(str(t.get("content") or ""))})


def _reads_empty(name: str, empty: Sequence[int]) -> bool:
    """Whether the judge request `name` reads an empty turn: a request about that turn (`turn3:crisis`), or
    one about the whole transcript (a rubric), when some turn is empty."""
    return bool(empty) and (not name.startswith("turn") or any(name.startswith(f"turn{t}:") for t in empty))


def usable_requests(requests: Sequence[JudgeRequest], turns: Sequence[Mapping[str, Any]]) -> list[JudgeRequest]:
    """The judge requests worth sending: none that reads an empty turn (`empty_turns`)."""
    empty = empty_turns(turns)
    return [r for r in requests if not _reads_empty(r.name, empty)]


def conversation_record(subtask: ConversationSubtask, item: Item, turns: list[dict[str, Any]],
                        judge_outputs: Mapping[str, str] | None, ctx: RunContext, *, epoch: int = 1,
                        extra: dict[str, Any] | None = None) -> Record:
    """The one way a conversation becomes a Record: the response is the transcript as text, the turns
    (with their marks) are in `metadata["turns"]`, every judge reply in `judge_raw`.

    A turn that stayed empty is read conservatively: its judge marks, and the whole-transcript ones (the
    rubric), are unreadable (each sub-task counts an unreadable mark against the model), and the conversation
    is invalid (`valid` false, `empty_turns`)."""
    empty = empty_turns(turns)
    if empty and judge_outputs is not None:
        judge_outputs = {k: v for k, v in judge_outputs.items() if not _reads_empty(k, empty)}
    score, marked = subtask.score_turns(item, turns, judge_outputs, ctx)
    if empty:
        score = {**score, "valid": False, "invalid": True, "empty_turns": empty}
    return make_record(subtask, item, transcript_text(marked), score, epoch=epoch,
                       judge_raw=dict(judge_outputs or {}), extra={"turns": marked, **(extra or {})})
