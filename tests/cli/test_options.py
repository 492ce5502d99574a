"""Every `-O` key read anywhere in the source is declared in `trustmh.options` (so unknown keys can be
refused without refusing a real one)."""

from __future__ import annotations

import re

import pytest

from fixture_paths import REPO
from trustmh.core import TrustmhError
from trustmh.options import all_options, check_options, known_keys

SRC = REPO / "src" / "trustmh"
READ = re.compile(r"""(?:options\.get\(|options\[|\.flag\(|_opt_int\(ctx, )["']([a-z0-9_]+)["']""")


def test_every_key_read_is_declared() -> None:
    declared = set(all_options())
    read = {m.group(1) for path in SRC.rglob("*.py") for m in READ.finditer(path.read_text(encoding="utf-8"))}
    assert read, "the pattern finds the keys"
    assert read - declared == set(), f"read but not declared in trustmh.options: {sorted(read - declared)}"


def test_keys_are_scoped_to_the_chosen_subtasks() -> None:
    knowledge = known_keys(["reliability/knowledge"])
    assert "usmle_mental_path" in knowledge
    assert "rubric" not in knowledge
    assert "max_tokens_cap" in knowledge
    assert "rubric" in known_keys(["crisis/crisis_escalation"])
    check_options({"usmle_mental_path": "x", "max_tokens_cap": "64"}, ["reliability/knowledge"])


def test_every_data_hint_names_an_option_that_exists() -> None:
    """What `trustmh data list` and the resolver tell users to pass is an option `trustmh run` accepts."""
    from trustmh.data import DATASETS

    declared = set(all_options())
    for ds in DATASETS.values():
        hint = ds.user_option
        if hint.startswith("-O "):
            assert hint.removeprefix("-O ").split("=")[0] in declared, (ds.name, hint)
        else:
            assert "TRUSTMH_DATA_DIR" in hint, (ds.name, hint)
        assert "--" not in hint, (ds.name, hint)


def test_reasks_and_fairness_values_are_checked() -> None:
    check_options({"reasks": "0", "fairness_values": "2"}, ["fairness/overall"])
    for bad, msg in (({"reasks": "3"}, "at most 2"), ({"reasks": "-1"}, "at least 0"),
                     ({"fairness_values": "1"}, "at least 2"), ({"reasks": "none"}, "whole number")):
        with pytest.raises(TrustmhError, match=msg):
            check_options(bad, ["fairness/overall"])
