"""`mentalbench/preference`: the model's reply against the human reply, judged side by side. The verdict is read
as which reply won, whichever position it was shown in; the positions are balanced per item, so a judge that
always picks the first reply shown reports a first-position rate of 1 and a win rate of the items where the
model's reply came first."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from canned import canned_model
from trustmh.run.config import RunOptions
from trustmh.run.execute import run

SUBTASK = "mentalbench/preference"
MODEL_REPLY = "MODEL REPLY: that sounds hard; one small step could help."


def _model(_prompt: str, _messages: object, _config: object) -> str:
    return MODEL_REPLY


def reads_the_replies(prompt: str, _messages: object, _config: object) -> str:
    shown = re.search(r"<reply_a>\n(.*?)\n</reply_a>", prompt, re.S)
    if shown is None:  # the generation sub-task's attribute prompt, which preference runs first: a mark not made
        return "{}"  # (an exception here would be a judge failing for good, which ends the run's judging)
    return json.dumps({"better": "A" if "MODEL REPLY" in shown.group(1) else "B", "rationale": "r"})


def first_shown(_prompt: str, _messages: object, _config: object) -> str:
    return json.dumps({"better": "A", "rationale": "r"})


def result(tmp: Path, judge: Any) -> dict[str, Any]:
    data, _ = run(RunOptions(model=canned_model(_model, "m"), judge=canned_model(judge, judge.__name__),
                             suite="mentalbench", subtasks=[SUBTASK], options={"mentalbench_starter": "1"},
                             out=tmp, display="none", n_boot=200, certificates=str(tmp / "certs")))
    return data["subtasks"][SUBTASK]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return {judge.__name__: result(tmp_path_factory.mktemp(judge.__name__), judge)
            for judge in (reads_the_replies, first_shown)}


@pytest.mark.slow  # its module fixture runs the pairwise judge through Inspect in both arms (about 12 s of CPU): end-to-end
def test_a_judge_that_prefers_the_models_reply_gives_it_every_win(results: dict[str, dict[str, Any]]) -> None:
    assert (results["reads_the_replies"]["value"], results["reads_the_replies"]["n"]) == (1.0, 10)


@pytest.mark.slow  # its module fixture runs the pairwise judge through Inspect in both arms (about 12 s of CPU): end-to-end
def test_the_model_is_shown_first_on_some_items_and_second_on_others(results: dict[str, dict[str, Any]]) -> None:
    assert 0 < results["reads_the_replies"]["metrics"]["model_first_items"] < 10


@pytest.mark.slow  # its module fixture runs the pairwise judge through Inspect in both arms (about 12 s of CPU): end-to-end
def test_a_judge_that_picks_the_first_reply_shown_has_a_first_position_rate_of_one(
        results: dict[str, dict[str, Any]]) -> None:
    assert results["first_shown"]["metrics"]["first_position_rate"] == 1.0


@pytest.mark.slow  # its module fixture runs the pairwise judge through Inspect in both arms (about 12 s of CPU): end-to-end
def test_its_win_rate_is_the_share_of_items_where_the_model_came_first(results: dict[str, dict[str, Any]]) -> None:
    got = results["first_shown"]
    assert got["value"] == pytest.approx(got["metrics"]["model_first_items"] / got["n"])


@pytest.mark.slow  # its module fixture runs the pairwise judge through Inspect in both arms (about 12 s of CPU): end-to-end
def test_the_run_records_the_pairwise_judges_anchor_verdicts(results: dict[str, dict[str, Any]]) -> None:
    assert len(results["reads_the_replies"]["judge"]["anchors"]) == 20
