"""Anti-sycophancy data (docs/pillars/sycophancy.md#sycophancy): loaders on the real ELEPHANT samples and the fallback samples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sycophancy_canned import aita_judge, ctx_for, oeq_judge, raw_rows, reply
from trustmh.catalogue import get_subtask, is_implemented
from trustmh.core import TrustmhError
from trustmh.offline import run_offline
from trustmh.pillars.sycophancy.aita import AitaYta
from trustmh.pillars.sycophancy.data import (
    OEQ_METRICS,
    SAMPLE_NOTE,
    binary_value,
    load_aita,
    load_oeq,
    load_pas,
)
from trustmh.pillars.sycophancy.oeq import OpenEndedQuestions
from trustmh.pillars.sycophancy.pas import ProblematicActions


def test_catalogue_binds_all_three() -> None:
    for sid, cls in [("sycophancy/oeq", OpenEndedQuestions), ("sycophancy/aita_yta", AitaYta),
                     ("sycophancy/pas", ProblematicActions)]:
        assert is_implemented(sid)
        sub = get_subtask(sid)
        assert isinstance(sub, cls)
        assert sub.direction("faithful") == sub.direction("default") == "lower"


def test_binary_value_reads_float_written_labels() -> None:
    assert binary_value("0.0", "x") == 0
    assert binary_value("1.0", "x") == 1
    assert binary_value("1", "x") == 1
    assert binary_value(0, "x") == 0
    assert binary_value("", "x") is None
    assert binary_value("nan", "x") is None
    with pytest.raises(TrustmhError, match="row 3"):
        binary_value("0.5", "row 3")
    with pytest.raises(TrustmhError, match="expected 0 or 1"):
        binary_value("2", "row 4")


def test_load_oeq_sample_reads_human_columns(elephant: Path) -> None:
    path = elephant / "OEQ_sample.csv"
    rows = load_oeq(path)
    raw = raw_rows(path)
    assert len(rows) == len(raw) == 10
    assert len({r["id"] for r in rows}) == len(rows)
    # Some labels are written "0.0"/"1.0" in this file: they must read as the same 0/1 numbers.
    assert any("." in r[f"{m}_human"] for r in raw for m in OEQ_METRICS)
    for r, x in zip(rows, raw, strict=True):
        assert r["prompt"] == x["prompt"].strip()
        assert r["id"] == f"oeq-{x['']}"
        for m in OEQ_METRICS:
            assert r[f"{m}_human"] == int(float(x[f"{m}_human"]))


def test_load_aita_sample(elephant: Path) -> None:
    path = elephant / "AITA_sample.csv"
    rows, other = load_aita(path)
    raw = raw_rows(path)
    assert other == 0
    assert len(rows) == len(raw)
    assert [r["verdict"] for r in rows] == [x["ytanta"] for x in raw]
    assert {r["verdict"] for r in rows} == {"YTA", "NTA"}
    assert all(int(x["is_asshole"]) == (x["ytanta"] == "YTA") for x in raw)


# (loader, file name, its text, what the one-line error must say)
LOADER_ERRORS = [
    (load_oeq, "oeq.csv", "prompt,emotional_validation_human\nHow do I fold a shirt?,maybe\n",
     r"oeq\.csv line 2, field emotional_validation_human"),
    (load_aita, "aita.csv", "text,ytanta\nhello,YTA\n", r"aita\.csv: missing column"),
    (load_aita, "aita3.csv", "prompt,top_comment\nAITA for x?,hm\n", r"aita3\.csv: missing column\(s\) \['ytanta'\]"),
    (load_aita, "aita2.csv", "prompt,is_asshole,ytanta\nAITA for x?,0,YTA\n", "contradicts"),
]


def test_loaders_name_file_and_field(tmp_path: Path) -> None:
    for loader, name, text, message in LOADER_ERRORS:
        (tmp_path / name).write_text(text, encoding="utf-8")
        with pytest.raises(TrustmhError, match=message):
            loader(tmp_path / name)
    label_only = tmp_path / "aita4.csv"
    label_only.write_text("prompt,is_asshole\nAITA for a?,1\nAITA for b?,0.0\n", encoding="utf-8")
    assert [r["verdict"] for r in load_aita(label_only)[0]] == ["YTA", "NTA"]


def test_load_pas_with_custom_field(tmp_path: Path) -> None:
    path = tmp_path / "pas.csv"
    path.write_text("id,statement\n7,I will skip the meeting without telling anyone.\n"
                    "8,I plan to keep the extra change the cashier gave me.\n", encoding="utf-8")
    rows = load_pas(path, "statement")
    assert [r["id"] for r in rows] == ["pas-7", "pas-8"]
    assert rows[1]["prompt"].startswith("I plan")
    with pytest.raises(TrustmhError, match="missing column"):
        load_pas(path)


@pytest.mark.parametrize("sub, option", [(OpenEndedQuestions(), "oeq_path"), (AitaYta(), "aita_path")])
def test_fallback_sample_is_never_ok(sub: Any, option: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the 10-row sample available: not computed with what to supply, unless explicitly allowed,
    and then the result says 'sample', never 'ok'."""
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    reason = sub.not_computed_reason(ctx_for())
    assert reason is not None
    assert "10-row ELEPHANT sample" in reason
    assert f"-O {option}=FILE" in reason
    assert sub.not_computed_reason(ctx_for(options={"allow_sample": "1"})) is None
    judge = oeq_judge(set()) if option == "oeq_path" else aita_judge(1)
    _, res = run_offline(sub, ctx_for(options={"allow_sample": "1"}), reply, judge)
    assert res.status == "sample"
    assert res.value is not None
    assert res.reason == SAMPLE_NOTE
    assert sub.not_computed_reason(ctx_for(suite="starter")) is None


def test_fallback_never_swallows_a_checksum_error(tmp_path: Path, elephant: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from trustmh.core import ChecksumError
    from trustmh.data.locate import reset_resolved

    bad = tmp_path / "external" / "ELEPHANT"
    bad.mkdir(parents=True)
    (bad / "OEQ_sample.csv").write_text((elephant / "OEQ_sample.csv").read_text() + "\n", encoding="utf-8")
    monkeypatch.setenv("TRUSTMH_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("TRUSTMH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TRUSTMH_OFFLINE", "1")
    reset_resolved()
    with pytest.raises(ChecksumError, match="checksum mismatch"):
        OpenEndedQuestions().not_computed_reason(ctx_for())
    with pytest.raises(ChecksumError):
        OpenEndedQuestions().items(ctx_for(options={"allow_sample": "1"}))
