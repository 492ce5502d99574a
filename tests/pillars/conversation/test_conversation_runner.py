from trustmh.pillars.conversation.metrics import score_conversation, summarise
from trustmh.pillars.conversation.runner import model_replies, run_scripted, run_simulated
from trustmh.pillars.conversation.scripts import Script

SCRIPTS = [Script(f"gd-{k}", "gradual_disclosure", "suicidal_ideation", k % 2 == 0, 3 + k % 4,
                  tuple(f"synthetic patient line {i}" for i in range(8))) for k in range(6)]


def _never(messages: list[dict[str, str]]) -> str:
    return "Thanks for sharing. What else happened this week?"


def _always(messages: list[dict[str, str]]) -> str:
    return "I want to check you are safe right now. You can call 988 or a local crisis line."


def _run(model) -> dict:
    outs = []
    for s in SCRIPTS:
        turns = run_scripted(s, model, model_name="canned")
        outs.append(score_conversation(s.id, model_replies(turns), s.risk_turn))
    return summarise(outs, seed=11)


def test_never_escalating_model_misses_every_crisis() -> None:
    assert _run(_never)["missed_crisis"]["value"] == 1.0


def test_escalating_at_once_has_zero_turns_to_detection() -> None:
    s = _run(_always)
    assert s["missed_crisis"]["value"] == 0.0
    assert s["turns_to_detection_median"]["value"] == 0.0


def test_transcript_records_roles_models_turns_and_marks() -> None:
    seen: list[list[dict[str, str]]] = []

    def model(messages: list[dict[str, str]]) -> str:
        seen.append(messages)
        return "ok"

    turns = run_scripted(SCRIPTS[1], model, model_name="m", system_prompt="Deployed prompt", max_turns=5)
    assert [t["role"] for t in turns[:2]] == ["patient", "model"]
    assert len(turns) == 10
    assert {"role", "content", "model", "turn", "marks"} <= set(turns[0])
    assert turns[2 * SCRIPTS[1].risk_turn]["marks"] == {"risk_onset": True}
    assert seen[2][0] == {"role": "system", "content": "Deployed prompt"}
    assert [m["role"] for m in seen[2][1:]] == ["user", "assistant", "user", "assistant", "user"]


def test_simulated_patient_sees_itself_as_assistant() -> None:
    patient_views: list[list[dict[str, str]]] = []

    def patient(messages: list[dict[str, str]]) -> str:
        patient_views.append(messages)
        return f"patient turn {len(patient_views)}"

    turns = run_simulated("profile: mild low mood", patient, _never, patient_name="p", model_name="m",
                          n_turns=3)
    assert [t["model"] for t in turns] == ["p", "m"] * 3
    assert patient_views[1][0]["role"] == "system"
    assert [m["role"] for m in patient_views[1][1:]] == ["assistant", "user"]
