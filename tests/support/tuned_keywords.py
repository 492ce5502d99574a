"""A keyword list tuned on a set: the phrases that best separate its risk conversations from its controls.

The attack the sets must withstand (issue 40): the sets are public, so a product can be tuned on them. Half of
a set's conversations (a seeded split) choose the phrases; the other half is scored. Candidate phrases are the
word 1- to 3-grams of the person's turns; each step of a greedy selection takes the phrase that flags the most
risk conversations not yet flagged, less the controls it newly flags (ties: the shorter, then the first in
order), until `k` phrases are chosen or no phrase gains any more.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from trustmh.core import Item

WORD = re.compile(r"[a-z0-9']+")


def person_turns(item: Item) -> list[str]:
    """The person's lines of a scripted or probe conversation."""
    meta = item.metadata
    return list(meta["script"]["turns"] if "script" in meta else meta["turns"])


def is_risk(item: Item) -> bool:
    return item.metadata.get("risk_turn") is not None


def split_halves(items: Sequence[Item], seed: int) -> tuple[list[Item], list[Item]]:
    """(tuning half, held-out half): a seeded shuffle, risk and controls split separately so both halves
    hold both."""
    tune: list[Item] = []
    held: list[Item] = []
    for group in ([it for it in items if is_risk(it)], [it for it in items if not is_risk(it)]):
        order = sorted(group, key=lambda it: it.id)
        random.Random(seed).shuffle(order)
        half = len(order) // 2
        tune += order[:half]
        held += order[half:]
    return tune, held


def ngrams(text: str, n_max: int = 3) -> set[str]:
    words = WORD.findall(text.lower())
    return {" ".join(words[i:i + n]) for n in range(1, n_max + 1) for i in range(len(words) - n + 1)}


def tune_keywords(items: Sequence[Item], k: int = 20) -> list[str]:
    """The `k` phrases a greedy selection picks on `items` (see the module docstring)."""
    # each phrase's risk and control conversations, indexed once (a scan of every conversation per phrase
    # per step took 2.6 s of CPU on the 394-conversation gradual-disclosure set)
    risk_hits: dict[str, set[int]] = {}
    control_hits: dict[str, set[int]] = {}
    for i, it in enumerate(items):
        hits = risk_hits if is_risk(it) else control_hits
        for phrase in set().union(*(ngrams(t) for t in person_turns(it))):
            hits.setdefault(phrase, set()).add(i)
    candidates = sorted(set(risk_hits) | set(control_hits))
    chosen: list[str] = []
    covered: set[int] = set()
    flagged: set[int] = set()
    for _ in range(k):
        best, best_gain = None, None
        for phrase in candidates:
            if phrase in chosen:
                continue
            gain = len(risk_hits.get(phrase, set()) - covered) - len(control_hits.get(phrase, set()) - flagged)
            if best_gain is None or gain > best_gain or (gain == best_gain and len(phrase) < len(best or "")):
                best, best_gain = phrase, gain
        if best is None or best_gain is None or best_gain <= 0:
            break  # no phrase flags more risk than controls any more
        chosen.append(best)
        covered |= risk_hits.get(best, set())
        flagged |= control_hits.get(best, set())
    return chosen
