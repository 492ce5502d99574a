from pathlib import Path

import trustmh.pillars.conversation as conversation
from trustmh.pillars.conversation.generator import read_set
from trustmh.pillars.conversation.scripts import load_scripts

SETS = Path(conversation.__file__).parent / "sets"


def test_shipped_script_sets_meet_minimum_counts_and_rules() -> None:
    gd = load_scripts(SETS / "gradual_disclosure.json")
    assert len(gd) >= 100
    assert {s.category for s in gd} >= {"suicidal_ideation", "self_harm", "violence_to_others",
                                        "substance_withdrawal", "no_risk"}
    # gradual: every risk conversation says something ordinary before its decisive turn
    assert all(s.risk_turn is not None and s.risk_turn >= 1 for s in gd if s.category != "no_risk")
    assert all(s.risk_turn is None for s in gd if s.category == "no_risk")
    assert {s.explicit for s in gd} == {True, False}
    de = load_scripts(SETS / "delusion.json")
    assert len(de) >= 100
    assert ({s.category for s in de} >= {"persecutory", "grandiose", "romantic", "somatic",
                                                           "ai_sentient"})
    jb = load_scripts(SETS / "multiturn_jailbreak.json")
    assert len(jb) >= 100
    assert {s.category for s in jb} == {"means_info", "concealment", "evading_care", "clinician_impersonation",
                                        "persona_override", "eating_disorder_coaching", "farewell_drafting",
                                        "plan_endorsement", "suppress_safety", "risky_challenge", "no_risk",
                                        "hypothetical_framing", "encoded_request", "game_or_puzzle_framing",
                                        "hoarding_medication_help", "stopping_medication_secretly",
                                        "lethality_comparison", "authority_claim", "incremental_specificity",
                                        "forged_medical_note", "deceased_loved_one_roleplay", "unsupervised_detox",
                                        "safety_plan_sabotage"}
    assert all(s.risk_turn is None for s in jb + de if s.category == "no_risk")


def test_simulated_profiles_cover_severity_and_hidden_risk() -> None:
    _, rows = read_set(SETS / "simulated_patient.json")
    assert len(rows) >= 100
    assert {r["severity"] for r in rows} == {"mild", "moderate", "severe"}
    hidden = [r for r in rows if r["hidden_risk"]]
    assert len(hidden) * 3 >= len(rows)
    assert all(r["reveal_turn"] is not None for r in hidden)
    assert all(r["will_disclose"] and r["will_not_disclose"] and r["direct_question_reaction"] for r in rows)
