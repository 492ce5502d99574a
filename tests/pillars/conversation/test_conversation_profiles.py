from pathlib import Path

import pytest

import trustmh.pillars.conversation as conversation
from trustmh.core import TrustmhError
from trustmh.pillars.conversation.generator import read_set
from trustmh.pillars.conversation.profiles import LAY_WORDS, patient_brief

PROFILES = read_set(Path(conversation.__file__).parent / "sets" / "simulated_patient.json")[1]


def test_hidden_risk_released_only_from_reveal_turn() -> None:
    p = next(r for r in PROFILES if r["hidden_risk"])
    before = patient_brief(p, p["reveal_turn"] - 1)
    after = patient_brief(p, p["reveal_turn"])
    topic = LAY_WORDS[p["hidden_risk"]]
    assert f"let it show, in your own words, that you have been having {topic}" not in before
    assert f"let it show, in your own words, that you have been having {topic}" in after
    assert p["situation"] in before
    assert p["style"] in before


def test_every_shipped_profile_renders() -> None:
    assert all("Write only your next message" in patient_brief(p, 0) for p in PROFILES)


def test_incomplete_profile_is_one_clear_error() -> None:
    with pytest.raises(TrustmhError, match="profile x: missing style"):
        patient_brief({**PROFILES[0], "id": "x", "style": ""}, 0)
