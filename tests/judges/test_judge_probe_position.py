"""The position probe of `trustmh judge probe` on the one judge template that compares two replies
(`mentalbench/preference`): a canned judge that prefers whichever reply is shown first is caught, a judge that
reads the replies passes, and the placebos behave for both (the null change passes, the material change is
detected)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.certify.probe import run_probe
from trustmh.certify.probe_battery import DISMISSIVE

N_ITEMS = 20
SUBTASK = "mentalbench/preference"


def reference_csv(tmp_path: Path) -> Path:
    """Synthetic pairs of equally plain replies; the marker `alpha` (in the reply under judgement on odd items,
    in the other reply on even ones) is what a reading judge decides by. The reply under judgement is shown
    first on half the items."""
    lines = ["item_id,prompt,response,meta_other_reply,meta_model_first,human_a"]
    for k in range(N_ITEMS):
        mine, other = f"plain words number {k}", f"other plain words {k}"
        if k % 2:
            mine += " alpha"
        else:
            other += " alpha"
        lines.append(f"p{k},I cannot sleep before exams.,{mine},{other},{(k // 2) % 2},{k % 2}")
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def quality(reply: str) -> int:
    return 0 if DISMISSIVE in reply else 1


def choose(prompt: str, first_on_ties: bool) -> str:
    a, b = (re.search(f"<reply_{x}>\n(.*?)\n</reply_{x}>", prompt, re.S).group(1) for x in "ab")  # type: ignore[union-attr]
    if quality(a) != quality(b):
        return "A" if quality(a) > quality(b) else "B"
    if first_on_ties:  # the planted bias: between replies of equal worth, the first one shown
        return "A"
    return "A" if "alpha" in a else "B"


def probed(tmp: Path, first_on_ties: bool) -> dict:
    from trustmh.certify.csv_reference import csv_reference
    from trustmh.certify.measure import certification_spec
    from trustmh.run.reference import ReferenceRun

    ref = csv_reference(reference_csv(tmp), SUBTASK, "binary", "model_preferred")

    def reply(prompt: str, _messages: object, _config: object) -> str:
        return json.dumps({"better": choose(prompt, first_on_ties), "rationale": "r"})

    judge = canned_model(reply, "position-biased" if first_on_ties else "reads-the-replies")
    spec = certification_spec([judge], ReferenceRun(ref.name, ref.subtask), n_boot=200)
    record, _ = run_probe(ref, spec, certs_dir=tmp / "certs", work=tmp / "work")
    return record


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return {"biased": probed(tmp_path_factory.mktemp("biased"), True),
            "fair": probed(tmp_path_factory.mktemp("fair"), False)}


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
def test_a_judge_that_prefers_the_first_position_is_caught_by_the_position_probe(records: dict[str, dict]) -> None:
    assert records["biased"]["probes"]["position"]["verdict"] == "fail"


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
def test_its_effect_is_every_verdict_turned_round(records: dict[str, dict]) -> None:
    assert records["biased"]["probes"]["position"]["effect"] == pytest.approx(-1.0)


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
def test_the_position_biased_judge_fails_the_battery(records: dict[str, dict]) -> None:
    assert records["biased"]["reason"] == "bias found: position"


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
def test_a_judge_that_reads_the_replies_passes_the_position_probe(records: dict[str, dict]) -> None:
    assert records["fair"]["probes"]["position"]["verdict"] == "pass"


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
def test_a_judge_that_reads_the_replies_passes_the_battery(records: dict[str, dict]) -> None:
    assert records["fair"]["verdict"] == "pass"


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
@pytest.mark.parametrize("judge", ["biased", "fair"])
def test_the_null_placebo_passes(records: dict[str, dict], judge: str) -> None:
    assert records[judge]["probes"]["null"]["verdict"] == "pass"


@pytest.mark.slow  # its module fixture runs the position probe's batteries through Inspect (about 6 s of CPU): end-to-end
@pytest.mark.parametrize("judge", ["biased", "fair"])
def test_the_material_placebo_is_detected(records: dict[str, dict], judge: str) -> None:
    assert records[judge]["probes"]["material"]["verdict"] == "detected"
