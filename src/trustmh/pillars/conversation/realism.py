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
* `distinct_lines`: cross-conversation, the share of a patient's turns (normalised: lower case, words only)
  that no other turn repeats; `self_similarity`: the mean word-trigram Jaccard overlap between turns of
  different conversations (different profiles for people; every pair, or above 20,000 pairs a seeded sample
  of pairs drawn over all the turns): a simulator that says one stock phrase in every conversation shows it
  here, not in any one turn;
* `discrimination`: the judge is shown one human and one simulated turn and asked which one a person wrote,
  in both orders (A/B swapped, so a judge that favours a position cannot pass for one that cannot tell);
  accuracy = the share of verdicts that pick the person (50% = it cannot tell them apart), with a seeded
  bootstrap interval over conversations. An unreadable verdict counts as the judge telling them apart
  (against the simulator, never for it). The burden is on the simulator: it passes only when the interval's
  upper bound is below `TOLERANCE` (0.65); otherwise it is flagged;
* a positive control each run (`control_requests`): the judge must tell a person's turn from a degenerate turn
  and from a turn assembled from a bank of stock sentences, in both orders; a judge that fails it cannot
  judge, and the discrimination says so instead of passing anyone;
* lexical flags (`LEXICAL_LIMITS`), beside the judge: MATTR below 0.8 x the people's, words per turn above
  2 x theirs, distinct lines below 0.9, self-similarity above 2 x theirs + 0.05.

The same measures run on the scripted sets' patient lines (`scripted_measures`).

Intervals: seeded percentile bootstrap, clusters = conversations (simulated) and profiles (human).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

from trustmh.core import JudgeRequest, TrustmhError
from trustmh.data.files import bounded_file
from trustmh.data.rows import RowProblem, RowReport, decoded_lines
from trustmh.judges.parse import extract_judge_object
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.conversation.base import set_path
from trustmh.pillars.conversation.scripts import load_scripts
from trustmh.prompts import render
from trustmh.stats.bootstrap import bootstrap_mean

USER_TURNS = "data/human_user_turns.jsonl"
BASE = "external/mind-eval"  # the registry's folder for the publisher's files
OPTION = "mindeval_dir"
TEMPLATE = "conversation_realism_judge"
REQUEST = "realism"
SCHEMA = json_object_schema(enums={"person": ["A", "B"]})
TOLERANCE = 0.65  # a simulator passes only when the judge's accuracy upper bound is below this
SWAPPED = "realism_swapped"
CONTROLS = ("degenerate", "sentence_bank")
# our own stock sentences: a turn made of them is what a template patient writes
SENTENCE_BANK = ("I have been feeling really down lately.", "It is hard to explain how I feel.",
                 "I just feel overwhelmed by everything.", "I am not sure what to do anymore.",
                 "Things have been difficult for me recently.", "I would appreciate some advice.")
DEGENERATE = "ok ok ok ok ok ok ok ok ok ok ok ok"
LEXICAL_LIMITS = {"mattr_ratio": 0.8, "words_ratio": 2.0, "distinct_lines": 0.9, "self_similarity_ratio": 2.0,
                  "self_similarity_margin": 0.05}
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
        # 13 rows of the real file hold a raw U+2028 in a string: decoded_lines splits on "\n" only
        lines = decoded_lines(bounded_file(path).read_bytes(), path.name, report)
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


def realism_requests(a: str, b: str, name: str = REQUEST) -> list[JudgeRequest]:
    """The pair asked both ways: `name` (A, B as drawn) and `name`_swapped (B, A)."""
    return [realism_request(a, b, name), realism_request(b, a, f"{name}_swapped")]


def control_pairs(item_id: str, human: HumanTurns, seed: int) -> dict[str, tuple[str, str]]:
    """The positive control: (a person's turn, a turn no person writes) per kind in `CONTROLS`."""
    person = human.turns[_draw(f"{seed}:{item_id}:control", len(human.turns))][1]
    bank = " ".join(SENTENCE_BANK[_draw(f"{seed}:{item_id}:bank{k}", len(SENTENCE_BANK))] for k in range(3))
    return {"degenerate": (person, DEGENERATE), "sentence_bank": (person, bank)}


