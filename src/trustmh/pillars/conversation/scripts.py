"""Scripted conversations: the patient's turns are fixed; risk appears at a known turn; a person who answers.

From the decisive turn on, the person answers the model (docs/conversations.md#answers): when the model asks
about their safety, their next line is the persona's `asked_about_safety` answer; when it offers help (a crisis
line, emergency services, a professional), `offered_help`; each once, then the script goes on where it was. A
person who denied and comes back to it (`later`) says so once the script has run out. Whether the model asked
or offered is read by the rules (`scoring.product_rules.asks_about_safety`, `points_to_professional`,
`scoring.crisis_resources.resources_offered_rule`): free, repeatable, the same in a run and in a replay.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.cells import design_cell
from trustmh.pillars.conversation.generator import read_set
from trustmh.scoring.crisis_resources import resources_offered_rule
from trustmh.scoring.product_rules import asks_about_safety, points_to_professional

SETS = ("gradual_disclosure", "delusion", "multiturn_jailbreak")


@dataclass(frozen=True)
class Script:
    id: str
    set: str
    category: str
    explicit: bool
    risk_turn: int | None  # first patient turn carrying the risk/delusion/request; None for controls
    turns: tuple[str, ...]
    # turn index -> the patient's line at that turn once the model has already escalated (offered a crisis
    # resource or asked about the risk); the plain line in `turns` is used otherwise
    if_escalated: tuple[tuple[int, str], ...] = ()
    # what the person says when the model asks about safety / offers help / (denied, then) comes back to it
    answers: tuple[tuple[str, str], ...] = ()
    answer_from: int | None = None  # the decisive turn: the person answers from there on
    stimulus: str | None = None  # the decisive turn's wording id: the unit the statistics cluster on
    cell: str | None = None  # the design cell (cells.design_cell), joined with the stimulus into the unit

    def line(self, turn: int, escalated: bool) -> str:
        if escalated:
            for index, text in self.if_escalated:
                if index == turn:
                    return text
        return self.turns[turn]


ASKED, OFFERED, LATER = "asked_about_safety", "offered_help", "later"


def offers_help(reply: str) -> bool:
    """The model offered help: a crisis resource, emergency services or a professional."""
    return resources_offered_rule(reply) or points_to_professional(reply)


def next_move(script: Script, turns: Sequence[Mapping[str, Any]]) -> tuple[str, str] | None:
    """(the person's next line, what it is: "script" or the answer's name) after `turns`, or None when the
    person has nothing more to say."""
    said = moves(script, turns)
    return _move(script, turns, said, len(said))


def moves(script: Script, turns: Sequence[Mapping[str, Any]]) -> list[str]:
    """The kind of each patient turn of a played transcript: "script" or the answer it gave."""
    said: list[str] = []
    for k in range(sum(1 for t in turns if t["role"] == "patient")):
        move = _move(script, turns, said, k)
        said.append(move[1] if move else "script")
    return said


def _move(script: Script, turns: Sequence[Mapping[str, Any]], said: Sequence[str], k: int
          ) -> tuple[str, str] | None:
    """The k-th patient line, given the kinds of the k lines before it and the model's replies."""
    answers = dict(script.answers)
    scripted = sum(1 for kind in said[:k] if kind == "script")
    replies = [str(t["content"]) for t in sorted(turns, key=lambda t: int(t["turn"])) if t["role"] == "model"]
    reply = replies[k - 1] if 0 < k <= len(replies) else None
    reached = script.answer_from is not None and scripted > script.answer_from
    if reply is not None and reached:
        if ASKED in answers and ASKED not in said[:k] and asks_about_safety(reply):
            return answers[ASKED], ASKED
        if OFFERED in answers and OFFERED not in said[:k] and offers_help(reply):
            return answers[OFFERED], OFFERED
    if scripted < len(script.turns):
        escalated = any(resources_offered_rule(r) for r in replies[:k])
        return script.line(scripted, escalated), "script"
    if LATER in answers and ASKED in said[:k] and LATER not in said[:k]:
        return answers[LATER], LATER
    return None


def _field(where: str, row: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    if key not in row or not isinstance(row[key], kind):
        raise TrustmhError(f"{where}: field '{key}' missing or not {getattr(kind, '__name__', kind)}; "
                           "fix the conversation set file")
    return row[key]


def parse_script(row: dict[str, Any], where: str) -> Script:
    sid = _field(where, row, "id", str)
    where = f"{where} script {sid}"
    set_name = _field(where, row, "set", str)
    if set_name not in SETS:
        raise TrustmhError(f"{where}: set '{set_name}' unknown; use one of {', '.join(SETS)}")
    turns = _field(where, row, "turns", list)
    if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise TrustmhError(f"{where}: 'turns' must be a non-empty list of non-empty strings")
    risk = row.get("risk_turn")
    if risk is not None and (not isinstance(risk, int) or not 0 <= risk < len(turns)):
        raise TrustmhError(f"{where}: risk_turn {risk!r} must be null or a turn index below {len(turns)}")
    branches = row.get("if_escalated") or {}
    if not isinstance(branches, dict):
        raise TrustmhError(f"{where}: 'if_escalated' must map turn indices to lines")
    parsed: list[tuple[int, str]] = []
    for key, text in branches.items():
        if not str(key).isdigit() or not 0 < int(key) < len(turns) or not isinstance(text, str) or not text.strip():
            raise TrustmhError(f"{where}: if_escalated[{key!r}] must be a later turn index below {len(turns)} "
                               "with a non-empty line")
        parsed.append((int(key), text))
    answers = row.get("answers") or {}
    if not isinstance(answers, dict) or not all(k in (ASKED, OFFERED, LATER) and isinstance(v, str) and v.strip()
                                                 for k, v in answers.items()):
        raise TrustmhError(f"{where}: 'answers' must map {ASKED}, {OFFERED} or {LATER} to a non-empty line")
    start = row.get("decisive_turn", risk)
    if start is not None and (not isinstance(start, int) or not 0 <= start < len(turns)):
        raise TrustmhError(f"{where}: decisive_turn {start!r} must be a turn index below {len(turns)}")
    return Script(sid, set_name, _field(where, row, "category", str), bool(row.get("explicit", True)),
                  risk, tuple(turns), tuple(sorted(parsed)), tuple(sorted(answers.items())), start,
                  row["stimulus"] if isinstance(row.get("stimulus"), str) and row["stimulus"] else None,
                  design_cell(row))


def load_scripts(path: Path) -> list[Script]:
    """Read a set of scripts (`generator.read_set`: a header and its conversations, or a bare list); every
    problem is one TrustmhError line naming file and script."""
    _, rows = read_set(Path(path))
    return check_ids([parse_script(r if isinstance(r, dict) else {}, f"{path} row {i}")
                      for i, r in enumerate(rows)], str(path))


def check_ids(scripts: list[Script], where: str) -> list[Script]:
    """The scripts, once no id is used twice (a TrustmhError naming the first that is)."""
    seen: set[str] = set()
    for s in scripts:
        if s.id in seen:
            raise TrustmhError(f"{where}: duplicate script id '{s.id}'; ids must be unique")
        seen.add(s.id)
    return scripts
