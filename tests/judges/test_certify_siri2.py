"""`trustmh judge certify --reference siri2` is a run like every certification (issue 48): the judge's ratings
of the SIRI-2 replies (the synthetic fixture, tests/fixtures/siri2) go through the one Inspect call, so the
certification leaves an Inspect eval log and the same certification run again asks the judge nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from canned import canned_model
from fixture_paths import FIXTURES
from trustmh.core import TrustmhError

SIRI2 = FIXTURES / "siri2"
EXPERT_MEANS = {"1A": -3, "1B": 2, "2A": -2, "2B": 3, "3A": 1, "3B": -1, "4A": 2}  # the fixture's, invented
TAG = re.compile(r"\[(\d+[AB])\]")


def _certify(asked: list[str], certs: Path, work: Path, thresholds: list[str] | None = None,
             limit: int | None = None) -> dict:
    """One certification of a canned judge that rates every reply as the experts do; `asked` gets each prompt
    the judge is sent."""
    from trustmh.certify.measure import certification_spec, certify
    from trustmh.certify.registry import find_reference, reference_run
    from trustmh.judges.references import ReferenceRequest

    def reply(prompt: str, _messages: object, _config: object) -> str:
        asked.append(prompt)
        tag = TAG.search(prompt)
        return json.dumps({"rating": EXPERT_MEANS[tag.group(1)] if tag else 0})

    source, request = find_reference("siri2", ReferenceRequest(path=str(SIRI2)))
    spec = certification_spec([canned_model(reply, "siri2-judge")], reference_run(source, request), n_boot=50,
                              limit=limit)
    cert, _ = certify(source.load(spec.context(), request), spec, certs_dir=certs, work=work, thresholds=thresholds)
    return cert


@pytest.fixture(scope="module")
def certified_twice(tmp_path_factory: pytest.TempPathFactory) -> dict:
    tmp = tmp_path_factory.mktemp("siri2-certify")
    first: list[str] = []
    again: list[str] = []
    cert = _certify(first, tmp / "certs", tmp / "work")
    cert_again = _certify(again, tmp / "certs", tmp / "work")
    return {"first": first, "again": again, "cert": cert, "cert_again": cert_again, "work": tmp / "work"}


def test_the_judge_rates_every_reply_once(certified_twice: dict) -> None:
    assert len(certified_twice["first"]) == len(EXPERT_MEANS)


def test_the_certification_writes_an_inspect_eval_log(certified_twice: dict) -> None:
    assert list((certified_twice["work"] / "logs").glob("*.eval"))


def test_the_same_certification_again_asks_the_judge_nothing(certified_twice: dict) -> None:
    assert certified_twice["again"] == []


def test_the_resumed_certification_has_the_same_figures(certified_twice: dict) -> None:
    assert certified_twice["cert_again"]["agreement"] == certified_twice["cert"]["agreement"]


def test_a_judge_rating_as_the_experts_do_is_certified(certified_twice: dict) -> None:
    assert certified_twice["cert"]["reference_quality"]["status"] == "certified"


def test_a_threshold_below_the_expert_floor_is_refused_before_any_call(tmp_path: Path) -> None:
    asked: list[str] = []
    with pytest.raises(TrustmhError, match=r"^--threshold siri2_total=1 is below the expert floor"):
        _certify(asked, tmp_path / "certs", tmp_path / "work", thresholds=["siri2_total=1"])
    assert asked == []


def _rated_as_the_experts(messages: list[dict], _request: dict) -> str:
    from loopback_server import message_text

    tag = TAG.search(message_text(messages[-1]))
    return json.dumps({"rating": EXPERT_MEANS[tag.group(1)] if tag else 0})


@pytest.fixture(scope="module")
def batched(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """`judge certify --reference siri2 --batch` against a loopback Batch API: the ratings are batched as any
    certification's judge calls are (the SIRI-2 used to ask one request at a time, live)."""
    from batch_server import BatchServer
    from trustmh.cli import main

    certs = tmp_path_factory.mktemp("siri2-batch")
    with pytest.MonkeyPatch.context() as mp, BatchServer(_rated_as_the_experts) as server:
        for key, value in {**server.env(), "TRUSTMH_BATCH_TICK": "0.1", "TRUSTMH_BATCH_SEND_DELAY": "0.3"}.items():
            mp.setenv(key, value)
        # a model name of its own (Inspect keeps a model's client for the process's life), a gpt-4o one so that
        # Inspect sends chat completions, which the server speaks, not the Responses API
        code = main(["judge", "certify", "--judge", server.model_name("gpt-4o-siri2"), "--reference", "siri2",
                     "--reference-path", str(SIRI2), "--certificates", str(certs), "--n-boot", "200",
                     "--max-retries", "1", "--batch"])
    return {"code": code, "live": sum(server.live_bodies.values()), "answered": sum(server.answered_bodies.values())}


def test_a_batched_certification_asks_nothing_live(batched: dict) -> None:
    assert batched["live"] == 0


def test_a_batched_certification_gets_every_rating_from_a_batch(batched: dict) -> None:
    assert batched["answered"] == len(EXPERT_MEANS)


def test_a_batched_certification_of_a_judge_rating_as_the_experts_do_passes(batched: dict) -> None:
    assert batched["code"] == 0


def test_a_limited_certification_asks_the_judge_about_that_many_replies(tmp_path: Path) -> None:
    asked: list[str] = []
    _certify(asked, tmp_path / "certs", tmp_path / "work", limit=4)
    assert len(asked) == 4
