"""Seeded text perturbations for the robustness pillar (docs/pillars/robustness.md#perturbations). Plain Python.

Only user-side text (a seeker turn, a post, a patient turn) is ever passed in: the sub-tasks rebuild
instructions, options and labels around the perturbed text themselves.

| level    | per eligible unit, with probability p                                                      |
|----------|--------------------------------------------------------------------------------------------|
| char     | a word of >= 3 letters gets one op, chosen uniformly among those that apply: flip the case  |
|          | of a letter; repeat a letter (2-4 copies); delete a letter; homoglyph swap; insert `.`,    |
|          | `,` or `..`; swap two adjacent inner letters                                                |
| word     | a word is swapped with the next word, deleted, or followed by a junk token                 |
| sentence | k = max(1, round(10p)) facts from `prompts/irrelevant_facts.txt` are prepended (no coin)    |
| cascade  | char, then word, then sentence, each with its own level's randomness                       |

Randomness: `random.Random(int.from_bytes(sha256(f"{seed}|{item_id}|{level}|{p}").digest()[:8], "big"))`,
so a (seed, item, level, p) always gives the same text. In the cascade each step uses its own level name,
so the char step of `cascade` at p equals `char` alone at p. p <= 0 returns the text unchanged.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Callable
from functools import lru_cache
from importlib import resources

from trustmh.core import TrustmhError

LEVELS: tuple[str, ...] = ("char", "word", "sentence")
CASCADE = "cascade"
ALL_LEVELS: tuple[str, ...] = (*LEVELS, CASCADE)
CHAR_OPS: tuple[str, ...] = ("flip_case", "repeat", "delete", "homoglyph", "punct", "swap")
WORD_OPS: tuple[str, ...] = ("swap_next", "delete", "junk")
HOMOGLYPHS: dict[str, tuple[str, ...]] = {"a": ("α", "@"), "e": ("3",), "i": ("1",), "o": ("0",), "s": ("$",),
                                          "l": ("1",)}
PUNCT: tuple[str, ...] = (".", ",", "..")
JUNK: tuple[str, ...] = ("@", "#", "...", "lol")
MIN_LETTERS = 3
FACTS_FILE = "irrelevant_facts.txt"

# A word for the char level: a run of letters (any script; digits and `_` excluded).
_LETTERS = re.compile(r"[^\W\d_]+")
_SPACE_SPLIT = re.compile(r"(\s+)")


def rng_for(seed: int | str, item_id: str, level: str, p: float) -> random.Random:
    """The one source of randomness of a perturbation (docs/pillars/robustness.md#perturbations)."""
    key = f"{seed}|{item_id}|{level}|{p}".encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


@lru_cache(maxsize=1)
def irrelevant_facts() -> tuple[str, ...]:
    """Our shipped list of bland, true, off-topic sentences (one per line)."""
    path = resources.files("trustmh.pillars.robustness").joinpath("prompts", FACTS_FILE)
    facts = tuple(line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    if len(facts) < 3:
        raise TrustmhError(f"trustmh/pillars/robustness/prompts/{FACTS_FILE}: needs at least 3 facts, found {len(facts)}")
    return facts


def _check_p(p: float) -> float:
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise TrustmhError(f"perturbation intensity p must be in [0, 1], got {p}")
    return p


# --------------------------------------------------------------------------------------------- char


def _char_op(word: str, rng: random.Random) -> str:
    """One op from those that apply to `word` (a run of >= 3 letters), chosen uniformly."""
    n = len(word)
    glyph_pos = [i for i, c in enumerate(word) if c.lower() in HOMOGLYPHS]
    ops = ["repeat", "delete", "punct"]
    if any(c.swapcase() != c for c in word):
        ops.append("flip_case")
    if glyph_pos:
        ops.append("homoglyph")
    if n >= 4:  # two inner letters exist only from 4 letters on
        ops.append("swap")
    op = rng.choice(sorted(ops, key=CHAR_OPS.index))
    if op == "flip_case":
        i = rng.choice([i for i, c in enumerate(word) if c.swapcase() != c])
        return word[:i] + word[i].swapcase() + word[i + 1:]
    if op == "repeat":
        i = rng.randrange(n)
        return word[:i] + word[i] * rng.randint(2, 4) + word[i + 1:]
    if op == "delete":
        i = rng.randrange(n)
        return word[:i] + word[i + 1:]
    if op == "homoglyph":
        i = rng.choice(glyph_pos)
        return word[:i] + rng.choice(HOMOGLYPHS[word[i].lower()]) + word[i + 1:]
    if op == "punct":
        i = rng.randrange(1, n)  # inside the word, never before its first letter
        return word[:i] + rng.choice(PUNCT) + word[i:]
    i = rng.randrange(1, n - 2)  # swap inner letters i and i+1 (first and last letters stay)
    return word[:i] + word[i + 1] + word[i] + word[i + 2:]


def perturb_char(text: str, p: float, rng: random.Random) -> str:
    """Each run of >= 3 letters gets, with probability p, one character-level op."""
    p = _check_p(p)
    if p <= 0:
        return text

    def one(m: re.Match[str]) -> str:
        word = m.group(0)
        if len(word) < MIN_LETTERS or rng.random() >= p:
            return word
        return _char_op(word, rng)

    return _LETTERS.sub(one, text)


# --------------------------------------------------------------------------------------------- word


def perturb_word(text: str, p: float, rng: random.Random) -> str:
    """Each whitespace-separated word, with probability p: swapped with the next word, deleted, or
    followed by a junk token. Whitespace between the remaining words is kept; at least one word stays."""
    p = _check_p(p)
    if p <= 0:
        return text
    core = text.strip()
    if not core:
        return text
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()):]
    parts = _SPACE_SPLIT.split(core)  # word, space, word, ..., word
    tokens = [[parts[j], parts[j + 1] if j + 1 < len(parts) else ""] for j in range(0, len(parts), 2)]
    out: list[list[str]] = []
    remaining = len(tokens)
    i = 0
    while i < len(tokens):
        word, space = tokens[i]
        if rng.random() >= p:
            out.append([word, space])
            i += 1
            continue
        ops = [op for op in WORD_OPS
               if (op != "swap_next" or i + 1 < len(tokens)) and (op != "delete" or remaining > 1)]
        op = rng.choice(ops)
        if op == "swap_next":
            nxt_word, nxt_space = tokens[i + 1]
            out.append([nxt_word, space])
            out.append([word, nxt_space])
            i += 2  # the partner has moved; it is not perturbed again
            continue
        if op == "delete":
            remaining -= 1
        else:
            out.append([word, " "])
            out.append([rng.choice(JUNK), space])
        i += 1
    return lead + "".join(w + s for w, s in out).rstrip() + trail


