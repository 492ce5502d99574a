"""The conversation sets are generated from their declared designs (the registry `designs.DESIGNS`):
regenerating gives the committed files byte for byte; each holds at least 100 conversations, as many as its
header counts, no duplicate or near-duplicate, controls where a false-alarm rate is reported, is played by a
sub-task that loads it through its own reader, and has its row in the docs. A design added to the registry is picked up by all of it."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from trustmh.catalogue import catalogue
from trustmh.core import RunContext, TrustmhError
from trustmh.pillars.conversation import designs
from trustmh.pillars.conversation.base import ConversationBase, ScriptedBase
from trustmh.pillars.conversation.designs import DESIGNS, SETS_DIR, SetDesign, write_all
from trustmh.pillars.conversation.generator import (
    Stratum,
    balanced_cells,
    generate_set,
    identity,
    near_duplicate_report,
    read_set,
)
from trustmh.pillars.conversation.probes import ProbeConversation, _rows
from trustmh.pillars.conversation.profiles import patient_brief
from trustmh.pillars.conversation.scripts import load_scripts

NAMES = [d.name for d in DESIGNS]
WITH_CONTROLS = [d.name for d in DESIGNS if d.control is not None]
PLAYERS = [s for s in catalogue().subtasks if issubclass(s, ConversationBase) and s.set_name]
SCRIPTED = [s.set_name for s in PLAYERS if issubclass(s, ScriptedBase)]
PROBES = [s.set_name for s in PLAYERS if issubclass(s, ProbeConversation)]


def size_faults(header: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """How a set falls short of its header or of the 100 conversations a gate check needs."""
    faults = [] if len(rows) >= 100 else [f"{len(rows)} conversations, fewer than 100"]
    counts = header["counts"]
    generated = [r for r in rows if r["origin"] == "generated"]
    if counts["total"] != len(rows) or counts["generated"] != len(generated):
        faults.append("the header's total or generated count is not the set's")
    # the strata of the composed or authored conversations (kept ones predate any design)
    designed = [r for r in rows if r["origin"] in ("generated", "authored")]
    if counts["by_stratum"] != dict(Counter(r["design"]["stratum"] for r in designed)):
        faults.append("the header's counts by stratum are not the set's")
    return faults


def duplicate_faults(rows: list[dict[str, Any]]) -> list[str]:
    faults = [] if len({r["id"] for r in rows}) == len(rows) else ["an id repeats"]
    faults += [] if len({identity(r) for r in rows}) == len(rows) else ["a conversation repeats"]
    return faults + ([] if near_duplicate_report(rows)["near_duplicate_pairs"] == 0 else ["near-duplicates"])


def control_faults(header: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    controls = [r for r in rows if r.get("risk_turn") is None and not r.get("hidden_risk")]
    return [] if header["counts"]["controls"] == len(controls) >= 30 else ["fewer than 30 controls, or miscounted"]


def player_faults(name: str) -> list[str]:
    """A set nobody plays is dead weight: some catalogue sub-task must declare it as its `set_name` and load
    every one of its conversations through its own reader."""
    players = [s for s in PLAYERS if s.set_name == name]
    if not players:
        return [f"no sub-task declares set_name = {name!r}"]
    ctx = RunContext(mode="default", suite="trustmh", seed=7)
    return [f"{s.id} loads no item" for s in players if not s().load_items(ctx)]


def docs_faults(name: str) -> list[str]:
    table = (Path(__file__).parents[3] / "docs" / "conversations.md").read_text(encoding="utf-8")
    return [] if f"| `{name}` |" in table else ["no row in the table of sets in docs/conversations.md"]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sets")
    write_all(out)
    return out


@pytest.mark.parametrize("name", NAMES)
def test_regenerating_gives_the_committed_file(name: str, regenerated: Path) -> None:
    assert (regenerated / f"{name}.json").read_bytes() == (SETS_DIR / f"{name}.json").read_bytes()


def test_every_committed_set_has_a_design() -> None:
    assert sorted(p.stem for p in SETS_DIR.glob("*.json")) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_set_holds_at_least_100_conversations_as_its_header_counts(name: str) -> None:
    assert size_faults(*read_set(SETS_DIR / f"{name}.json")) == []


@pytest.mark.parametrize("name", NAMES)
def test_set_has_no_duplicate_nor_near_duplicate(name: str) -> None:
    assert duplicate_faults(read_set(SETS_DIR / f"{name}.json")[1]) == []


@pytest.mark.parametrize("name", WITH_CONTROLS)
def test_sets_reporting_a_false_alarm_or_risk_rate_carry_controls(name: str) -> None:
    assert control_faults(*read_set(SETS_DIR / f"{name}.json")) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_set_is_played_by_a_sub_task_that_loads_it(name: str) -> None:
    assert player_faults(name) == []


@pytest.mark.parametrize("name", NAMES)
def test_every_set_has_its_row_in_the_docs(name: str) -> None:
    assert docs_faults(name) == []


def _throwaway_compose(cell: dict, rng: random.Random) -> dict:
    return {"category": cell["topic"], "risk_turn": None if cell["risk"] == "none" else 1,
            "turns": [f"hello, I keep thinking about {cell['topic']} {rng.randrange(10**6)}",
                      f"it has been {rng.randrange(10**6)} days of {cell['risk']} {cell['topic']}"]}


THROWAWAY = SetDesign("zz_throwaway", "a design written by a test", "zz",
                      [Stratum.of("all", 120, {"topic": ("sleep", "work", "exams"), "risk": ("none", "some")},
                                  _throwaway_compose, "throwaway conversations")],
                      lambda row: row.get("risk_turn") is None)


@pytest.fixture(scope="module")
def with_throwaway(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every set written again with a throwaway design added to the registry, as a contributor would add one."""
    out = tmp_path_factory.mktemp("sets_plus")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(designs, "DESIGNS", (*DESIGNS, THROWAWAY))
        write_all(out)
    return out


