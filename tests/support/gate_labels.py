"""Issue 50's loopback review, shared by the tests that decide a judged conversation check on the run's own
two-rater labels (tests/judges/test_review_gate_*.py): play a synthetic set with canned models, draw
`review export --for-gate`, label it with scripted raters, `review import`, `trustmh gate` with no certificate,
and `trustmh plan` on the same set and policy (in-process: a fraction of a second on a small set)."""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from canned import canned_model

# the second rater flips every k-th item of the sample: 12 gives κ ≈ 0.8 with the first, 2 gives κ near 0
SECOND_RATER_FLIPS = {"pair": 12, "poor": 2}


def play(root: Path, subtask: str, rows: list[dict[str, Any]], policy: str, model: Callable[..., str],
         judge: Callable[..., str]) -> Path:
    """Write the set (-O sets=DIR) and the policy under `root`, play `subtask` into root/run; returns root."""
    from trustmh.run.config import RunOptions
    from trustmh.run.execute import run

    name = subtask.split("/", 1)[1]
    sets = root / "sets"
    sets.mkdir()
    (sets / f"{name}.json").write_text(json.dumps(rows), encoding="utf-8")
    (root / "policy.toml").write_text(policy, encoding="utf-8")
    data, code = run(RunOptions(model=canned_model(model), judge=canned_model(judge, f"judge-{name}"),
                                suite="trustmh", pillars=["conversation"], subtasks=[name], out=root / "run",
                                display="none", n_boot=50, options={"sets": str(sets)}))
    assert code == 0, data["errors"]
    return root


def label_csv(tmp_path: Path, sample: dict[str, Any], rater: str, flip_every: int = 0) -> Path:
    """`rater`'s CSV for the items assigned to them: the judge's value, flipped on every `flip_every`-th item of
    the sample (0: never)."""
    path = tmp_path / f"{rater}.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rater", "subtask", "item_id", "epoch", "label"])
        for i, s in enumerate(sample["items"]):
            if rater in s["raters"]:
                v = int(s["judge_value"])
                w.writerow([rater, s["subtask"], s["item_id"], s["epoch"],
                            1 - v if flip_every and i % flip_every == 0 else v])
    return path


def review_and_gate(played: Path, tmp_path: Path, raters: str, policy: Path | None = None,
                    labels_of: Callable[[Path, dict[str, Any]], list[Path]] | None = None) -> dict[str, Any]:
    """The gate's exit code and first row, the sample and the results after one review of a copy of the played
    run: "pair" (two raters agreeing at κ ≈ 0.8), "one" (one rater) or "poor" (a pair near κ 0), or the CSVs
    `labels_of(tmp_path, sample)` writes; drawn for and gated on `policy` (default: the played one)."""
    from trustmh.certify.review import export_review, import_review
    from trustmh.cli import main

    run_dir = Path(shutil.copytree(played / "run", tmp_path / "run"))
    policy = policy or played / "policy.toml"
    export_review(run_dir, n=None, seed=5, for_gate=policy)
    sample = json.loads((run_dir / "review" / "sample.json").read_text())
    if labels_of is not None:
        labels = labels_of(tmp_path, sample)
    else:
        labels = [label_csv(tmp_path, sample, "rater1")]
        if raters in SECOND_RATER_FLIPS:
            labels.append(label_csv(tmp_path, sample, "rater2", flip_every=SECOND_RATER_FLIPS[raters]))
    import_review(run_dir, labels, seed=1, n_boot=100, certs_dir=tmp_path / "review-certs")
    empty = tmp_path / "no-certificates"  # the gate sees no certificate at all
    empty.mkdir()
    code = main(["gate", str(run_dir), "--policy", str(policy), "--certificates", str(empty)])
    return {"code": code, "row": json.loads(next(run_dir.glob("gate*.json")).read_text())["checks"][0],
            "sample": sample, "results": json.loads((run_dir / "results.json").read_text())}


def plan_row(played: Path, subtask: str, out: Path) -> dict[str, Any]:
    """`trustmh plan`'s row for the policy's first check, planned on the played set with no certificate."""
    from trustmh.cli import main

    assert main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5", "--pillars",
                 "conversation", "--subtasks", subtask.split("/", 1)[1], "-O", f"sets={played / 'sets'}",
                 "--policy", str(played / "policy.toml"), "--out", str(out)]) == 0
    return json.loads((out / "plan.json").read_text(encoding="utf-8"))["gate"]["checks"][0]


