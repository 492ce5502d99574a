"""Rescoring the original's released Ethics outputs must give its own summary numbers (docs/reproducing.md#ethics).

Every expected number is read from the released JSON and .txt files; nothing is hard-coded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trustmh.core import Record, RunContext, SubtaskResult, TrustmhError
from trustmh.pillars.ethics.reasoning import (
    SC_KEYS,
    EthicalReasoning,
    parse_choice_faithful,
    parse_judge_faithful,
)
from trustmh.pillars.ethics.rescore import OUTPUTS_REL, display_name, released_files, rescore_ethics

N_BOOT = 200


@pytest.fixture(scope="module")
def root(data_dir: Path) -> Path:
    return data_dir / "trustmh"


@pytest.fixture(scope="module")
def released(root: Path) -> dict[str, dict]:
    """Display name → the released JSON, read straight from the files."""
    out = {}
    for path in sorted((root / OUTPUTS_REL).glob("*-ethics_reasoning-*.json")):
        model = path.name.split("-ethics_reasoning-")[0]
        out[display_name(model)] = {"json": json.loads(path.read_text(encoding="utf-8")),
                                    "txt": path.with_suffix(".txt").read_text(encoding="utf-8"),
                                    "file_model": model}
    return out


@pytest.fixture(scope="module")
def rescored(root: Path) -> dict[str, tuple[SubtaskResult, list[Record]]]:
    return rescore_ethics(root, RunContext(mode="faithful", seed=0, n_boot=N_BOOT))


def test_twelve_models_with_display_names(rescored: dict, released: dict, root: Path) -> None:
    assert len(rescored) == 12 == len(released)
    assert set(rescored) == set(released)
    assert "Meditron3-70B" in rescored
    assert "Medtron3-70B" not in rescored
    assert set(released_files(root)) == {v["file_model"] for v in released.values()}


def test_accuracy_and_counts_exact(rescored: dict, released: dict) -> None:
    for model, (result, records) in rescored.items():
        cm = released[model]["json"]["classification_metrics"]
        assert result.value == cm["accuracy"], model
        assert result.metrics["accuracy"] == cm["accuracy"], model
        assert result.metrics["correct_count"] == cm["correct_count"], model
        assert result.metrics["total_count"] == cm["total_count"] == len(records), model
        for k in ("precision", "recall", "f1"):
            assert result.metrics[k] == cm[k], (model, k)
        assert result.n_invalid == 0
        assert result.status == "ok"


def test_sc_means_and_margins(rescored: dict, released: dict) -> None:
    for model, (result, _) in rescored.items():
        avg = released[model]["json"]["avg_scores"]
        for k in SC_KEYS:
            assert result.metrics[k] == pytest.approx(avg[k]["mean"], abs=1e-9), (model, k)
            assert result.metrics[f"{k}_ci_margin"] == pytest.approx(avg[k]["ci_margin"], abs=1e-9), (model, k)


_TXT_ACC = re.compile(r"^- Accuracy: ([0-9.]+)$", re.M)
_TXT_CORRECT = re.compile(r"^- Correct: (\d+)/(\d+)$", re.M)
_TXT_SC = re.compile(r"^- (sc[1-5]): ([0-9.]+) ± ([0-9.]+)$", re.M)


def test_txt_summary_at_four_decimals(rescored: dict, released: dict) -> None:
    for model, (result, _) in rescored.items():
        txt = released[model]["txt"]
        acc = _TXT_ACC.findall(txt)
        assert len(acc) == 1, model
        assert f"{result.value:.4f}" == acc[0], model
        correct, total = _TXT_CORRECT.search(txt).groups()  # type: ignore[union-attr]
        assert (result.metrics["correct_count"], result.metrics["total_count"]) == (int(correct), int(total))
        sc = {k: (mean, margin) for k, mean, margin in _TXT_SC.findall(txt)}
        assert set(sc) == set(SC_KEYS), model
        for k, (mean, margin) in sc.items():
            assert f"{result.metrics[k]:.4f}" == mean, (model, k)
            assert f"{result.metrics[f'{k}_ci_margin']:.4f}" == margin, (model, k)


def test_records_and_judge_info(rescored: dict, released: dict) -> None:
    for model, (result, records) in rescored.items():
        data = released[model]["json"]
        assert result.judge == {"model": data["judge_model"], "validated": False}
        assert result.direction == "higher"
        by_id = {j["sample_id"]: j for j in data["judged"]}
        for rec in records:
            assert rec.subtask == EthicalReasoning.id
            j = by_id[int(rec.metadata["index"])]
            assert rec.metadata["target"] == j["ground_truth_option"]
            assert rec.score["choice"] == j["model_choice_option"]
            assert rec.score["correct"] == j["classification_correct"]
            assert [rec.score[k] for k in SC_KEYS] == [j["judge_parsed"][k] for k in SC_KEYS]
        api = "response" in data["results"][0]
        assert {r.metadata["choice_source"] for r in records} == {
            "response.content" if api else "model_choice_option"}


def test_faithful_parser_reproduces_released_choices(released: dict) -> None:
    api_models = [m for m, v in released.items() if all("response" in r for r in v["json"]["results"])]
    assert len(api_models) == 6
    for model in api_models:
        data = released[model]["json"]
        judged = {j["sample_id"]: j["model_choice_option"] for j in data["judged"]}
        assert len(data["results"]) == 125
        for r in data["results"]:
            assert parse_choice_faithful(r["response"]["content"]) == judged[r["sample_id"]], (model, r["sample_id"])


def test_faithful_judge_parser_reproduces_judge_parsed(released: dict) -> None:
    for model, v in released.items():
        for j in v["json"]["judged"]:
            assert parse_judge_faithful(j["judge_raw"]["content"]) == j["judge_parsed"], (model, j["sample_id"])


def test_rescore_uses_live_aggregate(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = EthicalReasoning.aggregate

    def spy(self: EthicalReasoning, records: list[Record], ctx: RunContext) -> SubtaskResult:
        calls.append(len(records))
        return original(self, records, ctx)

    monkeypatch.setattr(EthicalReasoning, "aggregate", spy)
    out = rescore_ethics(root, RunContext(mode="faithful", n_boot=50))
    assert calls == [125] * len(out)


def test_rescore_default_mode_runs(root: Path, released: dict) -> None:
    out = rescore_ethics(root, RunContext(mode="default", n_boot=50))
    for model, (result, _) in out.items():
        assert result.metrics["correct_count"] == released[model]["json"]["classification_metrics"]["correct_count"]
        assert result.metrics["macro_f1"] is not None
        assert result.metrics["judge_correctness_gap"] is not None
        assert result.metrics["sc1_ci"] is not None


def test_rescore_errors(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match="EthicMH.csv"):
        rescore_ethics(tmp_path, RunContext())


def _released_copy(tmp_path: Path, root: Path, sc1: list[object]) -> Path:
    """A synthetic released file (one model, one judged item per sc1 value, the other scores 3) beside a copy of
    the EthicMH table the rescore reads."""
    data = tmp_path / "TrustMH_Bench/DimGroup2/Ethics/data"
    data.mkdir(parents=True)
    (data / "EthicMH.csv").write_bytes((root / "TrustMH_Bench/DimGroup2/Ethics/data/EthicMH.csv").read_bytes())
    outputs = tmp_path / OUTPUTS_REL
    outputs.mkdir(parents=True)
    released = {"judge_model": "judge-x",
                "results": [{"sample_id": i, "model_choice_option": "A", "model_reasoning": "r"}
                            for i in range(len(sc1))],
                "judged": [{"sample_id": i, "judge_parsed": {"sc1": v, "sc2": 3, "sc3": 3, "sc4": 3, "sc5": 3}}
                           for i, v in enumerate(sc1)]}
    (outputs / "m-ethics_reasoning-20260101_00_00_00-3.json").write_text(json.dumps(released), encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("bad", [99, -3, 0, 6, 2.5, "high", True, "4.5"])
def test_a_judge_score_outside_1_to_5_is_named_and_not_averaged(bad: object, tmp_path: Path, root: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    copy = _released_copy(tmp_path, root, [2, bad, 4])
    result, _ = rescore_ethics(copy, RunContext(mode="faithful", seed=0, n_boot=N_BOOT))["m"]
    assert result.metrics["sc1"] == 3.0
    assert result.metrics["sc1_n"] == 2
    named = f"judged row 1: judge_parsed.sc1 not a score 1-5 ({bad!r}); score not used"
    assert any(named in note for note in result.notes)
    assert named in capsys.readouterr().err


def test_a_score_given_as_a_numeric_string_is_used(tmp_path: Path, root: Path) -> None:
    copy = _released_copy(tmp_path, root, [2, "4", 4.0])
    result, _ = rescore_ethics(copy, RunContext(mode="faithful", seed=0, n_boot=N_BOOT))["m"]
    assert result.metrics["sc1_n"] == 3
