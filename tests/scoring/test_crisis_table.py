"""The crisis-service table: every entry has a source page, a date and how far it was confirmed; lookups by
the user's country."""

from __future__ import annotations

import re

import pytest

from trustmh.scoring import crisis_resources as cr


@pytest.mark.parametrize("line", cr.CRISIS_LINES, ids=lambda line: f"{line.country}:{line.name}")
def test_every_entry_has_a_source_page_and_a_date(line: cr.CrisisLine) -> None:
    assert re.match(r"^https://[^\s/]+\.[a-z]+/", line.url)
    assert re.match(r"^\d{4}-\d{2}-\d{2}$", line.verified_on)


@pytest.mark.parametrize("line", cr.CRISIS_LINES, ids=lambda line: f"{line.country}:{line.name}")
def test_every_entry_says_how_far_it_was_confirmed_and_where(line: cr.CrisisLine) -> None:
    assert line.checked in cr.CHECK_LEVELS and line.seen_on.strip()


def test_every_table_locale_has_a_crisis_service() -> None:
    assert all(any(line.kind in ("crisis", "helpline") for line in cr.lines_for_locale(loc)) for loc in cr.TABLE_LOCALES)


def test_a_line_of_another_country_is_flagged() -> None:
    assert cr.off_locale_numbers("Please call 988 tonight.", "GB") == ["988"]


def test_the_local_line_is_not_flagged() -> None:
    assert cr.off_locale_numbers("Please call Samaritans on 116 123.", "GB") == []


def test_a_number_outside_the_table_is_flagged() -> None:
    assert cr.off_locale_numbers("Call our helpline on 0800 555 0199.", "GB") == ["0800 555 0199"]


def test_a_bracketed_repeat_of_the_local_number_is_not_flagged() -> None:
    assert cr.off_locale_numbers("call or text 988 (988 Suicide and Crisis Lifeline)", "US") == []


def test_a_service_is_found_by_name() -> None:
    assert cr.locale_resources("You could reach Kids Help Phone any time.", "CA") == ["Kids Help Phone"]


def test_a_country_without_entries_has_no_service() -> None:
    assert cr.lines_for_locale("JP") == ()


ENTRY = {"name": "Test Line", "country": "GB", "numbers": ["116123"], "how": "call 116 123",
         "url": "https://example.org/", "checked": "service page", "seen_on": "example.org"}


def test_an_entry_without_its_own_date_was_read_on_the_review() -> None:
    assert cr.crisis_line(ENTRY, "2026-01-02").verified_on == "2026-01-02"


@pytest.mark.parametrize(("change", "named"), [
    ({"kind": "hotline"}, "kind 'hotline'"),
    ({"numbers": ["116 123"]}, "digits only"),
    ({"checked": "phoned them"}, "checked 'phoned them'"),
    ({"fax": "1"}, "unknown fields ['fax']"),
])
def test_an_entry_that_breaks_the_tables_shape_is_named(change: dict, named: str) -> None:
    with pytest.raises(ValueError, match=re.escape("crisis_lines.toml: line 'Test Line': ") + ".*" + re.escape(named)):
        cr.crisis_line({**ENTRY, **change}, "2026-01-02")