def shipped_plan_row(policy: Path, subtask: str, out: Path) -> dict[str, Any]:
    """`trustmh plan`'s row for `policy`'s first check at the plan's defaults on the shipped set of `subtask`
    ("conversation/<name>"), with no certificate."""
    from trustmh.cli import main

    assert main(["plan", "--model", "openai/gpt-4o-mini", "--judge", "anthropic/claude-sonnet-4-5", "--pillars",
                 "conversation", "--subtasks", subtask.split("/", 1)[1], "--policy", str(policy),
                 "--certificates", str(out / "none"), "--out", str(out)]) == 0
    return json.loads((out / "plan.json").read_text(encoding="utf-8"))["gate"]["checks"][0]


def label_fixtures(subtask: str) -> tuple[Any, Any, Any, Any]:
    """The module fixtures `planned`, `pair`, `one` and `poor` (`LabelsDecideTheCheck`) on the module's own
    `played` fixture: `planned, pair, one, poor = label_fixtures(SID)` in a test module."""

    @pytest.fixture(scope="module", name="planned")
    def planned(played: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
        return plan_row(played, subtask, tmp_path_factory.mktemp("plan"))

    def reviewed(raters: str) -> Any:
        @pytest.fixture(scope="module", name=raters)
        def fixture(played: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
            return review_and_gate(played, tmp_path_factory.mktemp(raters), raters)
        return fixture

    return planned, reviewed("pair"), reviewed("one"), reviewed("poor")


class LabelsDecideTheCheck:
    """The facts every check decided by this run's two-rater labels shows, whatever its set: a test module
    subclasses it (as `Test…`) with `subtask` and `metric`, and provides the module fixtures `pair` (two raters
    at κ ≈ 0.8), `one` (one rater), `poor` (a pair near κ 0) and `planned` (the plan's row for the check)."""

    subtask: str
    metric: str

    def corrected(self, pair: dict[str, Any]) -> dict[str, Any]:
        return pair["results"]["subtasks"][self.subtask]["judge_corrected_rates"][self.metric]

    def test_the_corrected_rate_is_written_under_the_rate(self, pair: dict[str, Any]) -> None:
        assert self.corrected(pair)["n_labelled"] == len(pair["sample"]["items"])

    def test_the_scripted_pair_agrees_at_about_0_8(self, pair: dict[str, Any]) -> None:
        assert 0.7 <= self.corrected(pair)["pair"]["agreement"] <= 0.9

    def test_the_gate_line_names_the_labels_and_their_agreement(self, pair: dict[str, Any]) -> None:
        n = len(pair["sample"]["items"])
        assert f"corrected by {n} two-rater labels of this run, agreement κ 0." in pair["row"]["reason"]

    def test_the_plan_calls_the_check_decidable_by_labels(self, planned: dict[str, Any]) -> None:
        assert planned["decidable"] is True

    def test_the_plan_states_the_labels_the_export_draws(self, planned: dict[str, Any],
                                                         pair: dict[str, Any]) -> None:
        assert planned["labels_needed"] == len(pair["sample"]["items"])

    def test_after_that_many_labels_the_gate_decides_as_the_plan_said(self, planned: dict[str, Any],
                                                                       pair: dict[str, Any]) -> None:
        assert (planned["decidable"], pair["row"]["verdict"] in ("pass", "fail")) == (True, True)

    def test_one_rater_leaves_it_insufficient(self, one: dict[str, Any]) -> None:
        assert (one["code"], one["row"]["verdict"]) == (3, "insufficient")

    def test_one_rater_says_why_in_one_line(self, one: dict[str, Any]) -> None:
        reason = one["row"]["reason"]
        assert "by one rater per item: the raters' agreement cannot be measured" in reason and "\n" not in reason

    def test_a_pair_below_the_floor_leaves_it_insufficient(self, poor: dict[str, Any]) -> None:
        assert (poor["code"], poor["row"]["verdict"]) == (3, "insufficient")

    def test_a_pair_below_the_floor_says_why_in_one_line(self, poor: dict[str, Any]) -> None:
        reason = poor["row"]["reason"]
        assert "is below the floor 0.4: their labels decide nothing" in reason and "\n" not in reason
