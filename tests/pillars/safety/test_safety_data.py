"""Safety pillar loaders on the real files, the contrast set and the starter files."""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.pillars.safety.data import (
    JAILBREAK_COLUMNS,
    JAILBREAK_RELPATH,
    METHODS,
    OBJECTIVES,
    PSYHARM_COLUMNS,
    PSYHARM_RELPATH,
    JailbreakRow,
    PsyHarmRow,
    load_contrast_set,
    load_jailbreakmh,
    load_psyharm,
)
from trustmh.scoring.refusal import is_refusal
from trustmh.starter import load_starter


@pytest.fixture(scope="module")
def psyharm(data_dir: Path) -> list[PsyHarmRow]:
    return load_psyharm(data_dir / PSYHARM_RELPATH)


@pytest.fixture(scope="module")
def jailbreak(data_dir: Path, psyharm: list[PsyHarmRow]) -> list[JailbreakRow]:
    return load_jailbreakmh(data_dir / JAILBREAK_RELPATH, psyharm)


def test_psyharm_structure(psyharm: list[PsyHarmRow]) -> None:
    assert len(psyharm) == 70
    assert [r.id for r in psyharm] == list(range(1, 71))
    counts = Counter(r.objective for r in psyharm)
    assert set(counts) == set(OBJECTIVES)
    assert set(counts.values()) == {5}
    assert [psyharm[i].objective for i in range(0, 70, 5)] == list(OBJECTIVES)


def test_jailbreakmh_structure(jailbreak: list[JailbreakRow], psyharm: list[PsyHarmRow]) -> None:
    assert len(jailbreak) == 560
    assert Counter(r.method for r in jailbreak) == {m: 70 for m in METHODS}
    for k, row in enumerate(jailbreak, start=1):
        assert row.method == METHODS[(k - 1) % 8]
        base = psyharm[math.ceil(k / 8) - 1]
        assert row.base_id == base.id
        assert base.prompt in row.prompt
    # multi-line cells survive the CSV reader
    assert any("\n" in r.prompt for r in jailbreak)


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _synthetic_psyharm_rows() -> list[list[str]]:
    return [[str(i), OBJECTIVES[(i - 1) // 5], f"synthetic request number {i}"] for i in range(1, 71)]


def test_psyharm_loader_errors(tmp_path: Path) -> None:
    good = _synthetic_psyharm_rows()
    p = tmp_path / "PsyHarm.csv"
    _write_csv(p, list(PSYHARM_COLUMNS), good)
    assert len(load_psyharm(p)) == 70
    _write_csv(p, list(PSYHARM_COLUMNS), good[:69])
    with pytest.raises(TrustmhError, match="expected 70 rows"):
        load_psyharm(p)
    bad = [r[:] for r in good]
    bad[6][1] = "Generate Bias"
    _write_csv(p, list(PSYHARM_COLUMNS), bad)
    with pytest.raises(TrustmhError, match=r"line 8 \(ID 7\): field 'Attack Objective'"):
        load_psyharm(p)
    _write_csv(p, ["ID", "Objective", "Prompt"], good)
    with pytest.raises(TrustmhError, match="header"):
        load_psyharm(p)


def test_jailbreak_loader_errors(tmp_path: Path) -> None:
    ph_path = tmp_path / "PsyHarm.csv"
    _write_csv(ph_path, list(PSYHARM_COLUMNS), _synthetic_psyharm_rows())
    ph = load_psyharm(ph_path)
    rows = [[str(k), ph[math.ceil(k / 8) - 1].objective, METHODS[(k - 1) % 8],
             f"wrapper line one\nline two: {ph[math.ceil(k / 8) - 1].prompt}"] for k in range(1, 561)]
    p = tmp_path / "JailbreakMH.csv"
    _write_csv(p, list(JAILBREAK_COLUMNS), rows)
    assert len(load_jailbreakmh(p, ph)) == 560
    swapped = [r[:] for r in rows]
    swapped[9][2], swapped[10][2] = swapped[10][2], swapped[9][2]
    _write_csv(p, list(JAILBREAK_COLUMNS), swapped)
    with pytest.raises(TrustmhError, match=r"\(ID 10\): field 'method'"):
        load_jailbreakmh(p, ph)
    wrong_base = [r[:] for r in rows]
    wrong_base[20][3] = "a wrapper around nothing"
    _write_csv(p, list(JAILBREAK_COLUMNS), wrong_base)
    with pytest.raises(TrustmhError, match=r"\(ID 21\): field 'Prompt \(English\)'.*PsyHarm row 3"):
        load_jailbreakmh(p, ph)


def test_contrast_set(psyharm: list[PsyHarmRow]) -> None:
    items = load_contrast_set(psyharm)
    assert len(items) == 100
    twins = [c for c in items if c.kind == "twin"]
    assert sorted(c.twin_of for c in twins) == list(range(1, 71))
    assert sum(c.kind == "sensitive" for c in items) == 30
    harmful_prompts = {r.prompt for r in psyharm}
    for c in items:
        assert c.prompt not in harmful_prompts
        assert not is_refusal(c.prompt)
    for c in twins:
        assert c.objective == psyharm[c.twin_of - 1].objective
    topics = {c.topic for c in items if c.kind == "sensitive"}
    for needed in ("grief", "medication side effects", "dark idiom", "supporting a suicidal friend", "crisis line"):
        assert needed in topics


def test_starter_files_are_synthetic() -> None:
    for sid in ("safety/jailbreak_resistance", "safety/antitoxic"):
        rows = load_starter(sid)
        assert 10 <= len(rows) <= 20
        for r in rows:
            assert r["base_prompt"].startswith("<synthetic>")
            assert r["base_prompt"] in r["Prompt (English)"]
    rows = load_starter("safety/over_refusal")
    assert {r["benign"] for r in rows} == {True, False}
    assert all(r["prompt"].startswith("<synthetic>") for r in rows)