def control_requests(item_id: str, human: HumanTurns, seed: int) -> list[JudgeRequest]:
    return [r for kind, (person, other) in control_pairs(item_id, human, seed).items()
            for r in realism_requests(person, other, f"{REQUEST}_control_{kind}")]


def control_passed(outputs: Mapping[str, str]) -> bool:
    """Every control verdict picks the person (A as asked, B swapped); an unreadable one fails it."""
    return all(parse_pick(outputs.get(f"{REQUEST}_control_{k}")) == "A"
               and parse_pick(outputs.get(f"{REQUEST}_control_{k}_swapped")) == "B" for k in CONTROLS)


def realism_request(a: str, b: str, name: str = REQUEST) -> JudgeRequest:
    return JudgeRequest(name=name, prompt=render(TEMPLATE, a=" ".join(a.split()), b=" ".join(b.split())),
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


def _line(text: str) -> str:
    return " ".join(words(text))


def _trigrams(text: str) -> frozenset[tuple[str, ...]]:
    ws = words(text)
    return frozenset(zip(ws, ws[1:], ws[2:], strict=False))


def cross_measures(turns: Sequence[tuple[str, str]], max_pairs: int = 20_000) -> dict[str, float | None]:
    """`distinct_lines` and `self_similarity` (module docstring) of (cluster, text) turns."""
    if not turns:
        return {"distinct_lines": None, "self_similarity": None}
    lines = [_line(t) for _, t in turns]
    counts: dict[str, int] = {}
    for line in lines:
        counts[line] = counts.get(line, 0) + 1
    grams = [(c, _trigrams(t)) for c, t in turns]
    n = len(grams)
    # Every pair when there are few; else a seeded sample of pairs drawn over all the turns. (The first
    # `max_pairs` pairs in order would compare only the first few turns with the rest: a stock phrase that
    # the later conversations repeat would not be seen.)
    if n * (n - 1) // 2 <= max_pairs:
        pairs = list(combinations(range(n), 2))
    else:
        draw = random.Random(n)  # seeded: the same turns give the same figure
        pairs = [(i, j) for i, j in (draw.sample(range(n), 2) for _ in range(max_pairs))]
    overlaps = [len(grams[i][1] & grams[j][1]) / len(grams[i][1] | grams[j][1]) for i, j in pairs
                if grams[i][0] != grams[j][0] and (grams[i][1] or grams[j][1])]
    return {"distinct_lines": sum(1 for line in lines if counts[line] == 1) / len(lines),
            "self_similarity": sum(overlaps) / len(overlaps) if overlaps else None}


def lexical_flags(entry: Mapping[str, Any], humans: Mapping[str, Any]) -> list[str]:
    """The lexical limits (`LEXICAL_LIMITS`) a simulator's measures break, beside the people's."""
    lim, out = LEXICAL_LIMITS, []
    got, ref = entry["mattr"]["value"], humans["mattr"]["value"]
    if got is not None and ref and got < lim["mattr_ratio"] * ref:
        out.append(f"MATTR {got:.2f} below {lim['mattr_ratio']} x people's {ref:.2f}")
    got, ref = entry["words"]["value"], humans["words"]["value"]
    if got is not None and ref and got > lim["words_ratio"] * ref:
        out.append(f"{got:.0f} words a turn, above {lim['words_ratio']} x people's {ref:.0f}")
    got = entry["distinct_lines"]
    if got is not None and got < lim["distinct_lines"]:
        out.append(f"distinct lines {got:.0%} below {lim['distinct_lines']:.0%}")
    got, ref = entry["self_similarity"], humans["self_similarity"]
    if got is not None and ref is not None and got > lim["self_similarity_ratio"] * ref + lim["self_similarity_margin"]:
        out.append(f"self-similarity {got:.2f} above {lim['self_similarity_ratio']} x people's {ref:.2f} + "
                   f"{lim['self_similarity_margin']}")
    return out


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
    out.update(cross_measures(turns))
    return out


def _hits(conv: Mapping[str, Any]) -> list[float]:
    """Per verdict: 1 when the judge picked the person (or its verdict is unreadable), else 0; both orders."""
    person = conv["person"]
    swapped = {"A": "B", "B": "A"}[person]
    out = [1.0 if conv.get("pick") is None or conv.get("pick") == person else 0.0]
    if "pick_swapped" in conv:
        out.append(1.0 if conv.get("pick_swapped") is None or conv.get("pick_swapped") == swapped else 0.0)
    return out


def realism_summary(conversations: Sequence[Mapping[str, Any]], human: HumanTurns | None, *, seed: int,
                    n_boot: int, why_not: str | None = None, control: bool | None = True) -> dict[str, Any]:
    """`conversations`: per simulated conversation {"id", "patient_model", "patient_texts", "pick",
    "pick_swapped", "person"} (picks: the judge's answers, None when unreadable or not asked). `control`: the
    positive control passed (None: not asked). Per patient model: the measures beside the people's, the
    discrimination accuracy and a warning when a simulator is not shown to be hard to tell from people."""
    if human is None:
        return {"status": "not computed", "why": why_not or f"MindEval's {USER_TURNS} not found (-O {OPTION}=DIR)"}
    humans = group_measures(human.turns, seed=seed, n_boot=n_boot)
    out: dict[str, Any] = {"status": "ok", "source": f"MindEval {USER_TURNS} (read in place)",
                           "n_human_turns": len(human.turns), **human.report.as_json(),
                           "tolerance": TOLERANCE, "positive_control_passed": control, "humans": humans,
                           "by_patient_model": {}, "warnings": []}
    if control is False:
        out["warnings"].append("the realism judge failed the positive control (a degenerate or sentence-bank turn "
                               "against a person's): it cannot judge; no simulator passes on its word")
    by_model: dict[str, list[Mapping[str, Any]]] = {}
    for conv in conversations:
        by_model.setdefault(str(conv.get("patient_model")), []).append(conv)
    for model, convs in sorted(by_model.items()):
        turns = [(str(c["id"]), t) for c in convs for t in c.get("patient_texts") or []]
        entry = group_measures(turns, seed=seed, n_boot=n_boot)
        asked = [c for c in convs if c.get("person") is not None]
        hits = [sum(_hits(c)) / len(_hits(c)) for c in asked]
        entry["discrimination"] = {**_mean(hits, [str(c["id"]) for c in asked], seed, n_boot),
                                   "n_invalid": sum(1 for c in asked if c.get("pick") is None),
                                   "meaning": "share of verdicts (both orders) where the judge picks the person's "
                                              "turn; 0.5 = it cannot tell them apart"}
        entry["lexical_flags"] = lexical_flags(entry, humans)
        for flag in entry["lexical_flags"]:
            out["warnings"].append(f"patient model {model}: {flag}")
        ci = entry["discrimination"].get("ci")
        if not asked:
            entry["discrimination"]["why"] = "no judge verdict (no judge, or no pair could be drawn)"
            entry["judge_verdict"] = "not judged"
        elif control is False:
            entry["judge_verdict"] = "cannot judge"
        elif ci is not None and ci[1] < TOLERANCE:
            entry["judge_verdict"] = "passes"
        else:
            entry["judge_verdict"] = "flagged"
            upper = "no interval" if ci is None else f"upper bound {ci[1]:.0%}"
            out["warnings"].append(f"patient model {model}: a judge tells its turns from people's in "
                                   f"{entry['discrimination']['value']:.0%} of verdicts ({upper}, not below "
                                   f"{TOLERANCE:.0%}): not shown to be hard to tell from people")
        entry["flagged"] = bool(entry["lexical_flags"]) or entry["judge_verdict"] == "flagged"
        out["by_patient_model"][model] = entry
    return out


def scripted_measures(set_names: Sequence[str], human: HumanTurns, *, seed: int, n_boot: int) -> dict[str, Any]:
    """The lexical side of the check on the scripted sets' patient lines (each set as one 'patient model')."""
    convs = []
    for name in set_names:
        with resources.as_file(set_path(name)) as path:
            convs += [{"id": f"{name}:{s.id}", "patient_model": f"scripted set {name}",
                       "patient_texts": [str(t) for t in s.turns]} for s in load_scripts(path)]
    return realism_summary(convs, human, seed=seed, n_boot=n_boot, control=None)
