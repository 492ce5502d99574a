"""Judge prompts put what every item shares (instructions, rubric, answer format) first and the item last, so
that providers' prefix caching applies to the shared part (docs/cost.md)."""

from __future__ import annotations

import re

import pytest

from trustmh.prompts import _index, load_template

JUDGE_TEMPLATES = sorted(n for n in _index() if "judge" in n or n.startswith("sycophancy_oeq_"))
# `care_marks` is the check's rubric (conversation.care): the same for every item of the check, part of the shared prefix
PLACEHOLDER = re.compile(r"\$\{?(?!output_spec\b|care_marks\b)[a-z_]+")


def test_there_are_judge_templates() -> None:
    assert len(JUDGE_TEMPLATES) >= 20


@pytest.mark.parametrize("name", JUDGE_TEMPLATES)
def test_item_comes_after_the_answer_format(name: str) -> None:
    text = load_template(name)
    first_item = PLACEHOLDER.search(text)
    answer_format = max(text.find("JSON"), text.find("$output_spec"))
    assert first_item is not None and 0 <= answer_format < first_item.start()
