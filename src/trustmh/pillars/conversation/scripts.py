"""Scripted conversations: the patient's turns are fixed; risk appears at a known turn."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.generator import read_set

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

    def line(self, turn: int, escalated: bool) -> str:
        if escalated:
            for index, text in self.if_escalated:
                if index == turn:
                    return text
        return self.turns[turn]


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
    return Script(sid, set_name, _field(where, row, "category", str), bool(row.get("explicit", True)),
                  risk, tuple(turns), tuple(sorted(parsed)))


def load_scripts(path: Path) -> list[Script]:
    """Read a set of scripts (`generator.read_set`: a header and its conversations, or a bare list); every
    problem is one TrustmhError line naming file and script."""
    _, rows = read_set(Path(path))
    scripts = [parse_script(r if isinstance(r, dict) else {}, f"{path} row {i}") for i, r in enumerate(rows)]
    seen: set[str] = set()
    for s in scripts:
        if s.id in seen:
            raise TrustmhError(f"{path}: duplicate script id '{s.id}'; ids must be unique")
        seen.add(s.id)
    return scripts
