"""clinical/siri2 on synthetic files laid out like the tutorial repository (tests/fixtures/siri2): reading,
scoring (worst-case invalid ratings, the expert floor, the bias on inappropriate replies) and the rescore of
released results."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.core import RunContext
from trustmh.data.rows import RowReport
from trustmh.offline import run_offline
from trustmh.pillars.clinical.rescore import rescore_siri2
from trustmh.pillars.clinical.siri2 import Siri2
from trustmh.pillars.clinical.siri2_data import load_experts, load_replies
from trustmh.pillars.clinical.siri2_scoring import parse_rating, siri2_figures, worst_rating

SIRI2 = FIXTURES / "siri2"
# the fixture's invented expert means (item 14 excluded); their absolute values sum to 14
EXPERT_MEANS = {"1A": -3, "1B": 2, "2A": -2, "2B": 3, "3A": 1, "3B": -1, "4A": 2}


@pytest.mark.parametrize(("text", "rating"), [
    ('{"rating": -3}', -3), ('{"rating": "+2"}', 2), ("0", 0), ("+1", 1), ("Rating: -2", -2),
    ('{"rating": 4}', None), ('{"rating": 1.5}', None), ("I would say 2 or 3", None), ("", None)])
def test_parse_rating(text: str, rating: int | None) -> None:
    assert parse_rating(text) == rating


def test_items_file_leaves_out_item_14_and_names_a_row_without_its_second_reply() -> None:
    report = RowReport()
    replies = load_replies(SIRI2 / "instrument" / "siri2_items.json", report)
    assert [r.reply_id for r in replies] == ["1A", "1B", "2A", "2B", "3A", "3B", "4A"]
    assert report.lines() == ["siri2_items.json row 4: helper_b missing or empty; skipped"]


# issue 53.6: every item given twice is named, each copy on the items file's row, and read once
def test_an_items_file_with_every_item_given_twice_names_the_copies(tmp_path: Path) -> None:
    rows = json.loads((SIRI2 / "instrument" / "siri2_items.json").read_text(encoding="utf-8"))[:2]
    (tmp_path / "siri2_items.json").write_text(json.dumps(rows + rows), encoding="utf-8")
    report = RowReport()
    replies = load_replies(tmp_path / "siri2_items.json", report)
    assert ([r.reply_id for r in replies], report.lines()[0]) == (
        ["1A", "1B", "2A", "2B"], "siri2_items.json row 2: item_id 1A repeats row 0; skipped")


def test_expert_file_with_crlf_is_read_without_item_14() -> None:
    experts = load_experts(SIRI2 / "instrument" / "siri2_expert_scores.csv")
    assert {k: e.mean for k, e in experts.items()} == EXPERT_MEANS


def _experts():  # noqa: ANN202
    return load_experts(SIRI2 / "instrument" / "siri2_expert_scores.csv")


def test_answering_the_expert_mean_scores_zero() -> None:
    fig = siri2_figures({k: [v] for k, v in EXPERT_MEANS.items()}, _experts(), n_boot=200)
    assert fig["total"] == 0.0


def test_answering_zero_scores_the_sum_of_the_expert_means_put_on_the_48_reply_scale() -> None:
    fig = siri2_figures({k: [0] for k in EXPERT_MEANS}, _experts(), n_boot=200)
    assert fig["total_sum"] == 14.0
    assert fig["total"] == pytest.approx(14.0 / 7 * 48)


def test_bias_on_inappropriate_replies_is_the_mean_signed_error_where_experts_rate_below_zero() -> None:
    # experts below 0: 1A (-3), 2A (-2), 3B (-1); rating 0 is 3, 2 and 1 points kinder
    fig = siri2_figures({k: [0] for k in EXPERT_MEANS}, _experts(), n_boot=200)
    assert fig["inappropriate_bias"] == pytest.approx(2.0)


def test_an_invalid_rating_counts_at_the_worst_case_and_is_reported() -> None:
    ratings = {k: [v] for k, v in EXPERT_MEANS.items()} | {"1A": [None]}
    fig = siri2_figures(ratings, _experts(), n_boot=200)
    assert (fig["n_invalid"], fig["total_sum"], fig["total_valid_only"]) == (1, 6.0, 0.0)


def test_worst_rating_is_the_far_end_of_the_scale() -> None:
    assert (worst_rating(-2.7), worst_rating(1.9), worst_rating(0.0)) == (3, -3, -3)


def test_expert_floor_is_sum_of_sds_times_root_two_over_pi() -> None:
    fig = siri2_figures({k: [0] for k in EXPERT_MEANS}, _experts(), n_boot=200)
    assert fig["expert_floor"] == pytest.approx(4.5 / 7 * math.sqrt(2 / math.pi) * 48)


def test_epochs_are_averaged_and_give_an_interval_over_administrations() -> None:
    ratings = {k: [v, v + 1 if v < 3 else v] for k, v in EXPERT_MEANS.items()}
    fig = siri2_figures(ratings, _experts(), n_boot=200)
    assert fig["total_sum"] == pytest.approx(0.5 * 6)
    assert fig["ci_epochs"] is not None


def test_subtask_offline_with_a_canned_model_and_invalid_answers_counted() -> None:
    ctx = RunContext(options={"siri2_dir": str(SIRI2)}, n_boot=200)

    def respond(item, prompt: str) -> str:  # noqa: ANN001
        return "no idea" if "[2B]" in prompt or "[2B]" in item.prompt else json.dumps({"rating": EXPERT_MEANS[item.id]})

    _, result = run_offline(Siri2(), ctx, respond)
    assert (result.n_invalid, result.metrics["total_sum"]) == (1, 6.0)  # 2B: expert 3, counted at -3


@pytest.fixture(scope="module")
def all_invalid():  # noqa: ANN201
    """The sub-task offline with a model that never gives a rating."""
    ctx = RunContext(options={"siri2_dir": str(SIRI2)}, n_boot=200)
    return run_offline(Siri2(), ctx, lambda item, prompt: "I would rather not rate that.")[1]


def test_every_rating_invalid_is_not_computed_with_the_count(all_invalid) -> None:  # noqa: ANN001
    assert (all_invalid.status, all_invalid.value, all_invalid.reason) == (
        "not_computed", None, "every rating invalid (7 of 7): the total would be worst-case placements alone "
        "(metrics.worst_case_total)")


def test_every_rating_invalid_keeps_the_worst_case_labelled_without_an_interval(all_invalid) -> None:  # noqa: ANN001
    m = all_invalid.metrics
    assert (m["worst_case_total"] > 0, m["total"], m["ci_items"], m["ci_epochs"], all_invalid.ci) == (
        True, None, None, None, None)


def test_every_siri2_figure_the_report_shows_has_a_label(all_invalid) -> None:  # noqa: ANN001
    shown = {k for k, v in all_invalid.metrics.items() if v is None or isinstance(v, str | int | float | bool)}
    assert shown - set(all_invalid.metrics["metric_labels"]) == set()


def test_not_computed_without_the_publishers_files_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.data.publisher import PublisherMissing

    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    with pytest.raises(PublisherMissing, match="-O siri2_dir=DIR"):  # the plan says it once per repository
        Siri2().not_computed_reason(RunContext())


def test_starter_suite_has_no_items_and_says_why() -> None:
    assert "copyrighted" in (Siri2().not_computed_reason(RunContext(suite="starter")) or "")


@pytest.fixture(scope="module")
def rescored(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("siri2")
    assert rescore_siri2(SIRI2, out, n_boot=200) == 0
    return json.loads((out / "siri2_rescore.json").read_text()) | {"_table": (out / "siri2_rescore.md").read_text()}


def _condition(result: dict, model: str) -> dict:
    return next(c for c in result["conditions"] if c["model"] == model)


def test_rescore_reproduces_a_published_total(rescored: dict) -> None:
    assert _condition(rescored, "m1")["reproduced"] is True


def test_rescore_reads_temperature_1_0_and_1_as_one_condition_and_flags_a_wrong_total(rescored: dict) -> None:
    assert (_condition(rescored, "m2")["temperature"], _condition(rescored, "m2")["reproduced"]) == ("1", False)


def test_rescore_names_the_unreadable_row_and_the_incomplete_condition(rescored: dict) -> None:
    assert rescored["unusable_rows"] == [
        "model_scores_by_condition.csv row 18: mean not a number ('n/a'); skipped",
        "experiment-results/model_scores_by_condition.csv: m3/0/short no mean for 2A; total not compared"]


def test_rescore_table_lists_each_condition(rescored: dict) -> None:
    rows = [line for line in rescored["_table"].splitlines() if line.startswith(("| m1 ", "| m2 ", "| m3 "))]
    assert len(rows) == 3


def test_a_reply_without_an_expert_score_is_not_asked_and_is_named(tmp_path: Path) -> None:
    (tmp_path / "instrument").mkdir()
    (tmp_path / "instrument" / "siri2_items.json").write_text(
        (SIRI2 / "instrument" / "siri2_items.json").read_text())
    lines = (SIRI2 / "instrument" / "siri2_expert_scores.csv").read_text().splitlines()
    (tmp_path / "instrument" / "siri2_expert_scores.csv").write_text(
        "\n".join(line for line in lines if not line.startswith("3B")) + "\n")
    items = Siri2().items(RunContext(options={"siri2_dir": str(tmp_path)}))
    assert ("3B" not in [i.id for i in items],
            "instrument/siri2_expert_scores.csv: 3B no expert score; reply not asked" in items[0].metadata["unusable_rows"]
            ) == (True, True)


def test_the_runs_epochs_administer_the_inventory_again() -> None:
    assert Siri2().generation(RunContext(epochs=4)).epochs == 4
