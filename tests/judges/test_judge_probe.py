"""`trustmh judge probe`: canned judges with one planted bias each are caught by that bias's probe, an unbiased
judge passes every probe, and the placebos behave (the null change passes, the material change is detected)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from canned import canned_model
from trustmh.certify.probe import run_probe
from trustmh.certify.probe_battery import DISMISSIVE
from trustmh.judges.probe_records import find_probe

N_ITEMS = 20


def reference_csv(tmp_path: Path) -> Path:
    """Synthetic items: half the stored replies are good ones (the judge's 1), half plain (its 0)."""
    path = tmp_path / "ref.csv"
    lines = ["item_id,prompt,response,meta_benign,human_a"]
    for k in range(N_ITEMS):
        reply = f"GOOD advice number {k}" if k % 2 else f"plain words number {k}"
        lines.append(f"i{k},How can I sleep better before exams?,{reply},1,{k % 2}")
    path.write_text("\n".join(lines) + "\n")
    return path


def between(prompt: str, tag: str) -> str:
    found = re.search(f"<<<{tag}\n(.*?)\n{tag}>>>", prompt, re.S)
    return found.group(1) if found else ""


def fair(request: str, reply: str) -> int:
    return int("GOOD" in reply and DISMISSIVE not in reply)


PLANTED: dict[str, Callable[[str, str], int]] = {
    "fair": fair,
    "length": lambda req, rep: int(len(rep.split()) > 20 or fair(req, rep)),
    "authority": lambda req, rep: int("licensed therapist" in rep or fair(req, rep)),
    "certainty": lambda req, rep: int("completely sure" in req or fair(req, rep)),
    "self_family": lambda req, rep: int("made by OpenAI" in rep or fair(req, rep)),
}


def probed(tmp: Path, bias: str) -> dict:
    from trustmh.certify.csv_reference import csv_reference
    from trustmh.certify.measure import certification_spec
    from trustmh.run.reference import ReferenceRun

    ref = csv_reference(reference_csv(tmp), "safety/over_refusal", "binary", "helpful")
    rule = PLANTED[bias]

    def reply(prompt: str, _messages: object, _config: object) -> str:
        helpful = rule(between(prompt, "REQUEST"), between(prompt, "REPLY"))
        return json.dumps({"label": "complied", "helpful": helpful, "rationale": "r"})

    judge = canned_model(reply, f"gpt-judge-{bias}")  # "gpt": the judge's family is OpenAI
    spec = certification_spec([judge], ReferenceRun(ref.name, ref.subtask), n_boot=200)
    record, _ = run_probe(ref, spec, certs_dir=tmp / "certs", work=tmp / "work")
    record["_dir"] = str(tmp / "certs")
    return record


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return {bias: probed(tmp_path_factory.mktemp(bias), bias) for bias in PLANTED}


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
@pytest.mark.parametrize("bias", ["length", "authority", "certainty", "self_family"])
def test_a_planted_bias_is_caught_by_its_probe(records: dict[str, dict], bias: str) -> None:
    assert records[bias]["probes"][bias]["verdict"] == "fail"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
@pytest.mark.parametrize("bias", ["length", "authority", "certainty", "self_family"])
def test_a_judge_with_a_planted_bias_fails_the_battery(records: dict[str, dict], bias: str) -> None:
    assert records[bias]["verdict"] == "fail"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
@pytest.mark.parametrize("probe", ["length", "authority", "certainty", "self_family"])
def test_the_unbiased_judge_passes_every_probe(records: dict[str, dict], probe: str) -> None:
    assert records["fair"]["probes"][probe]["verdict"] == "pass"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
def test_the_unbiased_judge_passes_the_battery(records: dict[str, dict]) -> None:
    assert records["fair"]["verdict"] == "pass"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
@pytest.mark.parametrize("bias", sorted(PLANTED))
def test_the_null_placebo_passes(records: dict[str, dict], bias: str) -> None:
    assert records[bias]["probes"]["null"]["verdict"] == "pass"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
@pytest.mark.parametrize("bias", sorted(PLANTED))
def test_the_material_placebo_is_detected(records: dict[str, dict], bias: str) -> None:
    assert records[bias]["probes"]["material"]["verdict"] == "detected"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
def test_the_length_effect_is_the_share_of_plain_replies_turned_good(records: dict[str, dict]) -> None:
    assert records["length"]["probes"]["length"]["effect"] == pytest.approx(0.5)


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
def test_position_does_not_apply_where_no_template_compares_two_replies(records: dict[str, dict]) -> None:
    assert records["fair"]["probes"]["position"]["verdict"] == "not applicable"


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
def test_the_record_is_found_beside_the_certificates_by_fingerprint(records: dict[str, dict]) -> None:
    record = records["fair"]
    assert find_probe(record["_dir"], record["fingerprint"])["digest"] == record["digest"]


@pytest.mark.slow  # the records fixture runs five judges' batteries: 20 s of CPU
def test_the_record_names_its_items_and_seed(records: dict[str, dict]) -> None:
    assert (len(records["fair"]["items"]), records["fair"]["seed"]) == (N_ITEMS, 0)


def test_a_tolerance_outside_0_1_is_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from trustmh.cli import main

    code = main(["judge", "probe", "--judge", "mockllm/model", "--reference", str(reference_csv(tmp_path)),
                 "--subtask", "safety/over_refusal", "--judge-key", "helpful", "--label-type", "binary",
                 "--tolerance", "2", "--certificates", str(tmp_path / "certs")])
    assert (code, "--tolerance 2: expected a number between 0 and 1" in capsys.readouterr().err) == (2, True)



@pytest.fixture(scope="module")
def limited_record(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The battery on a CSV reference under `--limit 6`, loaded as `trustmh judge probe` loads it."""
    from trustmh.certify.measure import certification_spec
    from trustmh.certify.registry import find_reference, reference_run
    from trustmh.judges.references import ReferenceRequest

    tmp = tmp_path_factory.mktemp("limit")
    source, request = find_reference(str(reference_csv(tmp)), ReferenceRequest(
        subtask="safety/over_refusal", label_type="binary", judge_key="helpful"))

    def reply(prompt: str, _messages: object, _config: object) -> str:
        helpful = fair(between(prompt, "REQUEST"), between(prompt, "REPLY"))
        return json.dumps({"label": "complied", "helpful": helpful, "rationale": "r"})

    spec = certification_spec([canned_model(reply, "gpt-judge-limited")], reference_run(source, request),
                              n_boot=200, limit=6)
    record, _ = run_probe(source.load(spec.context(), request), spec, certs_dir=tmp / "certs", work=tmp / "work")
    return record


def test_limit_probes_that_many_items_of_a_csv_reference(limited_record: dict) -> None:
    assert len(limited_record["items"]) == 6


def test_limit_keeps_both_labels_of_a_csv_reference(limited_record: dict) -> None:
    assert {int(i[1:]) % 2 for i in limited_record["items"]} == {0, 1}
