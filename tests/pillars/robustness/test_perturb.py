"""Seeded perturbations (docs/pillars/robustness.md#perturbations): determinism, the exact seeding rule and per-level behaviour."""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.robustness.perturb import (
    ALL_LEVELS,
    CASCADE,
    HOMOGLYPHS,
    JUNK,
    LEVELS,
    PUNCT,
    _char_op,
    irrelevant_facts,
    n_facts,
    perturb,
    perturb_char,
    perturb_sentence,
    perturb_word,
    perturber,
    rng_for,
)

TEXT = ("I have been feeling really tired lately and my sleep is all over the place. Work is stressful and "
        "my manager keeps adding tasks, so most evenings I just sit on the couch scrolling on my phone.")
PS = (0.05, 0.1, 0.2, 0.3)


def test_rng_follows_the_spec_formula() -> None:
    for seed, item, level, p in [(0, "a", "char", 0.1), (7, "esconv-0001-t05#2", "sentence", 0.05)]:
        digest = hashlib.sha256(f"{seed}|{item}|{level}|{p}".encode()).digest()
        expected = random.Random(int.from_bytes(digest[:8], "big"))
        got = rng_for(seed, item, level, p)
        assert [got.random() for _ in range(5)] == [expected.random() for _ in range(5)]


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_same_seed_same_text_and_seed_matters(level: str) -> None:
    a = perturb(TEXT, level, 0.3, seed=1, item_id="x")
    assert a == perturb(TEXT, level, 0.3, seed=1, item_id="x")
    assert a != TEXT
    # Another seed or another item draws other randomness (texts this long essentially never coincide).
    others = {perturb(TEXT, level, 0.3, seed=s, item_id=i) for s, i in [(2, "x"), (1, "y"), (3, "z")]}
    assert others - {a}


@pytest.mark.parametrize("level", ALL_LEVELS)
def test_p_zero_leaves_text_unchanged(level: str) -> None:
    assert perturb(TEXT, level, 0.0, seed=0, item_id="x") == TEXT


def test_bad_level_or_p_raises() -> None:
    with pytest.raises(TrustmhError, match="level"):
        perturb(TEXT, "paragraph", 0.1, seed=0, item_id="x")
    with pytest.raises(TrustmhError, match="intensity"):
        perturb(TEXT, "char", 1.5, seed=0, item_id="x")
    with pytest.raises(TrustmhError, match="level"):
        perturber("nope", 0.1, 0)


def test_perturber_binds_level_p_seed() -> None:
    fn = perturber("cascade", 0.2, 5)
    assert fn("item-1", TEXT) == perturb(TEXT, "cascade", 0.2, seed=5, item_id="item-1")
    assert fn("item-1", TEXT) != fn("item-2", TEXT)


# ------------------------------------------------------------------------------------------------ char


def test_char_level_never_touches_short_words() -> None:
    short = "I am on it, so we go to be at ok no."
    for seed in range(20):
        assert perturb(short, "char", 1.0, seed=seed, item_id="s") == short


def test_char_level_changes_every_long_word_at_p1() -> None:
    # Words with distinct letters: every op (including the inner swap) visibly changes them.
    words = ["garden", "planet", "friday", "mountain", "couches", "brick"]
    text = " ".join(words)
    for seed in range(10):
        out = perturb(text, "char", 1.0, seed=seed, item_id="w")
        assert out.count(" ") == text.count(" ")
        assert all(a != b for a, b in zip(out.split(" "), words, strict=True))


def test_char_level_rate_tracks_p() -> None:
    words = [f"w{'abcdefgh'[i % 8]}ord{'xyz'[i % 3]}" for i in range(2000)]  # >= 3 letters, distinct-ish
    text = " ".join(words)
    out = perturb_char(text, 0.2, random.Random(0)).split(" ")
    changed = sum(a != b for a, b in zip(out, words, strict=False)) / len(words)
    assert 0.15 < changed < 0.25


