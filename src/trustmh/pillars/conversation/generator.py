"""Compose a synthetic conversation set from a declared design (docs/conversations.md#sets).

A set is trustmh's own: every line is composed from trustmh-authored building blocks (openings, disclosure
phrasings, pressure moves, personas) by a seeded, deterministic procedure, so regenerating gives the same
file byte for byte. The design is declared, not implied:

* a set has one or more `Stratum`s (for example "risk" and "control"), each a list of factors with their
  levels and the number of conversations to compose;
* every factor's levels are spread evenly over a stratum's conversations (each level used floor or ceil of
  n / levels times), in a seeded order, so the header's design counts are the counts of the file;
* `compose(cell, rng)` turns one design cell (a dict factor -> level) into one conversation (a dict of the
  fields the sub-task's loader reads), drawing its wording from `rng`;
* a conversation identical to one already in the set, or a near-duplicate (`similarity` at or above
  `near_duplicate`), is drawn again with the next random state, up to `MAX_DRAWS` times, then the
  generation fails naming the cell: a design too narrow for its n is an error, not a silent repeat;
* conversations kept from earlier versions of the set (`kept`) come first, unchanged, and are counted apart;
  one that is a duplicate or near-duplicate of an earlier kept one is left out (the header names it).

`generate_set(...)` returns `{"header": {...}, "conversations": [...]}`; `write_set(path, data)` writes it.
Another sub-task builds its set by calling `generate_set` with its own strata and `compose` (see
`trustmh.pillars.conversation.designs` for trustmh's eight sets).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.set_files import read_set_text
from trustmh.storage import write_text_atomic

GENERATOR = "trustmh.pillars.conversation.generator"
# Two conversations are near-duplicates when their word-trigram sets overlap this much (Jaccard: they differ
# in a few words only), or when they test the same thing (same category) and most lines of the shorter are
# lines of the other (LINE_SHARE: a script that only swaps a city or adds a greeting is the same test).
NEAR_DUPLICATE = 0.75
LINE_SHARE = 0.66
MAX_DRAWS = 200
SYNTHETIC_NOTE = ("synthetic: composed by trustmh from its own building blocks; no real person's words, no "
                  "real crisis text, no method or means details")

Compose = Callable[[Mapping[str, Any], random.Random], dict[str, Any]]


@dataclass(frozen=True)
class Stratum:
    """One part of a set's design: `n` conversations over the cross of `factors` (name -> levels)."""

    name: str
    n: int
    factors: tuple[tuple[str, tuple[Any, ...]], ...]
    compose: Compose
    description: str = ""

    @classmethod
    def of(cls, name: str, n: int, factors: Mapping[str, Sequence[Any]], compose: Compose,
           description: str = "") -> Stratum:
        return cls(name, n, tuple((k, tuple(v)) for k, v in factors.items()), compose, description)


_WORDS = re.compile(r"[a-z0-9']+")


