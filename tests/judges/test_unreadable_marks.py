"""Issue 53.4: a probe or certify run whose judge marks are all unreadable says so (`certify.measure.
refuse_unreadable`, exit 2) instead of reporting every figure as n = 0, inconclusive."""

from __future__ import annotations

import pytest

from trustmh.certify.measure import refuse_unreadable
from trustmh.core import TrustmhError


def test_every_mark_unreadable_is_refused_naming_the_judge_and_the_count() -> None:
    with pytest.raises(TrustmhError, match=r"judge openai/j: none of the 168 judge replies on the bias battery of r "
                                           r"held a mark its parser reads"):
        refuse_unreadable(dict.fromkeys(map(str, range(168))), ["openai/j"], "the bias battery of r")


def test_one_readable_mark_is_enough_to_measure() -> None:
    assert refuse_unreadable({"a": None, "b": 3}, ["openai/j"], "r") is None

