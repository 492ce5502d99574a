"""The certification references are modules found by name (judges/certify/references)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.certify.registry import find_reference, reference_sources
from trustmh.core import TrustmhError
from trustmh.judges.references import ReferenceRequest


def test_every_reference_module_is_found_by_its_name() -> None:
    assert {"crisis-study", "mentalalign", "csv"} <= set(reference_sources())


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
