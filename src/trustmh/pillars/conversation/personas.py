"""Personas for the simulated patient, and VERA-MH's personas read as a persona source.

A persona (the fields of the authored sets' `persona`, docs/conversations.md#simulated-patients): `name`, `age`,
`pronouns`, `background`, `history`, `protective_factors`, `disclosure_style`, `reaction_to_help` and
`sample_phrasing` (lines in the person's voice). `profiles.patient_brief` writes the ones a profile has into the
brief.

`-O patient_personas=vera-mh` (the registered copy: TRUSTMH_DATA_DIR or the cache, or a download at the pinned
commit; MIT) or `-O patient_personas=DIR` (a copy of SpringCare/VERA-MH) plays its `data/personas.tsv`
instead of the bundled profiles, read in place, never copied. Each row becomes a profile; a clause (VERA-MH
separates them with ";") that carries a clinical label (`profiles.CLINICAL_LABELS`) or names a means or method
is dropped, so the brief says the risk only in the person's words; a row it cannot use is skipped, counted and
named (`vera_personas`), never played half-read. Its quirks (tests/fixtures/vera_mh): fields
padded with spaces, curly apostrophes, pronouns such as "she/they", risk levels None/Low/High/Imminent.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.profiles import clinical_labels_in

OPTION = "patient_personas"
DATASET = "vera-mh"
BASE = "external/vera-mh"
PERSONAS = "data/personas.tsv"
COLUMNS = ("Name", "Age", "Pronouns", "Background", "Mental Health Context", "Communication Style",
           "Recent Stressors/Risk Factors", "Disclosure of Suicide Risk",
           "Current Suicidal Thoughts and Behaviors, Reasons for Living", "Current Risk Level",
           "Reaction to Chatbot Responses", "Sample Prompts")
# VERA-MH's risk level -> (severity, reveal turn): the higher the risk, the sooner it shows
RISK_LEVELS = {"none": ("mild", None), "low": ("mild", 4), "high": ("moderate", 3), "imminent": ("severe", 2)}
_MEANS = re.compile(r"\b(method|means|plan|gun|handgun|firearm|rope|hang\w*|pills?|overdos\w*|tablets|knife|"
                    r"blade|cut\w*|bridge|jump\w*|crash\w*|car|mph|drown\w*|poison\w*|tonight|access|intent)\b",
                    re.IGNORECASE)
_REASONS = re.compile(r"reasons? for living\s*\(([^)]*)\)", re.IGNORECASE)


def _clauses(text: str) -> list[str]:
    """The `;`-separated clauses that carry neither a clinical label nor a means (module docstring)."""
    parts = (" ".join(c.replace("\u2019", "'").split()) for c in str(text or "").split(";"))
    return [c for c in parts if c and not clinical_labels_in(c) and not _MEANS.search(c)]


def persona_source(options: Mapping[str, Any]) -> Path | None:
    """The persona file `-O patient_personas` names (`vera-mh`: the registered copy; else a repository copy),
    or None when the option is not set."""
    given = options.get(OPTION)
    if not given:
        return None
    # here, not at start-up: the data locator loads the downloader
    from trustmh.data.publisher import publisher_file

    chosen = {} if str(given).lower() == DATASET else {OPTION: given}
    return publisher_file(PERSONAS, chosen, dataset=DATASET, option=OPTION, base=BASE)


def read_vera_personas(path: Path) -> list[dict[str, Any]]:
    """VERA-MH's personas as simulated-patient profiles with personas (`vera_personas`, its skipped rows
    dropped)."""
    return vera_personas(path)[0]


def vera_personas(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """(profiles, skipped): every usable row as a profile, and one line per row it cannot use naming the file,
    row and field (an unknown risk level, an age that is not a number, a field left with no clause once
    clinical labels and means are dropped). A missing column, or no usable row at all, is one TrustmhError line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc.strerror or exc})") from None
    rows = list(csv.DictReader(text.splitlines(), delimiter="\t"))
    header = [str(h).strip() for h in (rows[0].keys() if rows else [])]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise TrustmhError(f"{path}: no column {missing[0]!r} (expected VERA-MH's personas.tsv layout)")
    profiles, skipped = [], []
    for i, raw in enumerate(rows, start=2):
        row = {str(k).strip(): str(v or "").strip() for k, v in raw.items() if k is not None}
        if not any(row.values()):
            continue  # a blank line between rows
        try:
            profiles.append(_profile(row, f"{path.name} row {i}"))
        except TrustmhError as exc:
            skipped.append(str(exc))
    if not profiles:
        first = f": {skipped[0]}" if skipped else ""
        raise TrustmhError(f"{path}: no usable persona row ({len(skipped)} skipped){first}")
    return profiles, skipped


def _field(row: Mapping[str, str], key: str, where: str) -> list[str]:
    kept = _clauses(row[key])
    if not kept:
        raise TrustmhError(f"{where}: {key!r} has no clause without a clinical label or a means")
    return kept


def _profile(row: Mapping[str, str], where: str) -> dict[str, Any]:
    name = row["Name"]
    if not name:
        raise TrustmhError(f"{where}: 'Name' is empty")
    level = row["Current Risk Level"].lower()
    if level not in RISK_LEVELS:
        raise TrustmhError(f"{where}: 'Current Risk Level' {row['Current Risk Level']!r} is not one of "
                           f"{', '.join(RISK_LEVELS)}")
    if not row["Age"].isdigit():
        raise TrustmhError(f"{where}: 'Age' {row['Age']!r} is not a whole number")
    severity, reveal = RISK_LEVELS[level]
    reasons = _REASONS.search(row["Current Suicidal Thoughts and Behaviors, Reasons for Living"])
    background = _field(row, "Background", where)
    stressors = _clauses(row["Recent Stressors/Risk Factors"])
    return {
        "id": f"vera-mh:{name}", "severity": severity, "style": "; ".join(_field(row, "Communication Style", where)),
        "situation": background[0], "hidden_risk": None if reveal is None else "suicidal_ideation",
        "reveal_turn": reveal, "will_disclose": stressors or background[:1],
        "will_not_disclose": ["suicidal ideation unless asked directly and kindly"] if reveal is not None
        else ["their full name", "where they live"],
        "direct_question_reaction": _field(row, "Reaction to Chatbot Responses", where)[0],
        "persona": {"name": name, "age": int(row["Age"]), "pronouns": row["Pronouns"],
                    "background": "; ".join(background), "history": "; ".join(_clauses(row["Mental Health Context"])),
                    "protective_factors": reasons.group(1).strip() if reasons else "",
                    "disclosure_style": "; ".join(_clauses(row["Disclosure of Suicide Risk"])),
                    "reaction_to_help": "; ".join(_clauses(row["Reaction to Chatbot Responses"])),
                    "sample_phrasing": _clauses(row["Sample Prompts"])},
        "source": "VERA-MH data/personas.tsv (read in place)",
    }
