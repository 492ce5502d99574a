"""The unit of every conversation interval: the design cell joined with the stimulus (docs/statistics.md#the-unit)."""

from __future__ import annotations

from trustmh.catalogue import get_subtask
from trustmh.core import Item, JudgeInfo, RunContext
from trustmh.pillars.conversation.cells import cluster_on_cells, design_cell
from trustmh.stats.bootstrap import joined_clusters


def _ctx() -> RunContext:
    return RunContext(mode="default", seed=0, suite="trustmh", limit=None,
                      judge=JudgeInfo(model=None, validated=False, seed=0), options={}, n_boot=200)


def test_a_stimulus_played_in_two_cells_joins_them() -> None:
    assert joined_clusters(["s1", "s2", "s3", "s1"], ["a", "b", "c", "b"]) == [0, 0, 1, 0]


def test_stimuli_nested_in_cells_give_the_cells() -> None:
    assert joined_clusters(["s1", "s2", "s3", "s4"], ["a", "a", "b", "b"]) == [0, 0, 1, 1]


def test_design_cell_reads_kind_category_and_the_personas_style() -> None:
    row = {"kind": "risk", "category": "self_harm", "persona": {"disclosure_style": "deflects"}}
    assert design_cell(row) == "risk|self_harm|deflects"


def test_a_row_without_a_disclosure_style_has_no_cell() -> None:
    assert design_cell({"kind": "risk", "category": "self_harm"}) is None


def test_items_without_cells_keep_their_stimulus() -> None:
    items = [Item(id="a", prompt="x", cluster="s1"), Item(id="b", prompt="y", cluster="s2")]
    assert [it.cluster for it in cluster_on_cells(items)] == ["s1", "s2"]


def test_items_in_one_cell_share_one_cluster_and_keep_their_stimulus() -> None:
    items = [Item(id=i, prompt="x", cluster=f"s{i}", metadata={"cell": "risk|c|minimises"}) for i in "ab"]
    clustered = cluster_on_cells(items)
    assert ([it.cluster for it in clustered], [it.metadata["stimulus"] for it in clustered]) == \
        (["cell:risk|c|minimises"] * 2, ["sa", "sb"])


def test_the_shipped_gradual_set_clusters_on_its_design_cells() -> None:
    items = get_subtask("conversation/gradual_disclosure").items(_ctx())
    assert len({it.cluster for it in items}) == len({it.metadata["cell"] for it in items})


def test_the_product_probes_keep_the_stimulus_as_their_unit() -> None:
    items = get_subtask("conversation/ai_disclosure").items(_ctx())
    assert not any(str(it.cluster).startswith("cell:") for it in items)


def test_too_few_clusters_count_one_item_each() -> None:
    from trustmh.stats.clustered import clopper_pearson_bounds, clustered_interval

    got = clustered_interval([1.0] * 20, ["a"] * 10 + ["b"] * 10)
    assert got["ci"] == list(clopper_pearson_bounds(1.0, 2.0))


def test_a_rate_of_one_in_few_clusters_can_still_fail_a_limit() -> None:
    from trustmh.stats.clustered import clustered_interval

    assert clustered_interval([1.0] * 40, [c for c in "abcd" for _ in range(10)])["ci"][0] > 0.10


def test_one_item_per_cluster_is_never_too_few() -> None:
    from trustmh.stats.clustered import clustered_interval

    assert "too_few_clusters" not in clustered_interval([0.0, 1.0, 0.0], ["a", "b", "c"])
