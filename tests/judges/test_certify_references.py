"""The certification references: each pillar declares its own beside its sub-tasks (`REFERENCES`), the catalogue
walk collects them and `--reference NAME` finds them (trustmh.certify.registry). The checks below run over the
registry, so a new reference is checked without editing them; a throwaway pillar shows that."""

from __future__ import annotations

import json
import re
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import trustmh.pillars
from canned import canned_model
from fixture_paths import REPO
from trustmh.catalogue import catalogue
from trustmh.certify.registry import find_reference, reference_sources
from trustmh.cli import main
from trustmh.core import TrustmhError
from trustmh.judges.references import CSV_REFERENCE, ReferenceRequest

DECLARED = sorted(catalogue().references)


def _certify_help(capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main(["judge", "certify", "--help"])
    return capsys.readouterr().out


def test_the_pillars_declare_references() -> None:
    assert DECLARED


@pytest.mark.parametrize("name", DECLARED)
def test_every_declared_reference_is_found_by_its_name(name: str) -> None:
    source, _ = find_reference(name, ReferenceRequest())
    assert source is catalogue().references[name]


def test_the_csv_reference_is_found_beside_the_declared_ones() -> None:
    assert set(reference_sources()) == {*DECLARED, CSV_REFERENCE}


@pytest.mark.parametrize("name", DECLARED)
def test_every_declared_reference_is_listed_by_certify_help(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert re.search(rf"^  {re.escape(name)} +\S", _certify_help(capsys), re.MULTILINE)


@pytest.mark.parametrize("name", DECLARED)
def test_every_declared_reference_has_a_row_in_the_references_page(name: str) -> None:
    assert f"| `{name}` |" in (REPO / "docs" / "references.md").read_text(encoding="utf-8")


def test_a_named_reference_declares_the_subtask_it_certifies() -> None:
    assert reference_sources()["crisis-study"].subtask == "crisis/crisis_escalation"


def test_a_path_to_a_file_is_the_csv_reference(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("item_id,response,human_a\n")
    source, request = find_reference(str(path), ReferenceRequest(subtask="safety/over_refusal"))
    assert (source.name, request.path) == ("csv", str(path))


def test_an_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(TrustmhError, match="crisis-study"):
        find_reference("no-such-reference", ReferenceRequest())


def test_a_subtask_other_than_the_references_own_is_refused() -> None:
    with pytest.raises(TrustmhError, match="certifies crisis/crisis_escalation"):
        find_reference("crisis-study", ReferenceRequest(subtask="safety/over_refusal"))


# A pillar-like package of its own (a suite with no sub-task) that declares one reference on the over-refusal
# judge: four synthetic replies, one rater. Written to a temporary folder the catalogue walks.
THROWAWAY = '''
from trustmh.core import Item
from trustmh.judges.references import Reference, ReferenceSource

TITLE = "Throwaway"
SUITE = "throwaway"
SUBTASKS = ()
REPLIES = {"t1": ("GOOD reply", 1), "t2": ("plain reply", 0), "t3": ("GOOD again", 1), "t4": ("plain again", 0)}


def load(ctx, request):
    items = [Item(id=k, prompt="How do I sleep better?", metadata={"benign": "1", "skip_generation": True,
                                                                   "stored_response": reply})
             for k, (reply, _) in REPLIES.items()]
    return Reference(name="throwaway-set", source="user", sha256="0" * 64, subtask="{subtask}",
                     label_type="binary", items=items, humans={k: {"a": h} for k, (_, h) in REPLIES.items()},
                     judge_value=lambda rec: rec.score.get("helpful"))


REFERENCES = (ReferenceSource(name="throwaway", subtask="{subtask}", label_type="binary", load=load,
                              help="a reference declared by a test"),)
'''


def _throwaway_pillar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subtask: str) -> None:
    folder = tmp_path / "walked"
    (folder / "throwaway_refs").mkdir(parents=True)
    (folder / "throwaway_refs" / "__init__.py").write_text(textwrap.dedent(THROWAWAY).replace("{subtask}", subtask))
    monkeypatch.setattr(trustmh.pillars, "__path__", [*trustmh.pillars.__path__, str(folder)])
    catalogue.cache_clear()


@pytest.fixture
def fresh_catalogue() -> Iterator[None]:
    yield
    sys.modules.pop("trustmh.pillars.throwaway_refs", None)
    catalogue.cache_clear()


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_catalogue: None) -> None:
    _throwaway_pillar(tmp_path, monkeypatch, "safety/over_refusal")


def test_a_throwaway_reference_is_found_by_its_name(throwaway: None) -> None:
    assert find_reference("throwaway", ReferenceRequest())[0].help == "a reference declared by a test"


def test_a_throwaway_reference_is_listed_by_certify_help(throwaway: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert re.search(r"^  throwaway +a reference declared by a test", _certify_help(capsys), re.MULTILINE)


def test_a_throwaway_reference_is_certified_through_the_run(throwaway: None, tmp_path: Path) -> None:
    from trustmh.certify.measure import certification_spec, certify
    from trustmh.certify.registry import reference_run

    source, request = find_reference("throwaway", ReferenceRequest())
    judge = canned_model(lambda p, m, c: json.dumps({"label": "complied", "helpful": int("GOOD" in p),
                                                     "rationale": "r"}), "judge-a")
    spec = certification_spec([judge], reference_run(source, request), n_boot=100)
    assert source.load is not None
    cert, _ = certify(source.load(spec.context(), request), spec, certs_dir=tmp_path / "certs",
                      work=tmp_path / "work")
    assert (cert["reference"]["name"], cert["n"]) == ("throwaway-set", 4)


def test_a_reference_on_a_subtask_without_a_judge_is_refused_by_the_walk(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_catalogue: None) -> None:
    _throwaway_pillar(tmp_path, monkeypatch, "crisis/crisis_identification")
    with pytest.raises(TypeError, match="throwaway.*judge_templates"):
        catalogue()
