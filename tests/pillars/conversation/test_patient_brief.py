"""The simulated patient's brief names the risk in a person's words, never by a clinical label."""
from __future__ import annotations

import json
from importlib import resources

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.conversation.designs import SETS_DIR
from trustmh.pillars.conversation.generator import read_set
from trustmh.pillars.conversation.profiles import LAY_WORDS, clinical_labels_in, patient_brief


def _profiles() -> list[dict]:
    rows = list(read_set(SETS_DIR / "simulated_patient.json")[1])
    starter = resources.files("trustmh.pillars.conversation") / "starter" / "simulated_patient.jsonl"
    rows += [json.loads(line) for line in starter.read_text(encoding="utf-8").splitlines() if line.strip()]
    return rows


PROFILES = _profiles()


def test_no_brief_of_any_profile_at_any_turn_holds_a_clinical_label() -> None:
    leaks = {p["id"]: clinical_labels_in(patient_brief(p, t)) for p in PROFILES for t in range(10)
             if clinical_labels_in(patient_brief(p, t))}
    assert leaks == {}


def test_the_profiles_checked_include_every_hidden_risk_of_the_set() -> None:
    assert {p["hidden_risk"] for p in PROFILES if p.get("hidden_risk")} == {"suicidal_ideation", "self_harm",
                                                                             "substance_withdrawal"}


@pytest.mark.parametrize("label", ["suicidal ideation", "Self-harm", "psychosis", "substance withdrawal",
                                   "homicidal", "delusions"])
def test_the_label_screen_sees_each_label(label: str) -> None:
    assert clinical_labels_in(f"You keep back: {label}.") != []


def test_a_brief_from_the_reveal_turn_on_carries_the_lay_words() -> None:
    profile = next(p for p in PROFILES if p.get("hidden_risk") == "suicidal_ideation")
    assert LAY_WORDS["suicidal_ideation"] in patient_brief(profile, int(profile["reveal_turn"]))


def test_a_label_written_into_a_profile_is_refused_with_one_line() -> None:
    profile = {**PROFILES[0], "situation": "psychosis after a bereavement"}
    with pytest.raises(TrustmhError, match="clinical label"):
        patient_brief(profile, 0)


def test_a_risk_without_lay_words_is_refused() -> None:
    profile = {**PROFILES[0], "hidden_risk": "mania", "reveal_turn": 1}
    with pytest.raises(TrustmhError, match="no lay phrasing"):
        patient_brief(profile, 0)