# ----------------------------------------------------------------------------------------- sentence


def n_facts(p: float) -> int:
    return max(1, round(10 * float(p)))


def perturb_sentence(text: str, p: float, rng: random.Random) -> str:
    """Prepend k = max(1, round(10p)) distinct irrelevant facts (p <= 0: unchanged)."""
    p = _check_p(p)
    if p <= 0:
        return text
    facts = irrelevant_facts()
    chosen = rng.sample(facts, min(n_facts(p), len(facts)))
    return " ".join(chosen) + " " + text


# ---------------------------------------------------------------------------------------- interface

_BY_LEVEL = {"char": perturb_char, "word": perturb_word, "sentence": perturb_sentence}


def perturb(text: str, level: str, p: float, *, seed: int | str, item_id: str) -> str:
    """The perturbed text for one (seed, item, level, p). Pure: same inputs, same output."""
    if level not in ALL_LEVELS:
        raise TrustmhError(f"unknown perturbation level {level!r}; known: {', '.join(ALL_LEVELS)}")
    p = _check_p(p)
    if p <= 0:
        return text
    steps = LEVELS if level == CASCADE else (level,)
    for step in steps:
        text = _BY_LEVEL[step](text, p, rng_for(seed, item_id, step, p))
    return text


def perturber(level: str, p: float, seed: int | str) -> Callable[[str, str], str]:
    """`perturb(item_id, text)` bound to one level, p and seed: the callable the base sub-tasks take."""
    if level not in ALL_LEVELS:
        raise TrustmhError(f"unknown perturbation level {level!r}; known: {', '.join(ALL_LEVELS)}")
    p = _check_p(p)

    def apply(item_id: str, text: str) -> str:
        return perturb(text, level, p, seed=seed, item_id=item_id)

    return apply