def lines_of(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The lines two conversations are compared on: the patient's turns (a profile's field values when it has
    none)."""
    if "turns" in row:
        return tuple(str(t) for t in row["turns"])
    return tuple(json.dumps(row[k], sort_keys=True) for k in sorted(row) if k not in ("id", "design", "origin"))


def patient_text(row: Mapping[str, Any]) -> str:
    return " ".join(lines_of(row))


def category_of(row: Mapping[str, Any]) -> str:
    """What a conversation tests: its category (a profile's hidden risk)."""
    return str(row.get("category", row.get("hidden_risk")))


def line_share(a: Sequence[str], b: Sequence[str]) -> float:
    """Share of the shorter conversation's lines that are also lines of the other."""
    short, other = (a, b) if len(a) <= len(b) else (b, a)
    return sum(1 for line in short if line in set(other)) / max(1, len(short))


@dataclass(frozen=True)
class _Compared:
    id: str
    category: str
    lines: tuple[str, ...]
    trigrams: frozenset[tuple[str, ...]]

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> _Compared:
        return cls(str(row.get("id")), category_of(row), lines_of(row), shingles(patient_text(row)))

    def near(self, other: _Compared, near_duplicate: float, share: float) -> bool:
        return (similarity(self.trigrams, other.trigrams) >= near_duplicate
                or (self.category == other.category and line_share(self.lines, other.lines) >= share))


def shingles(text: str, k: int = 3) -> frozenset[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    if len(words) < k:
        return frozenset({tuple(words)})
    return frozenset(tuple(words[i:i + k]) for i in range(len(words) - k + 1))


def similarity(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """Jaccard similarity of two shingle sets (1.0: the same trigrams)."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def identity(row: Mapping[str, Any]) -> str:
    """What makes two conversations the same: every field but the id, the design cell and the origin."""
    return json.dumps({k: v for k, v in row.items() if k not in ("id", "design", "origin")}, sort_keys=True)


def balanced_cells(stratum: Stratum, rng: random.Random) -> list[dict[str, Any]]:
    """n design cells in which every factor's levels are used evenly (floor/ceil of n / levels), the first
    factor in order and the others in a seeded order."""
    columns: list[list[Any]] = []
    for i, (_, levels) in enumerate(stratum.factors):
        column = [levels[j % len(levels)] for j in range(stratum.n)]
        if i == 0:
            column.sort(key=levels.index)
        else:
            rng.shuffle(column)
        columns.append(column)
    names = [name for name, _ in stratum.factors]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def near_duplicate_report(rows: Sequence[Mapping[str, Any]], near_duplicate: float = NEAR_DUPLICATE,
                          share: float = LINE_SHARE) -> dict[str, Any]:
    """Both measures' highest values over every pair of `rows` (the first such pair in row order), and the
    number of pairs that are near-duplicates (`_Compared.near`; 0 in a set the generator wrote: it never keeps
    or adds one). Every pair's overlap comes from two sparse products (rows × trigrams, rows × lines) in one
    pass instead of a Python loop over pairs: the same figures, 2,000 conversations in about a second, not
    a quarter of a minute (`sets check`'s bound, MAX_SET_CONVERSATIONS)."""
    compared = [_Compared.of(r) for r in rows]
    jaccard, line_shares = _pair_overlaps(compared)
    first, second = np.triu_indices(len(compared), 1)  # every pair once, in the order a loop over rows takes them

    def top(values: np.ndarray) -> tuple[float, list[str] | None]:
        if not values.size or values.max() <= 0:
            return 0.0, None
        k = int(np.argmax(values))  # the first pair holding the highest value
        return float(values[k]), [compared[first[k]].id, compared[second[k]].id]

    top_j, top_s = top(jaccard), top(line_shares)
    flagged = int(np.count_nonzero((jaccard >= near_duplicate) | (line_shares >= share)))
    return {"trigram_jaccard": {"refused_at": near_duplicate, "highest": round(top_j[0], 4), "pair": top_j[1]},
            "same_category_line_share": {"refused_at": share, "highest": round(top_s[0], 4), "pair": top_s[1]},
            "near_duplicate_pairs": flagged}


def _pair_overlaps(compared: Sequence[_Compared]) -> tuple[np.ndarray, np.ndarray]:
    """For every pair i < j (in `np.triu_indices` order): the trigram Jaccard (`similarity`) and, for pairs of
    one category, the line share (`line_share`), else 0; each from integer counts, so equal to the pairwise
    functions' floats. Dense n × n counts: n is bounded by the set reader (MAX_SET_CONVERSATIONS)."""
    n = len(compared)
    trigrams = _incidence([c.trigrams for c in compared], n)
    lines = _incidence([c.lines for c in compared], n)  # counts: a line said twice counts twice, as line_share
    shared_trigrams = (trigrams @ trigrams.T).toarray()
    # lines of row i (with repeats) found among row j's lines
    found = (lines @ (lines > 0).astype(np.int64).T).toarray()
    first, second = np.triu_indices(n, 1)
    sizes = np.array([len(c.trigrams) for c in compared], dtype=np.int64)
    common = shared_trigrams[first, second]
    jaccard = common / (sizes[first] + sizes[second] - common)
    n_lines = np.array([len(c.lines) for c in compared], dtype=np.int64)
    first_shorter = n_lines[first] <= n_lines[second]
    in_other = np.where(first_shorter, found[first, second], found[second, first])
    share = in_other / np.maximum(1, np.where(first_shorter, n_lines[first], n_lines[second]))
    category = {c: k for k, c in enumerate(sorted({c.category for c in compared}))}
    kinds = np.array([category[c.category] for c in compared], dtype=np.int64)
    return jaccard, np.where(kinds[first] == kinds[second], share, 0.0)


def _incidence(features: Sequence[Iterable[Hashable]], n: int) -> Any:
    """Rows × features (a scipy CSR matrix), each entry how often the row holds the feature."""
    from scipy import sparse  # imported here: a run that reads no set's pairs does not pay for it

    vocabulary: dict[Hashable, int] = {}
    rows, columns = [], []
    for i, held in enumerate(features):
        for feature in held:
            rows.append(i)
            columns.append(vocabulary.setdefault(feature, len(vocabulary)))
    return sparse.csr_matrix((np.ones(len(rows), dtype=np.int64), (rows, columns)),
                             shape=(n, max(1, len(vocabulary))))


def generate_set(name: str, *, description: str, strata: Sequence[Stratum], seed: int, id_prefix: str,
                 kept: Sequence[Mapping[str, Any]] = (), near_duplicate: float = NEAR_DUPLICATE,
                 share: float = LINE_SHARE, control: Callable[[Mapping[str, Any]], bool] | None = None,
                 notes: Sequence[str] = ()) -> dict[str, Any]:
    """A whole set: `kept` rows first, then each stratum's composed rows (see the module docstring).

    `control(row)` says whether a row is a no-risk control (counted in the header). A composed row that is a
    near-duplicate of any row before it (`_Compared.near`) is drawn again. Raises TrustmhError when a cell
    cannot be filled without a duplicate."""
    rng = random.Random(f"{name}:{seed}")
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    compared: list[_Compared] = []
    dropped: list[str] = []
    for r in kept:  # a kept conversation that repeats an earlier one (the first generator's) is left out
        this = _Compared.of(r)
        if identity(r) in seen or any(this.near(c, near_duplicate, share) for c in compared):
            dropped.append(str(r.get("id")))
            continue
        rows.append({**dict(r), "origin": "kept"})
        seen.add(identity(r))
        compared.append(this)
    number = 0
    for stratum in strata:
        for cell in balanced_cells(stratum, rng):
            for _ in range(MAX_DRAWS):
                draw = random.Random(rng.getrandbits(64))
                row = stratum.compose(cell, draw)
                this = _Compared.of(row)
                if identity(row) in seen or any(this.near(c, near_duplicate, share) for c in compared):
                    continue
                break
            else:
                raise TrustmhError(f"{name}: cannot compose a conversation for {stratum.name} {cell} that is not a "
                                   f"duplicate or near-duplicate after {MAX_DRAWS} draws; add building blocks or "
                                   "lower n")
            row = {"id": f"{id_prefix}-g{number:03d}", **row, "design": {"stratum": stratum.name, **cell},
                   "origin": "generated"}
            number += 1
            seen.add(identity(row))
            compared.append(this)
            rows.append(row)
    report = near_duplicate_report(rows, near_duplicate, share)
    report["kept_left_out"] = dropped
    return {"header": header(name, description, strata, seed, rows, report, control, notes), "conversations": rows}


def header(name: str, description: str, strata: Sequence[Stratum], seed: int, rows: Sequence[Mapping[str, Any]],
           near_duplicates: Mapping[str, Any], control: Callable[[Mapping[str, Any]], bool] | None, notes: Sequence[str]) -> dict[str, Any]:
    generated = [r for r in rows if r["origin"] == "generated"]
    counts: dict[str, Any] = {"total": len(rows), "kept": len(rows) - len(generated), "generated": len(generated)}
    if control is not None:
        counts["controls"] = sum(1 for r in rows if control(r))
        counts["risk"] = len(rows) - counts["controls"]
    counts["by_stratum"] = dict(Counter(r["design"]["stratum"] for r in generated))
    counts["by_factor"] = {
        s.name: {factor: {str(level): sum(1 for r in generated if r["design"]["stratum"] == s.name
                                          and r["design"][factor] == level) for level in levels}
                 for factor, levels in s.factors}
        for s in strata}
    if "category" in (rows[0] if rows else {}):
        counts["by_category"] = dict(sorted(Counter(str(r.get("category")) for r in rows).items()))
    return {
        "set": name, "description": description, "synthetic": True, "note": SYNTHETIC_NOTE,
        "generator": GENERATOR, "seed": seed,
        "design": [{"stratum": s.name, "n": s.n, "description": s.description,
                    "factors": {factor: list(levels) for factor, levels in s.factors}} for s in strata],
        "counts": counts,
        "near_duplicates": {"measures": "Jaccard similarity of the word-trigram sets of the patient's lines; "
                                        "share of the shorter conversation's lines found in the other (same "
                                        "category only)", **near_duplicates},
        "notes": list(notes),
    }


def write_set(path: Path, data: Mapping[str, Any]) -> None:
    """The set as the shipped JSON (one conversation per line block, stable order)."""
    write_text_atomic(Path(path), json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def read_set(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """(header, conversations) of a set file: `{"header": ..., "conversations": [...]}`, or a bare list (a
    user's own set, no header). One TrustmhError line naming the file on anything else."""
    try:
        data = json.loads(read_set_text(Path(path)))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: cannot read conversation set ({exc}); check the file") from None
    if isinstance(data, list):
        return {}, data
    if isinstance(data, dict) and isinstance(data.get("conversations"), list):
        head = data.get("header")
        return (head if isinstance(head, dict) else {}), data["conversations"]
    raise TrustmhError(f"{path}: expected a JSON list of conversations or an object with 'header' and "
                       "'conversations'")
