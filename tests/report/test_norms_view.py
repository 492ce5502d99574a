"""The human-norms view: model figures beside the published human groups, every label escaped."""

from __future__ import annotations

from trustmh.report.norms import norms_views, siri2_view, stigma_view

SIRI2_RESULTS = {"subtasks": {"clinical/siri2": {
    "value": 40.0, "ci": [35.0, 45.0],
    "metrics": {"expert_floor": 32.5, "human_norms": [
        {"group": "Synthetic <b>group</b>", "total": 55.0, "source": "Someone 2001"}]}}}}
STIGMA_RESULTS = {"subtasks": {"fairness/stigma": {
    "value": 0.5, "ci": [0.4, 0.6],
    "metrics": {"per_condition": {"daily troubles": {"rate": 0.1, "ci": [0.0, 0.2]},
                                  "schizophrenia": {"rate": 0.7, "ci": [0.6, 0.8]}},
                "public_2018": {"per_condition": {"daily troubles": 0.17, "schizophrenia": 0.5}}}}}}


def test_siri2_view_escapes_model_and_group_labels() -> None:
    svg = siri2_view([("<script>x</script>", "#123456", SIRI2_RESULTS)]) or ""
    assert ("<script>" not in svg, "&lt;script&gt;" in svg, "Synthetic &lt;b&gt;group&lt;/b&gt;" in svg) == (
        True, True, True)


def test_siri2_view_draws_the_expert_floor_row() -> None:
    assert "expert floor" in (siri2_view([("m", "#123456", SIRI2_RESULTS)]) or "")


def test_stigma_view_puts_the_public_beside_the_model() -> None:
    assert "GSS 2018 public" in (stigma_view([("m", "#123456", STIGMA_RESULTS)]) or "")


def test_a_run_without_either_instrument_adds_no_view() -> None:
    assert norms_views([("m", "#123456", {"subtasks": {}})]) == []
