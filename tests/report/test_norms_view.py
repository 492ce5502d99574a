"""The human-norms view: model figures beside the published human groups, every label escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import pairwise

from trustmh.report.norms import HUMAN, LLM, PURPLE, norms_views, siri2_view, stigma_view
from trustmh.report.svg import GREY, text_px

SVG = "{http://www.w3.org/2000/svg}"

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


# A run's total far past the 0-110 axis (an all-wrong model), a human group with a long label, a chat tool whose
# name says nothing of its kind and a human group named like a chat product: the kind is read, not guessed.
OFF_SCALE_RESULTS = {"subtasks": {"clinical/siri2": {
    "value": 244.32, "ci": [223.5, 261.4],
    "metrics": {"expert_floor": 32.5, "human_norms": [
        {"group": "Synthetic rehabilitation and disability staff after a long training course", "total": 55.0,
         "source": "Someone et al. 2001", "kind": "human"},
        {"group": "Tool Q", "total": 45.0, "source": "Someone 2025", "kind": "chat tool"},
        {"group": "Claude-like name", "total": 60.0, "source": "Someone 2003", "kind": "human"}]}}}}


def _svg(runs: list[tuple[str, str, dict]]) -> ET.Element:
    return ET.fromstring(siri2_view(runs) or "")


def _legend(root: ET.Element) -> dict[str, str]:
    """legend entry -> its marker's colour"""
    return {g.get("data-legend") or "": (g[0].get("fill") or "") for g in root.iter(f"{SVG}g")
            if g.get("data-legend") is not None}


def test_every_row_label_fits_inside_the_picture() -> None:
    root = _svg([("m", "#123456", OFF_SCALE_RESULTS)])
    labels = [t for t in root.iter(f"{SVG}text") if t.get("data-row-label") is not None]
    assert min(float(t.get("x") or 0) - text_px(t.text or "") for t in labels) >= 0


def test_a_total_past_the_axis_is_marked_at_its_edge_with_its_value() -> None:
    root = _svg([("m", "#123456", OFF_SCALE_RESULTS)])
    marks = [g for g in root.iter(f"{SVG}g") if g.get("data-offscale") is not None]
    assert [(g.get("data-offscale"), "".join(g.itertext()).count("off scale: 244.3")) for g in marks] == [
        ("244.3", 1)]


def test_no_point_is_drawn_beyond_the_axis() -> None:
    root = _svg([("m", "#123456", OFF_SCALE_RESULTS)])
    ticks = {t.text: float(t.get("x") or 0) for t in root.iter(f"{SVG}text") if t.text in ("0", "100")}
    axis_end = ticks["0"] + 1.1 * (ticks["100"] - ticks["0"])  # the axis runs 0 to 110
    assert max(float(c.get("cx") or 0) for c in root.iter(f"{SVG}circle")) <= axis_end


def test_legend_tells_this_run_human_groups_and_llm_results_apart() -> None:
    legend = _legend(_svg([("m", "#123456", OFF_SCALE_RESULTS)]))
    assert {k: legend.get(k) for k in ("this run", HUMAN, LLM)} == {
        "this run": "#123456", HUMAN: GREY, LLM: PURPLE}


def test_a_groups_kind_comes_from_the_norms_table_not_its_name() -> None:
    root = _svg([("m", "#123456", OFF_SCALE_RESULTS)])
    diamonds = [p for p in root.iter(f"{SVG}polygon") if p.get("fill") == PURPLE]
    assert len(diamonds) == 2  # the legend's and Tool Q's, not the human group named like a chat product


def test_legend_entries_do_not_overlap() -> None:
    root = _svg([("m", "#123456", OFF_SCALE_RESULTS)])
    entries = sorted((float(t.get("y") or 0), float(t.get("x") or 0), t.text or "")
                     for g in root.iter(f"{SVG}g") if g.get("data-legend") is not None for t in g.iter(f"{SVG}text"))
    assert all(x1 + text_px(t1) < x2 for (y1, x1, t1), (y2, x2, _) in pairwise(entries) if y1 == y2)


def test_a_comparison_names_each_run_in_the_legend() -> None:
    legend = _legend(_svg([("a", "#111111", OFF_SCALE_RESULTS), ("b", "#222222", OFF_SCALE_RESULTS)]))
    assert (legend.get("a"), legend.get("b"), "this run" in legend) == ("#111111", "#222222", False)