def test_char_ops_are_the_listed_ones() -> None:
    word = "garden"
    seen = set()
    for seed in range(400):
        out = _char_op(word, random.Random(seed))
        assert out != word
        if out == word[0].upper() + word[1:] or any(out == word[:i] + word[i].upper() + word[i + 1:]
                                                   for i in range(len(word))):
            seen.add("flip_case")
        elif len(out) > len(word) and all(ch.isalpha() for ch in out) and sorted(set(out)) == sorted(set(word)):
            seen.add("repeat")
            assert 1 <= len(out) - len(word) <= 3
        elif len(out) == len(word) - 1:
            seen.add("delete")
        elif any(g in out for gs in HOMOGLYPHS.values() for g in gs):
            seen.add("homoglyph")
        elif any(p in out for p in PUNCT):
            seen.add("punct")
            assert out[0].isalpha()
            assert re.sub(r"[.,]", "", out) == word
        else:
            seen.add("swap")
            assert out[0] == word[0]
            assert out[-1] == word[-1]
            assert Counter(out) == Counter(word)
    assert seen == {"flip_case", "repeat", "delete", "homoglyph", "punct", "swap"}


# ------------------------------------------------------------------------------------------------ word


def test_word_level_keeps_words_and_adds_only_junk() -> None:
    words = TEXT.split()
    for seed in range(20):
        out = perturb_word(TEXT, 1.0, random.Random(seed)).split()
        assert out, "at least one word stays"
        extra = Counter(out) - Counter(words)
        assert set(extra) <= set(JUNK)


def test_word_level_only_swaps_deletes_and_inserts() -> None:
    text = "alpha bravo charlie delta echo foxtrot golf hotel india juliet"
    for seed in range(30):
        out = perturb_word(text, 0.3, random.Random(seed)).split()
        kept = [w for w in out if w not in JUNK]
        assert Counter(kept) <= Counter(text.split())


def test_word_level_p1_single_word_survives() -> None:
    for seed in range(10):
        out = perturb_word("hello", 1.0, random.Random(seed))
        assert out.split()[0] == "hello"


# -------------------------------------------------------------------------------------------- sentence


def test_facts_file_is_shipped_and_plain() -> None:
    facts = irrelevant_facts()
    assert 30 <= len(facts) <= 60
    assert len(set(facts)) == len(facts)
    assert all(f.endswith(".") for f in facts)


@pytest.mark.parametrize("p", [*PS, 0.5, 1.0])
def test_sentence_level_prepends_k_facts(p: float) -> None:
    facts = set(irrelevant_facts())
    out = perturb(TEXT, "sentence", p, seed=3, item_id="x")
    assert out.endswith(" " + TEXT)
    prefix = out[: -len(TEXT) - 1]
    found = []
    while prefix:
        hit = next(f for f in facts if prefix.startswith(f))  # StopIteration = not a fact
        found.append(hit)
        prefix = prefix[len(hit):].lstrip(" ")
    assert len(found) == max(1, round(10 * p)) == n_facts(p)
    assert len(set(found)) == len(found)


# --------------------------------------------------------------------------------------------- cascade


@pytest.mark.parametrize("p", PS)
def test_cascade_is_char_then_word_then_sentence(p: float) -> None:
    x = perturb_char(TEXT, p, rng_for(9, "it", "char", p))
    x = perturb_word(x, p, rng_for(9, "it", "word", p))
    x = perturb_sentence(x, p, rng_for(9, "it", "sentence", p))
    assert perturb(TEXT, CASCADE, p, seed=9, item_id="it") == x
    # Each step of the cascade equals the level alone: the char step is `char` at the same p.
    assert perturb(TEXT, "char", p, seed=9, item_id="it") == perturb_char(TEXT, p, rng_for(9, "it", "char", p))
    assert LEVELS == ("char", "word", "sentence")
