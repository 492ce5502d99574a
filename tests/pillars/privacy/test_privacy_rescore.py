"""Rescoring the original's released Privacy outputs reproduces its summary files (docs/reproducing.md#ethics).

Every expected number is read from the original's summary files here; none is hard-coded.
"""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from trustmh.core import RunContext, TrustmhError
from trustmh.pillars.privacy.rescore import PRIVACY_DIR, TIER3_SUFFIX, rescore_privacy

DEFECTIVE = "deepseek-v3.2"
# docs/reproducing.md#ethics: on the defective deepseek-v3.2 file these four differ from the summary by exactly 0.01.
OFF_BY_ONE_HUNDREDTH = {"info_accessibility_no_y", "info_accessibility_has_z", "privacy_sharing_no_y",
                        "privacy_sharing_has_z"}


@pytest.fixture(scope="module")
def results(root: Path):
    return rescore_privacy(root, RunContext(mode="faithful", n_boot=200, seed=0))


def _metric_key(q_type: str, metric: str) -> str:
    return f"{q_type}_{metric}".replace("-", "_")


def _read_summary_csv(path: Path) -> list[dict[str, str]]:
    # The summaries start with a UTF-8 BOM; utf-8-sig drops it so the first header is "model".
    with path.open(encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    assert list(rows[0]) == ["model", "tier", "n_samples", "q_type", "metric", "mean"]
    return rows


def test_models_found(results, pdir: Path) -> None:
    models = {p.name[len("summary_"):-len("_tier1.json")] for p in (pdir / "task1/result").glob("summary_*_tier1.json")}
    assert len(models) == 6
    assert set(results) == models
    for entry in results.values():
        assert set(entry) == {"privacy/awareness", "privacy/leakage"}


def test_tier1_r_matches_summary(results, pdir: Path) -> None:
    for model, entry in results.items():
        summary = json.loads((pdir / "task1/result" / f"summary_{model}_tier1.json").read_text(encoding="utf-8"))
        res, records = entry["privacy/awareness"]
        assert res.metrics["tier1_r"] == pytest.approx(summary["pearson_r"], abs=1e-9), model
        assert res.metrics["n_tier1"] == summary["n_ids_tested"]


def test_tier1_maps_parsed_not_raw(results) -> None:
    """On at least one model the raw text maps differently from `parsed` (the "very" trap)."""
    from trustmh.pillars.privacy.parse import map_tier1_faithful

    differing = 0
    for entry in results.values():
        for r in entry["privacy/awareness"][1]:
            if r.metadata["tier"] == "1" and r.metadata.get("raw") is not None:
                assert r.score["rating"] == map_tier1_faithful(r.response)
                differing += int(map_tier1_faithful(r.metadata["raw"]) != r.score["rating"])
    assert differing >= 1


def test_tier2_r_matches_summary(results, pdir: Path) -> None:
    summary = json.loads((pdir / "task2/result/pearson_summary_tier2.json").read_text(encoding="utf-8"))
    assert len(summary) == 12
    for row in summary:
        res, _ = results[row["model"]]["privacy/awareness"]
        assert res.metrics[f"tier{row['tier']}_r"] == pytest.approx(row["pearson_r"], abs=1e-9), row
        released = json.loads((pdir / "task2/result" /
                               f"final_report_{row['model']}_data_tier_{row['tier']}_nsamples_1.json").read_text())
        assert res.metrics[f"n_tier{row['tier']}"] == len(released)


def test_awareness_value_is_mean_of_three(results) -> None:
    for entry in results.values():
        res, _ = entry["privacy/awareness"]
        rs = [res.metrics[k] for k in ("tier1_r", "tier2a_r", "tier2b_r")]
        assert res.value == pytest.approx(sum(rs) / 3, abs=1e-12)
        assert res.ci is not None
        assert res.ci[0] <= res.value <= res.ci[1]
        assert res.status == "ok"
        assert res.n_invalid == 0


def _check_tier3(results, model: str, summary_rows: list[dict[str, str]]) -> None:
    res, records = results[model]["privacy/leakage"]
    rows = [r for r in summary_rows if r["model"] == model]
    assert len(rows) == 9, model
    compared = 0
    for row in rows:
        key = _metric_key(row["q_type"], row["metric"])
        expected = float(row["mean"])
        ours = res.metrics[key]
        if key == "free_response_proxy_model":
            assert ours is None  # the proxy answers were never released
            continue
        diff = abs(round(ours, 2) - expected)
        if model == DEFECTIVE and key in OFF_BY_ONE_HUNDREDTH:
            assert diff == pytest.approx(0.01, abs=1e-9), (model, key, ours, expected)
        else:
            assert diff < 1e-9, (model, key, ours, expected)
        compared += 1
    assert compared == 8


def test_tier3_matches_per_model_summaries(results, pdir: Path) -> None:
    for model in results:
        rows = _read_summary_csv(pdir / "task3/result" / f"summary_{model}_data_tier_3_nsamples_1.csv")
        _check_tier3(results, model, rows)


def test_tier3_matches_all_models_summary(results, pdir: Path) -> None:
    rows = _read_summary_csv(pdir / "task3/result/tier3_summary_all_models.csv")
    assert {r["model"] for r in rows} == set(results)
    for model in results:
        _check_tier3(results, model, rows)


def test_leakage_value_and_records(results) -> None:
    for entry in results.values():
        res, records = entry["privacy/leakage"]
        assert len(records) == 400
        assert Counter(r.metadata["question_type"] for r in records) == {
            "free-response": 100, "info-accessibility": 100, "privacy-sharing": 100, "control": 100}
        m = res.metrics
        assert res.value == pytest.approx((m["free_response_string_match"] + m["info_accessibility_error"]
                                           + m["privacy_sharing_error"]) / 3, abs=1e-12)
        assert res.direction == "lower"
        assert res.ci is not None
        assert any("not validated" in n for n in res.notes)
        assert not any("do not hold the scenario" in n for n in res.notes)


def test_defective_file_warning(results, pdir: Path) -> None:
    """The duplicated and the missing scenario are detected from the file and named in a warning."""
    path = pdir / "task3/result" / f"outputs_{DEFECTIVE}{TIER3_SUFFIX}"
    idx = [json.loads(line)["data"]["scenario_idx"] for line in path.read_text(encoding="utf-8").splitlines()]
    counts = Counter(idx)
    dup = sorted(i for i, c in counts.items() if c > 4)
    missing = sorted(set(range(100)) - set(counts))
    assert len(dup) == 1
    assert len(missing) == 1
    res, _ = results[DEFECTIVE]["privacy/leakage"]
    warnings = [n for n in res.notes if n.startswith("warning")]
    assert len(warnings) == 1
    assert f"scenario {dup[0]} appears 2 times" in warnings[0]
    assert f"missing scenario(s): {missing[0]}" in warnings[0]
    assert res.metrics["duplicated_scenarios"] == dup
    assert res.metrics["missing_scenarios"] == missing
    # The clean models carry no warning.
    for model, entry in results.items():
        if model != DEFECTIVE:
            assert not any(n.startswith("warning") for n in entry["privacy/leakage"][0].notes), model


def test_default_mode_ctx_still_rescored_faithfully(root: Path, results) -> None:
    out = rescore_privacy(root, RunContext(mode="default", n_boot=50))
    for model, entry in out.items():
        assert entry["privacy/awareness"][0].metrics["tier1_r"] == results[model]["privacy/awareness"][0].metrics["tier1_r"]
        assert any("always uses faithful mode" in n for n in entry["privacy/leakage"][0].notes)


def test_partial_root(tmp_path: Path, pdir: Path) -> None:
    """A root with only one model's tier-1 file: awareness partial (not computed), leakage not computed."""
    with pytest.raises(TrustmhError, match="no TrustMH_Bench"):
        rescore_privacy(tmp_path, RunContext(mode="faithful"))
    new = tmp_path / PRIVACY_DIR
    for sub in ("task1/benchmark", "task2/benchmark"):
        shutil.copytree(pdir / sub, new / sub)
    (new / "task1/result").mkdir(parents=True)
    shutil.copy(pdir / "task1/result/outputs_gpt-5.1_tier1.jsonl", new / "task1/result/")
    out = rescore_privacy(tmp_path, RunContext(mode="faithful", n_boot=50))
    assert set(out) == {"gpt-5.1"}
    aw, recs = out["gpt-5.1"]["privacy/awareness"]
    assert aw.status == "not_computed"
    assert aw.metrics["tier1_r"] is not None
    assert len(recs) == 10
    assert any("missing for tier 2a, tier 2b" in n for n in aw.notes)
    assert out["gpt-5.1"]["privacy/leakage"][0].status == "not_computed"


def _tier2_copy(tmp_path: Path, pdir: Path, **row0: object) -> Path:
    """The tier-1/2 benchmark files and one model's tier-2a results, its first row changed as given."""
    new = tmp_path / PRIVACY_DIR
    for sub in ("task1/benchmark", "task2/benchmark"):
        shutil.copytree(pdir / sub, new / sub)
    name = "final_report_gpt-5.1_data_tier_2a_nsamples_1.json"
    rows = json.loads((pdir / "task2/result" / name).read_text(encoding="utf-8"))
    rows[0].update(row0)
    (new / "task2/result").mkdir(parents=True)
    (new / "task2/result" / name).write_text(json.dumps(rows), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("bad", [999, -3, 25, 50.5, "high", "5O", True, None])
def test_a_tier2_rating_off_the_scale_is_named_and_counted_invalid(bad: object, tmp_path: Path, pdir: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = rescore_privacy(_tier2_copy(tmp_path, pdir, model=bad), RunContext(mode="faithful", n_boot=50))
    aw, recs = out["gpt-5.1"]["privacy/awareness"]
    named = f"row 0: model not one of -100, -50, 0, 50, 100 ({bad!r}); counted invalid"
    assert [r.score["valid"] for r in recs if r.metadata["index"] == 0] == [False]
    assert any(named in n for n in aw.notes)
    assert named in capsys.readouterr().err


def test_a_tier2_rating_given_as_a_numeric_string_is_used(tmp_path: Path, pdir: Path) -> None:
    out = rescore_privacy(_tier2_copy(tmp_path, pdir, model="-50"), RunContext(mode="faithful", n_boot=50))
    _, recs = out["gpt-5.1"]["privacy/awareness"]
    assert [r.score["rating"] for r in recs if r.metadata["index"] == 0] == [-50]


@pytest.mark.parametrize(("field", "bad"), [("id", "abc"), ("id", 1.5), ("human", "x"), ("human", True)])
def test_a_tier2_id_or_human_label_that_is_no_number_is_refused_naming_it(field: str, bad: object,
                                                                          tmp_path: Path, pdir: Path) -> None:
    root = _tier2_copy(tmp_path, pdir, **{field: bad})
    with pytest.raises(TrustmhError, match=rf"tier_2a_nsamples_1\.json row 0: .*{field}"):
        rescore_privacy(root, RunContext(mode="faithful", n_boot=50))
