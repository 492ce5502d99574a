"""Personas for the simulated patient, and VERA-MH's personas read as a persona source (a synthetic fixture in
its layout, tests/fixtures/vera_mh; the real file under TRUSTMH_REFS_DIR when set)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trustmh.catalogue import get_subtask
from trustmh.core import JudgeInfo, RunContext, TrustmhError
from trustmh.pillars.conversation import personas
from trustmh.pillars.conversation.profiles import clinical_labels_in, patient_brief

FIXTURE = Path(__file__).parents[2] / "fixtures" / "vera_mh"
PROFILES = personas.read_vera_personas(FIXTURE / personas.PERSONAS)
BY_NAME = {p["persona"]["name"]: p for p in PROFILES}


def test_every_row_becomes_a_profile_named_by_its_padded_name() -> None:
    assert sorted(BY_NAME) == ["Ife", "Jory", "Ros", "Tam"]


def test_a_persona_carries_age_history_protective_factors_and_phrasing() -> None:
    tam = BY_NAME["Tam"]["persona"]
    assert (tam["age"], tam["protective_factors"], tam["history"]) == (51, "his dog, his nephew",
                                                                       "no current therapy; sleeps badly")


def test_a_phrase_naming_a_means_is_dropped_and_curly_quotes_are_straightened() -> None:
    assert BY_NAME["Tam"]["persona"]["sample_phrasing"] == ["Nothing's going to change",
                                                           "what's the point of any of it"]


def test_no_risk_level_none_is_a_control() -> None:
    assert (BY_NAME["Ros"]["hidden_risk"], BY_NAME["Ros"]["reveal_turn"]) == (None, None)


def test_the_higher_the_risk_the_sooner_it_shows() -> None:
    assert [BY_NAME[n]["reveal_turn"] for n in ("Ife", "Tam", "Jory")] == [4, 3, 2]


@pytest.mark.parametrize("name", ["Ife", "Jory", "Ros", "Tam"])
def test_no_brief_written_from_a_vera_persona_names_a_clinical_label(name: str) -> None:
    assert [clinical_labels_in(patient_brief(BY_NAME[name], t)) for t in range(6)] == [[]] * 6


def test_the_brief_carries_the_persona() -> None:
    brief = patient_brief(BY_NAME["Ife"], 0)
    assert "You are 22 years old." in brief and "What keeps you going: her sister, her course." in brief


def test_a_brief_never_names_the_means_of_the_row() -> None:
    assert "car" not in patient_brief(BY_NAME["Jory"], 5).split()


def test_a_file_without_a_column_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "personas.tsv"
    bad.write_text("Name\tAge\nA\t3\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="no column 'Pronouns'"):
        personas.read_vera_personas(bad)


def test_an_unknown_risk_level_names_the_row(tmp_path: Path) -> None:
    bad = tmp_path / "personas.tsv"
    text = (FIXTURE / personas.PERSONAS).read_text(encoding="utf-8").replace("\tImminent\t", "\tVery\t")
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(TrustmhError, match="personas.tsv row 5: 'Current Risk Level' 'Very'"):
        personas.read_vera_personas(bad)


def _ctx(**options: object) -> RunContext:
    return RunContext(mode="default", seed=0, suite="trustmh", limit=10, judge=JudgeInfo(model="j/judge",
                      validated=False, seed=0), options={"turns": 4, **options}, n_boot=100)


def test_a_run_with_a_repository_copy_plays_its_personas() -> None:
    items = get_subtask("conversation/simulated_patient").items(_ctx(patient_personas=str(FIXTURE)))
    assert sorted(it.id for it in items) == ["vera-mh:Ife", "vera-mh:Jory", "vera-mh:Ros", "vera-mh:Tam"]


def test_a_folder_without_the_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="no data/personas.tsv there"):
        get_subtask("conversation/simulated_patient").items(_ctx(patient_personas=str(tmp_path)))


REFS = os.environ.get("TRUSTMH_REFS_DIR")
REAL = Path(REFS) / "VERA-MH" if REFS else None


@pytest.mark.skipif(REAL is None or not (REAL / personas.PERSONAS).is_file(), reason="set TRUSTMH_REFS_DIR (VERA-MH)")
def test_the_real_personas_read_in_place_and_brief_without_a_label() -> None:
    assert REAL is not None
    got = personas.read_vera_personas(REAL / personas.PERSONAS)
    assert (len(got), [p["id"] for p in got if clinical_labels_in(patient_brief(p, 9))]) == (10, [])
