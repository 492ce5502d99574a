"""Every recorded file identity is the one digest (src/trustmh/digest.py), recomputed here the way docs/data.md
("How hashes are computed") tells a reader: hashlib over the bytes, or `sha256sum` in a shell."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.data.locate import reset_resolved, resolved_files
from trustmh.digest import files_sha256, named_sha256, sha256_file


def one_file(path: Path) -> str:
    """The documented recipe for one file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def file_set(paths: Sequence[Path]) -> str:
    """The documented recipe for a set: "<sha256>  <base name>" lines, sorted, each ending in a newline."""
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in paths]
    lines.sort(key=lambda line: (line[66:], line[:64]))
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


def _write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path


def test_one_file_is_its_plain_sha256(tmp_path: Path) -> None:
    path = _write(tmp_path, "a.csv", b"x,y\n1,2\n")
    assert sha256_file(path) == one_file(path)


def test_a_set_is_the_sha256_of_its_sorted_listing(tmp_path: Path) -> None:
    paths = [_write(tmp_path, "b.json", b"{}"), _write(tmp_path, "a.json", b"[]")]
    assert files_sha256(paths) == file_set(paths)


def test_a_set_does_not_depend_on_the_order_given(tmp_path: Path) -> None:
    paths = [_write(tmp_path, "b.json", b"{}"), _write(tmp_path, "a.json", b"[]")]
    assert files_sha256(paths) == files_sha256(paths[::-1])


def test_bytes_moved_between_files_change_the_set(tmp_path: Path) -> None:
    # run together, a|bc and ab|c are the same bytes; the set digest tells them apart
    first = [_write(tmp_path / "1", "x", b"a"), _write(tmp_path / "1", "y", b"bc")]
    second = [_write(tmp_path / "2", "x", b"ab"), _write(tmp_path / "2", "y", b"c")]
    assert files_sha256(first) != files_sha256(second)


def test_two_files_with_one_name_are_both_counted(tmp_path: Path) -> None:
    paths = [_write(tmp_path / "r1", "labels.csv", b"1"), _write(tmp_path / "r2", "labels.csv", b"2")]
    assert files_sha256(paths) == file_set(paths)


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="no sha256sum on this machine")
def test_the_documented_shell_line_gives_the_same_set_digest(tmp_path: Path) -> None:
    paths = [_write(tmp_path, "H2.json", b"[2]"), _write(tmp_path, "H1.json", b"[1]")]
    out = subprocess.run("sha256sum H2.json H1.json | LC_ALL=C sort -k2 | sha256sum", shell=True, cwd=tmp_path,
                         capture_output=True, text=True, check=True, timeout=30).stdout
    assert out.split()[0] == files_sha256(paths)


def test_run_provenance_records_each_files_plain_sha256() -> None:
    # registry pins and a run's provenance (results.json "data") are one-file digests
    from trustmh.pillars.clinical.siri2_data import EXPERT_FILE, siri2_file

    reset_resolved()
    path = siri2_file(EXPERT_FILE, {"siri2_dir": str(FIXTURES / "siri2")})
    assert resolved_files()["siri2"][f"user path {path}"] == one_file(path)


def test_siri2_certificate_reference_is_the_set_of_files_read() -> None:
    from trustmh.pillars.clinical.siri2_data import EXPERT_FILE, ITEMS_FILE, siri2_file

    reset_resolved()
    options = {"siri2_dir": str(FIXTURES / "siri2")}
    paths = [siri2_file(ITEMS_FILE, options), siri2_file(EXPERT_FILE, options)]
    assert named_sha256(resolved_files()["siri2"]) == file_set(paths)


def test_csv_reference_is_the_files_plain_sha256(tmp_path: Path) -> None:
    from trustmh.certify.csv_reference import csv_reference

    path = _write(tmp_path, "ref.csv", b"item_id,prompt,response,human_a\ni0,p,r,1\ni1,p,s,0\n")
    ref = csv_reference(path, "safety/over_refusal", "binary", "helpful")
    assert ref.sha256 == one_file(path)


def test_crisis_study_reference_is_the_set_of_its_two_score_files() -> None:
    from trustmh.core import RunContext
    from trustmh.pillars.crisis.data import CRISIS_FILES
    from trustmh.pillars.crisis.study_reference import crisis_reference

    ref = crisis_reference(RunContext(seed=0, options={"crisis_dir": str(FIXTURES / "crisis")}))
    scores = [FIXTURES / "crisis" / CRISIS_FILES[k] for k in ("h1_scores", "h2_scores")]
    assert ref.sha256 == file_set(scores)


def test_mindeval_annotations_are_the_files_plain_sha256() -> None:
    from trustmh.pillars.conversation.mindeval import ANNOTATIONS, read_annotations

    path = FIXTURES / "mindeval" / ANNOTATIONS
    assert read_annotations(path).sha256 == one_file(path)


def test_moore_reference_is_the_set_of_the_files_it_read() -> None:
    from trustmh.core import JudgeInfo, RunContext
    from trustmh.judges.references import ReferenceRequest
    from trustmh.pillars.crisis.moore import PROMPTS_FILE, validation_path
    from trustmh.pillars.crisis.moore_reference import moore_reference

    publisher = FIXTURES / "moore_interjections" / "publisher"
    ctx = RunContext(mode="default", judge=JudgeInfo(model="j", validated=False))
    ref = moore_reference(ctx, ReferenceRequest(path=str(publisher)))
    assert ref.sha256 == file_set([validation_path(publisher), publisher / PROMPTS_FILE])