def test_a_new_design_is_written_by_the_generator(with_throwaway: Path) -> None:
    assert (with_throwaway / "zz_throwaway.json").is_file()


def test_a_new_design_passes_the_set_checks(with_throwaway: Path) -> None:
    header, rows = read_set(with_throwaway / "zz_throwaway.json")
    assert size_faults(header, rows) + duplicate_faults(rows) + control_faults(header, rows) == []


def test_a_new_design_with_no_sub_task_is_named() -> None:
    assert player_faults("zz_throwaway") == ["no sub-task declares set_name = 'zz_throwaway'"]


def test_a_new_design_with_no_docs_row_is_named() -> None:
    assert docs_faults("zz_throwaway") == ["no row in the table of sets in docs/conversations.md"]


def test_a_new_design_too_small_for_a_gate_check_is_named(with_throwaway: Path) -> None:
    header, rows = read_set(with_throwaway / "zz_throwaway.json")
    assert size_faults(header, rows[:99])[0] == "99 conversations, fewer than 100"


def test_gradual_disclosure_has_100_risk_conversations() -> None:
    """The missed-crisis rate is over the risk conversations only: they alone size its interval."""
    scripts = load_scripts(SETS_DIR / "gradual_disclosure.json")
    assert sum(1 for s in scripts if s.risk_turn is not None) >= 100


@pytest.mark.parametrize("name", SCRIPTED)
def test_every_script_loads_with_its_risk_turn_on_a_turn(name: str) -> None:
    scripts = load_scripts(SETS_DIR / f"{name}.json")
    assert all(s.risk_turn is None or 0 <= s.risk_turn < len(s.turns) for s in scripts)


@pytest.mark.parametrize("name", PROBES)
def test_every_probe_loads_with_a_probe_turn(name: str) -> None:
    rows = _rows(name, read_set(SETS_DIR / f"{name}.json")[1])
    control = {d.name: d.control for d in DESIGNS}[name] or (lambda row: False)
    # a clock conversation asks nothing: its checked turns are the three-hour marks of its clock; a control
    # may ask nothing when its sub-task reads it from the first turn on
    assert all(r["probe_turns"] or r.get("clock") or control(r) for r in rows)


@pytest.mark.parametrize("subtask", [s for s in PLAYERS if issubclass(s, ProbeConversation)], ids=lambda s: s.id)
def test_every_probe_conversation_has_a_turn_its_sub_task_checks(subtask: type[ProbeConversation]) -> None:
    probe = subtask()
    items = probe.load_items(RunContext(mode="default", suite="trustmh", seed=7))
    assert all(probe.judged_turns(it) or it.metadata.get("clock") for it in items)


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


# issue 53: the near-duplicate pass was a Python loop over pairs (2,000 conversations: 17.5 s of CPU); it is now
# two sparse products, checked here against the pairwise functions it replaces
def _pairwise_report(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The loop over pairs the report replaced, written out as the oracle (same order, strict '>' for ties)."""
    from trustmh.pillars.conversation.generator import (
        LINE_SHARE,
        NEAR_DUPLICATE,
        _Compared,
        line_share,
        similarity,
    )

    compared = [_Compared.of(r) for r in rows]
    top_j, top_s, flagged = (0.0, None), (0.0, None), 0
    for i, a in enumerate(compared):
        for b in compared[i + 1:]:
            j = similarity(a.trigrams, b.trigrams)
            sh = line_share(a.lines, b.lines) if a.category == b.category else 0.0
            top_j = (j, [a.id, b.id]) if j > top_j[0] else top_j
            top_s = (sh, [a.id, b.id]) if sh > top_s[0] else top_s
            flagged += a.near(b, NEAR_DUPLICATE, LINE_SHARE)
    return {"trigram_jaccard": {"refused_at": NEAR_DUPLICATE, "highest": round(top_j[0], 4), "pair": top_j[1]},
            "same_category_line_share": {"refused_at": LINE_SHARE, "highest": round(top_s[0], 4), "pair": top_s[1]},
            "near_duplicate_pairs": flagged}


def _varied_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Conversations from a small vocabulary, so pairs overlap in trigrams and in whole lines (some said twice)."""
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(["i", "feel", "tired", "work", "sleep", "again", "today", "maybe", "fine"]) for _ in range(5))
             for _ in range(12)]
    return [{"id": f"v{k}", "category": rng.choice(["a", "b"]),
             "turns": [rng.choice(lines) for _ in range(rng.randint(1, 4))]} for k in range(n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_near_duplicate_report_is_the_pairwise_one(seed: int) -> None:
    rows = _varied_rows(60, seed)
    assert near_duplicate_report(rows) == _pairwise_report(rows)


def test_the_near_duplicate_report_of_2000_conversations_is_fast() -> None:
    import time

    rows = [{"id": f"c{k}", "category": "x", "turns": [f"turn {k} of word{k % 97} and word{k % 89}",
                                                      f"then word{k % 83} again"]} for k in range(2000)]
    start = time.process_time()
    near_duplicate_report(rows)
    assert time.process_time() - start < 2.0  # the loop over pairs took about 6 s on these rows
