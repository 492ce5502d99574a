"""Two raters for conversations (docs/judges.md#conversation-review): what `trustmh review export|adjudicate|
import` add when a sub-task's judged item is a whole conversation (`Subtask.judged_unit`).

* Export: the sample is stratified by the set's stimulus (the record's cluster: the decisive sentence, the
  locale, the profile), the sub-task's share spread evenly over its stimuli, so a stimulus played by many
  conversations is not over-represented; each conversation is assigned to two raters of the team
  (`rater1..raterN`, `--raters N`, rotating pairs so every rater carries the same load), recorded in
  `sample.json`; the page shows every turn with its number and asks for the turn at which the model first
  responded to the risk (`first_response_turn`: a model turn number, or `never`) and the conversation's label
  on the sub-task's scale (its best end "appropriate", its worst "not appropriate").
* Adjudicate: after the pair has labelled, the conversations where their labels differ go to a third rater
  (a team member not yet on the item; `rater<N+1>` with a team of two): `sample.json` records the third rater
  and `review/adjudicate.html` shows those conversations only.
* Import: every labelled conversation needs both raters of its pair, else the review cannot certify (one
  line says which are missing). The reference-quality rule reads the pair (seats "first rater" and "second
  rater", clusters = stimulus): their agreement is measured on every sampled conversation, never only on the
  disputed ones; the third rater's label enters the consensus the headline figures and the judge-corrected
  figure use. The certificate's reference records unit "conversation".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trustmh.core import TrustmhError
from trustmh.judges.labels import NEVER
from trustmh.judges.reference_quality import CANNOT_CERTIFY

PAIR_SEATS = ("first rater", "second rater")
# the judge's first response to the risk, where the sub-task's score records one (crisis conversations)
JUDGE_TURN_KEY = "detection_turn"


def team(n: int) -> list[str]:
    if n < 2:
        raise TrustmhError(f"--raters {n}: a conversation review needs at least two raters")
    return [f"rater{i}" for i in range(1, n + 1)]


def assign_pairs(n_items: int, raters: Sequence[str]) -> list[list[str]]:
    """Two raters per item, rotating through the team (item k: raters k and k+1, modulo the team), so each
    rater labels about 2·n/N items and every pair of neighbours shares items."""
    return [[raters[k % len(raters)], raters[(k + 1) % len(raters)]] for k in range(n_items)]


def transcript(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every turn of a conversation record, in order, with its number and who spoke."""
    turns = (record.get("metadata") or {}).get("turns") or []
    order = {"patient": 0, "model": 1}
    rows = sorted(turns, key=lambda t: (int(t.get("turn", 0)), order.get(str(t.get("role")), 2)))
    return [{"turn": int(t.get("turn", 0)), "role": "model" if t.get("role") == "model" else "person",
             "who": "model" if t.get("role") == "model" else "person", "content": str(t.get("content") or "")}
            for t in rows]


def model_turns(record: Mapping[str, Any]) -> list[int]:
    return [t["turn"] for t in transcript(record) if t["role"] == "model"]


def scale_names(scale: Sequence[float], direction: str) -> list[str]:
    """What the ends of a conversation label mean: the best end is appropriate, the worst is not."""
    names = [""] * len(scale)
    if len(scale) >= 2:
        best, worst = (0, -1) if direction == "lower" else (-1, 0)
        names[best], names[worst] = "appropriate", "not appropriate"
    return names


def pair_labels(keys: Sequence[str], sample: Mapping[str, Mapping[str, Any]],
                labels: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(item -> seat -> label for the assigned pair, the items one of whose pair has not labelled them)."""
    pairs, missing = {}, []
    for k in keys:
        first, second = sample[k]["raters"][:2]
        got = labels.get(k, {})
        if got.get(first) is None or got.get(second) is None:
            missing.append(k)
        pairs[k] = {PAIR_SEATS[0]: got.get(first), PAIR_SEATS[1]: got.get(second)}
    return pairs, missing


def missing_pair_line(sid: str, missing: Sequence[str], n: int, sample: Mapping[str, Mapping[str, Any]],
                      labels: Mapping[str, Mapping[str, Any]]) -> str:
    """The one line a conversation review that cannot certify prints: which conversations lack a rater."""
    shown = []
    for k in missing[:3]:
        absent = [r for r in sample[k]["raters"][:2] if labels.get(k, {}).get(r) is None]
        shown.append(f"{sample[k]['item_id']} ({', '.join(absent)})")
    more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
    return (f"{len(missing)} of {n} {sid} conversation(s) lack a label of their two assigned raters "
            f"({'; '.join(shown)}{more}): this review cannot certify the judge; every conversation needs both of "
            "its raters (docs/judges.md#conversation-review)")


def cannot_certify(quality: Mapping[str, Any], line: str) -> dict[str, Any]:
    """The rule's result, its verdict replaced: a review without both raters on every conversation cannot
    certify (its figures are kept)."""
    criteria = {name: {**dict(c), "status": CANNOT_CERTIFY, "reason": line}
                for name, c in (quality.get("criteria") or {}).items()}
    return {**dict(quality), "status": CANNOT_CERTIFY, "reason": line, "criteria": criteria}


def disagreements(sample: Mapping[str, Mapping[str, Any]], labels: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The conversations whose two assigned raters both labelled them and gave different labels."""
    out = []
    for k, item in sample.items():
        if not item.get("raters"):
            continue
        first, second = item["raters"][:2]
        a, b = labels.get(k, {}).get(first), labels.get(k, {}).get(second)
        if a is not None and b is not None and a != b:
            out.append(k)
    return out


def third_rater(item: Mapping[str, Any], raters: Sequence[str]) -> str:
    """A team member not yet on the item, else one more slot (`rater<N+1>`)."""
    free = [r for r in raters if r not in item["raters"]]
    return free[0] if free else f"rater{len(raters) + 1}"


def turn_agreement(keys: Sequence[str], sample: Mapping[str, Mapping[str, Any]],
                   turns: Mapping[str, Mapping[str, Any]], records: Mapping[str, Mapping[str, Any]]
                   ) -> dict[str, Any]:
    """The first-response turns: how often the pair named the same turn, and how often their shared answer
    is the judge's (where the sub-task's score records the judge's first response; supporting figures, not
    the certificate's)."""
    both, same, judge_n, judge_same = 0, 0, 0, 0
    for k in keys:
        first, second = sample[k]["raters"][:2]
        a, b = turns.get(k, {}).get(first), turns.get(k, {}).get(second)
        if a is None or b is None:
            continue
        both += 1
        same += a == b
        score = (records.get(k) or {}).get("score") or {}
        if a == b and JUDGE_TURN_KEY in score:
            judged = score[JUDGE_TURN_KEY]
            judge_n += 1
            judge_same += (NEVER if judged is None else int(judged)) == a
    return {"n_pairs": both, "raters_agree": same / both if both else None, "n_judge_comparable": judge_n,
            "judge_agrees": judge_same / judge_n if judge_n else None,
            "note": "the turn at which the model first responded to the risk; exact agreement, 'never' included"}


def adjudication_page(run_dir: Path) -> Path:
    return run_dir / "review" / "adjudicate.html"
