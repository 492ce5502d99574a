"""The conversation sets are generated from their declared designs: regenerating gives the committed files byte
for byte; each holds at least 100 conversations, as many as its header counts, no duplicate or near-duplicate,
controls where a false-alarm rate is reported, and exactly the fields its sub-task's loader reads."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.designs import DESIGNS, SETS_DIR, write_all
from trustmh.pillars.conversation.generator import (
    Stratum,
    balanced_cells,
    generate_set,
    identity,
    near_duplicate_report,
    read_set,
)
from trustmh.pillars.conversation.probes import _rows
from trustmh.pillars.conversation.profiles import patient_brief
from trustmh.pillars.conversation.scripts import SETS as SCRIPTED
from trustmh.pillars.conversation.scripts import load_scripts

NAMES = [d.name for d in DESIGNS]
WITH_CONTROLS = ("gradual_disclosure", "simulated_patient", "minors", "harm_to_others")


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sets")
    write_all(out)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_regenerating_gives_the_committed_file(name: str, regenerated: Path) -> None:
    assert (regenerated / f"{name}.json").read_bytes() == (SETS_DIR / f"{name}.json").read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_set_holds_at_least_100_conversations_as_its_header_counts(name: str) -> None:
    header, rows = read_set(SETS_DIR / f"{name}.json")
    assert len(rows) >= 100
    assert header["counts"]["total"] == len(rows)
    assert header["counts"]["generated"] == sum(1 for r in rows if r["origin"] == "generated")
    # the strata of the composed or authored conversations (kept ones predate any design)
    assert header["counts"]["by_stratum"] == dict(Counter(r["design"]["stratum"] for r in rows
                                                          if r["origin"] in ("generated", "authored")))


@pytest.mark.parametrize("name", NAMES)
def test_set_has_no_duplicate_nor_near_duplicate(name: str) -> None:
    _, rows = read_set(SETS_DIR / f"{name}.json")
    assert len({r["id"] for r in rows}) == len(rows)
    assert len({identity(r) for r in rows}) == len(rows)
    assert near_duplicate_report(rows)["near_duplicate_pairs"] == 0


@pytest.mark.parametrize("name", WITH_CONTROLS)
def test_sets_reporting_a_false_alarm_or_risk_rate_carry_controls(name: str) -> None:
    header, rows = read_set(SETS_DIR / f"{name}.json")
    controls = [r for r in rows if r.get("risk_turn") is None and not r.get("hidden_risk")]
    assert header["counts"]["controls"] == len(controls) >= 30


def test_gradual_disclosure_has_100_risk_conversations() -> None:
    """The missed-crisis rate is over the risk conversations only: they alone size its interval."""
    scripts = load_scripts(SETS_DIR / "gradual_disclosure.json")
    assert sum(1 for s in scripts if s.risk_turn is not None) >= 100


@pytest.mark.parametrize("name", SCRIPTED)
def test_every_script_loads_with_its_risk_turn_on_a_turn(name: str) -> None:
    scripts = load_scripts(SETS_DIR / f"{name}.json")
    assert all(s.risk_turn is None or 0 <= s.risk_turn < len(s.turns) for s in scripts)


@pytest.mark.parametrize("name", ("ai_disclosure", "credentials", "minors", "crisis_referral"))
def test_every_probe_loads_with_a_probe_turn(name: str) -> None:
    rows = _rows(name, read_set(SETS_DIR / f"{name}.json")[1])
    # a clock conversation asks nothing: its checked turns are the three-hour marks of its clock
    assert all(r["probe_turns"] or r.get("clock") for r in rows)


def test_crisis_referral_probes_from_the_disclosure_on() -> None:
    rows = read_set(SETS_DIR / "crisis_referral.json")[1]
    assert all(r["risk_turn"] is not None and min(r["probe_turns"]) >= r["risk_turn"] for r in rows)


def test_every_profile_renders_and_reveals_within_the_default_turns() -> None:
    rows = read_set(SETS_DIR / "simulated_patient.json")[1]
    assert all(patient_brief(r, 0) for r in rows)
    assert all(r["reveal_turn"] < 10 for r in rows if r["hidden_risk"])


def _compose(cell: dict, rng: random.Random) -> dict:
    return {"category": cell["kind"], "turns": [f"line {rng.randrange(10_000)} about {cell['kind']}",
                                                f"another {rng.randrange(10_000)} {cell['size']}"]}


def test_levels_are_spread_evenly() -> None:
    cells = balanced_cells(Stratum.of("s", 10, {"kind": ("a", "b"), "size": (1, 2, 3)}, _compose),
                           random.Random(1))
    assert Counter(c["size"] for c in cells) == {1: 4, 2: 3, 3: 3}


def test_same_seed_same_set_and_header_counts_the_design() -> None:
    strata = [Stratum.of("s", 12, {"kind": ("a", "b"), "size": (1, 2, 3)}, _compose)]
    one = generate_set("toy", description="d", strata=strata, seed=3, id_prefix="t")
    assert one == generate_set("toy", description="d", strata=strata, seed=3, id_prefix="t")
    assert one["header"]["counts"]["by_factor"]["s"]["kind"] == {"a": 6, "b": 6}


def test_a_design_too_narrow_for_its_n_is_an_error() -> None:
    def same(cell: dict, rng: random.Random) -> dict:
        return {"category": "a", "turns": ["the only line there is"]}

    with pytest.raises(TrustmhError, match="cannot compose a conversation"):
        generate_set("toy", description="d", strata=[Stratum.of("s", 2, {"kind": ("a",)}, same)], seed=1,
                     id_prefix="t")


def test_a_kept_near_duplicate_is_left_out_and_named() -> None:
    kept = [{"id": "k1", "category": "a", "turns": ["hello there", "I am sad", "ok"]},
            {"id": "k2", "category": "a", "turns": ["hello there", "I am sad", "fine"]}]
    data = generate_set("toy", description="d", strata=[], seed=1, id_prefix="t", kept=kept)
    assert [r["id"] for r in data["conversations"]] == ["k1"]
    assert data["header"]["near_duplicates"]["kept_left_out"] == ["k2"]
