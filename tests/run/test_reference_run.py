"""A certification is a run (`RunSpec.reference`, run/reference.py): its typed request part reaches the sub-task,
and the run asks what certification asked before it was one (no model under test, no patient, the bundled
judge's free-text cap, the reference reader's own -O keys)."""

from __future__ import annotations

from trustmh.certify.measure import certification_spec
from trustmh.run.reference import FIXED_REPLIES, ReferenceRun

ESCALATION = "crisis/crisis_escalation"


def test_the_reference_path_fills_the_option_the_reference_declares() -> None:
    spec = certification_spec(["mockllm/j"], ReferenceRun("crisis-study", ESCALATION, "/copy", "crisis_dir"))
    assert spec.context().options["crisis_dir"] == "/copy"


def test_the_reference_path_wins_over_the_same_option_given_with_O() -> None:
    spec = certification_spec(["mockllm/j"], ReferenceRun("crisis-study", ESCALATION, "/copy", "crisis_dir"),
                              options={"crisis_dir": "/other"})
    assert spec.context().options["crisis_dir"] == "/copy"


def test_a_path_the_reader_reads_itself_is_no_option() -> None:
    spec = certification_spec(["mockllm/j"], ReferenceRun("mindeval", "conversation/simulated_patient", "/copy"))
    assert spec.context().options == {}


def test_no_model_is_under_test() -> None:
    assert certification_spec(["mockllm/j"], ReferenceRun("x", ESCALATION)).model.label == FIXED_REPLIES


def test_the_judges_under_test_are_the_specs_judges() -> None:
    spec = certification_spec(["mockllm/a", "mockllm/b"], ReferenceRun("x", ESCALATION))
    assert spec.roles == {"grader": "mockllm/a", "grader_2": "mockllm/b"}


def test_a_conversation_reference_plays_no_patient() -> None:
    assert certification_spec(["mockllm/j"], ReferenceRun("mindeval", "conversation/simulated_patient")).patient \
        is None


def test_the_bundled_judge_keeps_the_demos_free_text_cap() -> None:
    spec = certification_spec(["gguf/smollm2"], ReferenceRun("x", ESCALATION))
    assert spec.context().options["judge_text_chars"] == 80


def test_an_option_the_reference_reader_reads_is_accepted() -> None:
    spec = certification_spec(["mockllm/j"], ReferenceRun("moore-interjections", "conversation/delusion"),
                              options={"moore_dir": "/copy"})
    assert spec.context().options["moore_dir"] == "/copy"
