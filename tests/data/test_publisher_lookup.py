"""Every reader of a publisher's file goes through the one lookup (trustmh.data.publisher): a file in the user's
folder is size-bounded and recorded in the run's provenance; each repository is registered once and its folder
option declared once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from fixture_paths import FIXTURES
from trustmh.core import JudgeInfo, RunContext, TrustmhError
from trustmh.data import locate
from trustmh.data.locate import reset_resolved, resolved_files


def _crisis(folder: Path) -> Path:
    from trustmh.pillars.crisis.data import crisis_file

    return crisis_file("h1_scores", {"crisis_dir": str(folder)})


def _mindeval(folder: Path) -> Path:
    from trustmh.pillars.conversation.mindeval import ANNOTATIONS, locate

    return locate(folder, ANNOTATIONS)


def _realism(folder: Path) -> Path:
    from trustmh.pillars.conversation.realism import find_human_turns

    found = find_human_turns({"mindeval_dir": str(folder)})
    assert found is not None
    return found


def _interjections(folder: Path) -> Path:
    from trustmh.pillars.crisis.interjections import moore_file
    from trustmh.pillars.crisis.moore import PROMPTS_FILE

    ctx = RunContext(mode="default", judge=JudgeInfo(model="j", validated=False), options={"moore_dir": str(folder)})
    return moore_file(PROMPTS_FILE, ctx)


def _stigma(folder: Path) -> Path:
    from trustmh.pillars.fairness.stigma_data import QUESTIONS_FILE, moore_file

    return moore_file(QUESTIONS_FILE, {"moore_dir": str(folder)})


def _siri2(folder: Path) -> Path:
    from trustmh.pillars.clinical.siri2_data import EXPERT_FILE, siri2_file

    return siri2_file(EXPERT_FILE, {"siri2_dir": str(folder)})


# reader, its publisher folder (a synthetic fixture), the registered dataset its provenance is recorded under
READERS: dict[str, tuple[Callable[[Path], Path], Path, str]] = {
    "crisis": (_crisis, FIXTURES / "crisis", "crisis"),
    "mindeval": (_mindeval, FIXTURES / "mindeval", "mindeval"),
    "realism": (_realism, FIXTURES / "mindeval", "mindeval"),
    "interjections": (_interjections, FIXTURES / "moore_interjections" / "publisher", "moore"),
    "stigma": (_stigma, FIXTURES / "moore_stigma", "moore"),
    "siri2": (_siri2, FIXTURES / "siri2", "siri2"),
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_each_reader_finds_its_file_in_the_users_folder(name: str) -> None:
    read, folder, _ = READERS[name]
    assert read(folder).is_relative_to(folder)


@pytest.mark.parametrize("name", sorted(READERS))
def test_each_reader_records_the_file_in_the_runs_provenance(name: str) -> None:
    read, folder, dataset = READERS[name]
    reset_resolved()
    path = read(folder)
    assert f"user path {path}" in resolved_files()[dataset]


@pytest.mark.parametrize("name", sorted(READERS))
def test_an_oversized_file_in_a_publisher_folder_is_refused_naming_it_and_the_bound(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    read, folder, _ = READERS[name]
    monkeypatch.setattr(locate, "MAX_DATA_FILE_BYTES", 10)
    with pytest.raises(TrustmhError, match=rf"{folder}/.*larger than the 10 bytes"):
        read(folder)


def test_a_missing_file_in_a_publisher_folder_names_the_folder_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(TrustmhError, match=r"-O crisis_dir=.*: no data/human_label/H1_scores"):
        _crisis(tmp_path)


def test_each_folder_option_belongs_to_one_registered_dataset() -> None:
    from trustmh.data import DATASETS

    options = Counter(ds.option for ds in DATASETS.values() if ds.option)
    assert [key for key, n in options.items() if n > 1] == []


def test_each_option_is_declared_once_whatever_the_subtask() -> None:
    from trustmh.catalogue import catalogue

    c = catalogue()
    declared: dict[str, set[str]] = {}
    for cls in c.subtasks + tuple(t for ts in c.suite_tasks.values() for t in ts):
        for key, option in cls.options.items():
            declared.setdefault(key, set()).add(option.help)
    assert {key: helps for key, helps in declared.items() if len(helps) > 1} == {}


def test_the_moore_reference_refuses_an_oversized_file_in_its_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    # --reference-path walks the repository's run folders (no fixed file name): each file it reads is bounded
    from trustmh.data.rows import RowReport
    from trustmh.pillars.crisis import moore
    from trustmh.pillars.crisis.moore import annotated_replies

    folder = FIXTURES / "moore_interjections" / "publisher"
    monkeypatch.setattr(moore, "MAX_DATA_FILE_BYTES", 10)
    with pytest.raises(TrustmhError, match=rf"{folder}/.*larger than the 10 bytes"):
        annotated_replies(folder, RowReport())
