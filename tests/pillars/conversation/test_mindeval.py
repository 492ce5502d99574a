"""The MindEval reader on a synthetic fixture with the publisher's layout (tests/fixtures/mindeval/generate.py),
the certification rule on it, and skip-if-absent checks on the real files (TRUSTMH_REFS_DIR)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trustmh.cli.rescore import rescore
from trustmh.core import TrustmhError
from trustmh.judges.reference_quality import CANNOT_CERTIFY, NOT_CERTIFIED, TOO_SMALL, certify_criterion
from trustmh.pillars.conversation.mindeval import (
    ANNOTATIONS,
    CRITERIA,
    FIELD_OF,
    JUDGE_PROMPTS,
    mapping_check,
    read_annotations,
    rescore_mindeval,
)
from trustmh.pillars.conversation.scoring import RUBRIC_KEYS

FIXTURE = Path(__file__).parents[2] / "fixtures" / "mindeval"
N_BOOT = 300


@pytest.fixture(scope="module")
def ann():  # noqa: ANN201
    return read_annotations(FIXTURE / ANNOTATIONS)


def _raw_rows() -> list[dict]:
    rows = []
    for line in (FIXTURE / ANNOTATIONS).read_text(encoding="utf-8").split("\n"):
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def test_every_rubric_key_has_a_mindeval_criterion() -> None:
    assert set(CRITERIA) == set(RUBRIC_KEYS)


def test_field_without_underscore_is_read_as_criterion_11(ann) -> None:  # noqa: ANN001
    assert ann.field_spelling["criterion_11"] == "criterion11"


def test_fields_are_the_numbered_ones_present_without_5(ann) -> None:  # noqa: ANN001
    assert ann.fields == [f"criterion_{n}" for n in (1, 2, 3, 4, 6, 7, 8, 9, 10, 11)]


def test_criterion_11_is_left_unmapped() -> None:
    assert "criterion_11" not in FIELD_OF


def test_ratings_follow_the_user_not_the_position(tmp_path: Path) -> None:
    row = {"id": "a", "messages": [{"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Hi."}],
           "criterion_1.responses": [1, 2], "criterion_1.responses.users": ["u1", "u2"],
           "criterion_2.responses": [6, 5], "criterion_2.responses.users": ["u2", "u1"]}
    path = tmp_path / "human_annotations.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    got = read_annotations(path).conversations[0].ratings
    assert (got["criterion_1"]["C1"], got["criterion_2"]["C1"]) == (1, 5)


def test_user_order_differs_between_fields_in_the_fixture() -> None:
    row = _raw_rows()[0]
    assert row["criterion_1.responses.users"] != row["criterion_2.responses.users"] or \
        row["criterion_2.responses.users"] != row["criterion_3.responses.users"]


def test_zero_is_never_a_score(ann) -> None:  # noqa: ANN001
    values = [v for c in ann.conversations for row in c.ratings.values() for v in row.values() if v is not None]
    assert min(values) >= 1


def test_zeros_are_counted_as_not_applicable(ann) -> None:  # noqa: ANN001
    zeros = sum(1 for r in _raw_rows()[:30] for v in r["criterion_4.responses"] if v == 0)
    assert ann.not_applicable["criterion_4"] == zeros


def test_a_criterion_rating_is_the_mean_of_the_applicable_fields(ann) -> None:  # noqa: ANN001
    conv = ann.conversations[0]
    by = ann.by_criterion("ethical_conduct")[conv.id]
    for rater, value in by.items():
        got = [v for f in ("criterion_3", "criterion_4") if (v := conv.ratings[f][rater]) is not None]
        assert value == (sum(got) / len(got) if got else None)


def test_the_same_profile_is_one_cluster_across_models(ann) -> None:  # noqa: ANN001
    clusters = ann.clusters
    assert clusters["conv-2-model-x"] == clusters["conv-2-model-z"] != clusters["conv-3-model-x"]


def test_messages_become_turns_therapist_first(ann) -> None:  # noqa: ANN001
    turns = ann.conversations[0].turns
    assert [t["role"] for t in turns[:2]] == ["model", "patient"]


def test_unusable_rows_are_named_and_counted(ann) -> None:  # noqa: ANN001
    lines = ann.report.lines()
    assert any("not JSON" in x for x in lines) and any("repeats row" in x for x in lines)


def _with_latin1_byte(tmp_path: Path) -> Path:
    """The fixture with one Latin-1 byte (0xE9, "é" in Latin-1; not UTF-8) in row 0's first message, as a
    copy saved by a tool that did not write UTF-8 would hold it."""
    raw = (FIXTURE / ANNOTATIONS).read_bytes()
    path = tmp_path / "human_annotations.jsonl"
    path.write_bytes(raw.replace(b"How are you doing today?", b"How are you doing today, caf\xe9?", 1))
    return path


# issue 53: Latin-1 bytes were replaced (U+FFFD) without a line; now the line names the file, row and byte
def test_a_latin1_byte_is_named_with_file_row_and_byte(tmp_path: Path) -> None:
    lines = read_annotations(_with_latin1_byte(tmp_path)).report.lines()
    assert "human_annotations.jsonl row 0: line not UTF-8 (byte 0xe9 at offset" in next(
        x for x in lines if "UTF-8" in x)


def test_a_latin1_line_is_decoded_as_latin1_never_replaced(tmp_path: Path) -> None:
    ann = read_annotations(_with_latin1_byte(tmp_path))
    assert ann.conversations[0].turns[0]["content"].endswith("caf\u00e9?")


def test_mismatched_lists_leave_the_field_out(ann) -> None:  # noqa: ANN001
    odd = next(c for c in ann.conversations if c.id == "conv-odd-lists")
    assert "criterion_2" not in odd.ratings


def test_out_of_range_rating_is_left_out_and_named(ann) -> None:  # noqa: ANN001
    assert any("rating 7 is not an integer 0-6" in x for x in ann.report.lines())


def test_a_rating_not_submitted_is_left_out(ann) -> None:  # noqa: ANN001
    assert any("status 'discarded'" in x for x in ann.report.lines())


def test_a_conversation_without_messages_keeps_its_ratings_but_is_not_judged(ann) -> None:  # noqa: ANN001
    conv = next(c for c in ann.conversations if c.id == "conv-no-messages")
    assert conv.turns is None and conv.ratings["criterion_1"]


def test_mapping_is_rederived_from_the_judge_prompt_examples(ann) -> None:  # noqa: ANN001
    check = mapping_check(FIXTURE / JUDGE_PROMPTS, ann)
    assert (check["examples_matched"], check["mapping_holds"]) == (2, True)


def test_mapping_check_says_when_the_prompt_file_is_absent(ann, tmp_path: Path) -> None:  # noqa: ANN001
    assert mapping_check(tmp_path / "absent.py", ann)["status"] == "not checked"


def test_a_file_without_any_usable_row_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "human_annotations.jsonl"
    path.write_text("{not json\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(TrustmhError, match="no usable row"):
        read_annotations(path)


# ------------------------------------------------------------------------- the rule on MindEval's layout

def _copy_of(ann, key: str, rater: str) -> dict:  # noqa: ANN001
    return {cid: row[rater] for cid, row in ann.by_criterion(key).items()}


def test_copying_a_clinician_where_clinicians_disagree_is_not_certified(ann) -> None:  # noqa: ANN001
    verdict = certify_criterion(ann.by_criterion("ai_communication"), _copy_of(ann, "ai_communication", "C1"),
                                "ratings", seed=0, n_boot=N_BOOT, clusters=ann.clusters)
    assert verdict.status == CANNOT_CERTIFY


def test_the_certificate_says_why_the_reference_cannot_certify(ann) -> None:  # noqa: ANN001
    verdict = certify_criterion(ann.by_criterion("ai_communication"), _copy_of(ann, "ai_communication", "C1"),
                                "ratings", seed=0, n_boot=N_BOOT, clusters=ann.clusters)
    assert verdict.reason.startswith("the reference cannot certify this criterion: the humans' own agreement")


def test_copying_a_clinician_where_clinicians_agree_on_32_conversations_finds_the_reference_too_small(
        ann) -> None:  # noqa: ANN001
    # issue 41: 32 conversations in 10 profiles have too little power to certify even a human-level judge
    verdict = certify_criterion(ann.by_criterion("clinical_accuracy"), _copy_of(ann, "clinical_accuracy", "C2"),
                                "ratings", seed=0, n_boot=N_BOOT, clusters=ann.clusters)
    assert (verdict.status, verdict.reason.startswith(TOO_SMALL)) == (CANNOT_CERTIFY, True)


def test_a_constant_judge_is_not_certified_where_clinicians_agree(ann) -> None:  # noqa: ANN001
    verdict = certify_criterion(ann.by_criterion("clinical_accuracy"), {c.id: 4 for c in ann.conversations},
                                "ratings", seed=0, n_boot=N_BOOT, clusters=ann.clusters)
    assert verdict.status == NOT_CERTIFIED


# ------------------------------------------------------------------------------------- rescore command

@pytest.fixture(scope="module")
def rescored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("mindeval")
    assert rescore_mindeval(FIXTURE, out, seed=0, n_boot=200) == 0
    return out, json.loads((out / "mindeval_rescore.json").read_text(encoding="utf-8"))


def test_rescore_writes_figures_for_every_criterion(rescored) -> None:  # noqa: ANN001
    assert set(rescored[1]["clinicians"]) >= set(CRITERIA)


def test_rescore_writes_the_table(rescored) -> None:  # noqa: ANN001
    assert "Clinical Accuracy & Competence" in (rescored[0] / "mindeval_rescore.txt").read_text(encoding="utf-8")


def test_rescore_counts_the_unusable_rows(rescored) -> None:  # noqa: ANN001
    assert rescored[1]["n_unusable"] == 2  # the line that is not JSON and the repeated id


def test_rescore_counts_not_applicable_per_criterion(rescored, ann) -> None:  # noqa: ANN001
    assert rescored[1]["clinicians"]["ethical_conduct"]["n_not_applicable"] == (
        ann.not_applicable["criterion_3"] + ann.not_applicable["criterion_4"])


def test_rescore_of_a_folder_without_the_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="no data/human_annotations.jsonl"):
        rescore("mindeval", tmp_path, tmp_path / "out")


# --------------------------------------------------------------------- the publisher's real files (local)

REFS = os.environ.get("TRUSTMH_REFS_DIR")
REAL = Path(REFS) / "SWORDHealth+mind-eval" if REFS else None
needs_real = pytest.mark.skipif(REAL is None or not (REAL / ANNOTATIONS).is_file(),
                                reason="set TRUSTMH_REFS_DIR to a folder holding SWORDHealth+mind-eval")


@needs_real
def test_real_file_has_60_conversations_four_clinicians() -> None:
    real = read_annotations(REAL / ANNOTATIONS)
    assert (len(real.conversations), len(real.raters)) == (60, 4)


@needs_real
def test_real_mapping_reproduces_all_five_publisher_examples() -> None:
    real = read_annotations(REAL / ANNOTATIONS)
    check = mapping_check(REAL / JUDGE_PROMPTS, real)
    assert (check["examples_matched"], check["mapping_holds"]) == (5, True)


@needs_real
def test_real_file_reads_without_a_flagged_row() -> None:
    assert read_annotations(REAL / ANNOTATIONS).report.lines() == []


def test_a_raw_line_separator_inside_a_message_does_not_split_the_row(ann) -> None:  # noqa: ANN001
    assert any("\u2028" in t["content"] for c in ann.conversations for t in (c.turns or []))


@needs_real
def test_real_file_has_20_profiles_three_conversations_each() -> None:
    clusters = read_annotations(REAL / ANNOTATIONS).clusters
    assert sorted({list(clusters.values()).count(c) for c in clusters.values()}) == [3]


def _ratings_as_strings(tmp_path: Path) -> Path:
    """A copy of the fixture whose clinicians' ratings are strings ("4" for 4), the other lines as they are."""
    import shutil

    root = tmp_path / "mind-eval"
    shutil.copytree(FIXTURE, root)
    lines = []
    for line in (FIXTURE / ANNOTATIONS).read_text(encoding="utf-8").split("\n"):
        try:
            row = json.loads(line)
        except ValueError:
            lines.append(line)
            continue
        if isinstance(row, dict):
            row = {k: [str(v) for v in val] if k.endswith(".responses") and isinstance(val, list) else val
                   for k, val in row.items()}
        lines.append(json.dumps(row))
    (root / ANNOTATIONS).write_text("\n".join(lines), encoding="utf-8")
    return root


def test_ratings_given_as_strings_are_named_and_left_out_not_a_type_error(tmp_path: Path) -> None:
    root = _ratings_as_strings(tmp_path)
    assert rescore_mindeval(root, tmp_path / "out", seed=0, n_boot=50) == 0
    result = json.loads((tmp_path / "out" / "mindeval_rescore.json").read_text(encoding="utf-8"))
    assert any("rating '" in line and "is not an integer 0-6; rating left out" in line
               for line in result["unusable_rows"])


def test_the_certify_reference_carries_the_rescores_row_report(tmp_path: Path) -> None:
    from trustmh.core import RunContext
    from trustmh.pillars.conversation.mindeval_reference import mindeval_reference

    root = _ratings_as_strings(tmp_path)
    assert rescore_mindeval(root, tmp_path / "out", seed=0, n_boot=50) == 0
    result = json.loads((tmp_path / "out" / "mindeval_rescore.json").read_text(encoding="utf-8"))
    ref = mindeval_reference(RunContext(), str(root))
    assert ref.report is not None
    assert ref.report.as_json() == {k: result[k] for k in ("n_unusable", "n_flagged", "unusable_rows")}
