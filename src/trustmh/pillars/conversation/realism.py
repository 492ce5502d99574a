"""Simulated patients against people (docs/references.md#simulated-patients-against-people).

trustmh's simulated patient turns are compared, per patient model, with the patient turns people wrote for
MindEval (`data/human_user_turns.jsonl`: `{"patient_profile": {...}, "content": "..."}` per line; 432 turns,
19 profiles). MindEval has no licence: the file is read in place (`-O mindeval_dir=DIR`, a copy of the
repository, or a copy already in TRUSTMH_DATA_DIR / the cache), never downloaded by a run and never copied
into results; a pair shown to the judge holds one human turn, so the run's Inspect log holds it (local use).

Measures (all stated, all lexical):

* `words`: words per turn (runs of letters, digits and apostrophes);
* `questions`: questions asked per turn (runs of "?") and the share of turns asking at least one;
* `self_disclosure`: a lexical proxy only: the share of a turn's words that are first-person singular
  pronouns (I, me, my, mine, myself and their contractions); it counts talk about oneself, not what is
  disclosed;
* `mattr`: lexical diversity, the moving-average type-token ratio over a 50-word window of each
  conversation's (each human profile's) patient text in order, averaged (a text under 50 words: its plain
  type-token ratio);
* `discrimination`: the judge is shown one human and one simulated turn in a seeded order and asked which
  one a person wrote; accuracy = the share of pairs where it picks the person (50% = it cannot tell them
  apart), with a seeded bootstrap interval over conversations. An unreadable verdict counts as the judge
  telling them apart (against the simulator, never for it). A simulator is flagged as easy to tell from
  people when the interval's lower bound is at least `EASY_TO_TELL` (0.70).

Intervals: seeded percentile bootstrap, clusters = conversations (simulated) and profiles (human).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trustmh.core import JudgeRequest, TrustmhError
from trustmh.data.files import bounded_file
from trustmh.data.rows import RowProblem, RowReport
from trustmh.judges.parse import extract_judge_object
from trustmh.judges.schema import json_object_schema
from trustmh.prompts import render
from trustmh.stats.bootstrap import bootstrap_mean

USER_TURNS = "data/human_user_turns.jsonl"
BASE = "external/mind-eval"  # the registry's folder for the publisher's files
OPTION = "mindeval_dir"
TEMPLATE = "conversation_realism_judge"
REQUEST = "realism"
SCHEMA = json_object_schema(enums={"person": ["A", "B"]})
EASY_TO_TELL = 0.70
MATTR_WINDOW = 50
HUMAN = "human (MindEval)"

_WORD = re.compile(r"[A-Za-z0-9']+")
_QUESTION = re.compile(r"\?+")
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself", "i'm", "im", "i've", "ive", "i'd", "i'll"})


@dataclass(frozen=True)
class HumanTurns:
    path: Path
    turns: list[tuple[str, str]]  # (profile key, text)
    report: RowReport


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def mattr(tokens: Sequence[str], window: int = MATTR_WINDOW) -> float | None:
    """Moving-average type-token ratio (Covington & McFall 2010); a shorter text: its type-token ratio."""
    if not tokens:
        return None
    if len(tokens) <= window:
        return len(set(tokens)) / len(tokens)
    counts: dict[str, int] = {}
    for w in tokens[:window]:
        counts[w] = counts.get(w, 0) + 1
    total = len(counts)
    for i in range(window, len(tokens)):
        old, new = tokens[i - window], tokens[i]
        counts[old] -= 1
        if not counts[old]:
            del counts[old]
        counts[new] = counts.get(new, 0) + 1
        total += len(counts)
    return total / (len(tokens) - window + 1) / window


def turn_measures(text: str) -> dict[str, float]:
    ws = words(text)
    n_q = len(_QUESTION.findall(text))
    return {"words": float(len(ws)), "questions": float(n_q), "asks_question": float(n_q > 0),
            "self_disclosure": (sum(w in FIRST_PERSON for w in ws) / len(ws)) if ws else 0.0}


def find_human_turns(options: Mapping[str, Any]) -> Path | None:
    """`-O mindeval_dir=DIR` (a copy of the repository), else a copy already in TRUSTMH_DATA_DIR or the cache
    (never a download: a run does not fetch an unlicensed file)."""
    # here, not at start-up: the data locator loads the downloader
    from trustmh.data.publisher import local_publisher_file

    return local_publisher_file(USER_TURNS, options, dataset="mindeval", option=OPTION, base=BASE)


def read_human_turns(path: Path) -> HumanTurns:
    """The human-written patient turns; rows it cannot use are named (the file is refused only if none is)."""
    report = RowReport()
    turns: list[tuple[str, str]] = []
    try:
        # split on "\n" only: 13 rows of the real file hold a raw U+2028 in a string (valid JSON; splitlines cuts them)
        lines = bounded_file(path).read_text(encoding="utf-8-sig").split("\n")
    except OSError as exc:
        raise TrustmhError(f"{path}: cannot read ({exc.strerror or exc})") from None
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            report.add(RowProblem(path.name, i, "line", "not JSON", "skipped"))
            continue
        text = row.get("content") if isinstance(row, dict) else None
        if not isinstance(text, str) or not text.strip():
            what = "empty" if isinstance(text, str) else f"not text ({type(text).__name__})"
            report.add(RowProblem(path.name, i, "content", what, "skipped"))
            continue
        profile = json.dumps(row.get("patient_profile"), sort_keys=True, ensure_ascii=False)
        turns.append((hashlib.sha256(profile.encode("utf-8")).hexdigest()[:12], text))
    RowReport.require_usable(len(turns), str(path), report.problems)
    return HumanTurns(path=path, turns=turns, report=report)


def _draw(key: str, n: int) -> int:
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % n


def realism_pair(item_id: str, patient_texts: Sequence[str], human: HumanTurns, seed: int
                 ) -> tuple[str, str, str] | None:
    """(turn A, turn B, which one the person wrote) for one conversation, drawn from the seed and item id."""
    if not patient_texts or not human.turns:
        return None
    simulated = patient_texts[_draw(f"{seed}:{item_id}:sim", len(patient_texts))]
    person = human.turns[_draw(f"{seed}:{item_id}:human", len(human.turns))][1]
    if _draw(f"{seed}:{item_id}:order", 2) == 0:
        return person, simulated, "A"
    return simulated, person, "B"


def realism_request(a: str, b: str) -> JudgeRequest:
    return JudgeRequest(name=REQUEST, prompt=render(TEMPLATE, a=" ".join(a.split()), b=" ".join(b.split())),
                        validate=lambda t: parse_pick(t) is not None, schema=SCHEMA, max_tokens=32)


def parse_pick(text: str | None) -> str | None:
    obj = extract_judge_object(text)
    value = None if obj is None else obj.get("person")
    return value.strip().upper() if isinstance(value, str) and value.strip().upper() in ("A", "B") else None


def _mean(values: Sequence[float], clusters: Sequence[str], seed: int, n_boot: int) -> dict[str, Any]:
    if not values:
        return {"value": None, "ci": None, "n": 0}
    point, ci = bootstrap_mean(list(values), list(clusters), seed=seed, n_boot=n_boot)
    return {"value": point, "ci": list(ci) if all(x == x for x in ci) else None, "n": len(values)}


def group_measures(turns: Sequence[tuple[str, str]], *, seed: int, n_boot: int) -> dict[str, Any]:
    """Per-turn measures' means (clusters resampled) and the mean MATTR of the clusters' texts."""
    per = [turn_measures(text) for _, text in turns]
    clusters = [c for c, _ in turns]
    out: dict[str, Any] = {"n_turns": len(turns), "n_clusters": len(set(clusters))}
    for key in ("words", "questions", "asks_question", "self_disclosure"):
        out[key] = _mean([m[key] for m in per], clusters, seed, n_boot)
    text_of: dict[str, list[str]] = {}
    for c, text in turns:
        text_of.setdefault(c, []).extend(words(text))
    diversity = {c: mattr(tokens) for c, tokens in text_of.items()}
    kept = [c for c, v in diversity.items() if v is not None]
    out["mattr"] = _mean([float(diversity[c]) for c in kept], kept, seed, n_boot)  # type: ignore[arg-type]
    return out


def realism_summary(conversations: Sequence[Mapping[str, Any]], human: HumanTurns | None, *, seed: int,
                    n_boot: int, why_not: str | None = None) -> dict[str, Any]:
    """`conversations`: per simulated conversation {"id", "patient_model", "patient_texts", "pick", "person"}
    (pick: the judge's answer or None when unreadable or not asked). Per patient model: the measures beside
    the people's, the discrimination accuracy and a warning when a simulator is easy to tell from people."""
    if human is None:
        return {"status": "not computed", "why": why_not or f"MindEval's {USER_TURNS} not found (-O {OPTION}=DIR)"}
    out: dict[str, Any] = {"status": "ok", "source": f"MindEval {USER_TURNS} (read in place)",
                           "n_human_turns": len(human.turns), **human.report.as_json(),
                           "easy_to_tell_threshold": EASY_TO_TELL, "humans": group_measures(human.turns, seed=seed,
                                                                                            n_boot=n_boot),
                           "by_patient_model": {}, "warnings": []}
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for conv in conversations:
        by_model.setdefault(str(conv.get("patient_model")), []).append(conv)
    for model, convs in sorted(by_model.items()):
        turns = [(str(c["id"]), t) for c in convs for t in c.get("patient_texts") or []]
        entry = group_measures(turns, seed=seed, n_boot=n_boot)
        asked = [c for c in convs if c.get("person") is not None]
        hits = [1.0 if c.get("pick") is None or c.get("pick") == c["person"] else 0.0 for c in asked]
        entry["discrimination"] = {**_mean(hits, [str(c["id"]) for c in asked], seed, n_boot),
                                   "n_invalid": sum(1 for c in asked if c.get("pick") is None),
                                   "meaning": "share of pairs where the judge picks the person's turn; 0.5 = it "
                                              "cannot tell them apart"}
        if not asked:
            entry["discrimination"]["why"] = "no judge verdict (no judge, or no pair could be drawn)"
        ci = entry["discrimination"].get("ci")
        if ci is not None and ci[0] >= EASY_TO_TELL:
            out["warnings"].append(f"patient model {model}: a judge tells its turns from people's in "
                                   f"{entry['discrimination']['value']:.0%} of pairs (lower bound {ci[0]:.0%} >= "
                                   f"{EASY_TO_TELL:.0%}): easy to tell from people")
        out["by_patient_model"][model] = entry
    return out
