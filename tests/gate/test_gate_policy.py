"""Policy files are validated when loaded: every malformed value is one line naming the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from trustmh.core import TrustmhError
from trustmh.gate import load_policy

GOOD = '[[check]]\nid = "jb"\nsubtask = "safety/jailbreak_resistance"\nmin = 0.9\n'

# (policy text, the key the error must name, words of the reason)
BAD: dict[str, tuple[str, str, str]] = {
    "negative max": ('[[check]]\nid = "x"\nsubtask = "privacy/leakage"\nmax = -1\n', "'max'", "outside"),
    "min above 1 for a rate": ('[[check]]\nid = "x"\nsubtask = "safety/jailbreak_resistance"\nmin = 1.5\n', "'min'",
                               "outside"),
    "infinite max": ('[[check]]\nid = "x"\nsubtask = "privacy/leakage"\nmax = inf\n', "'max'", "finite"),
    "nan min": ('[[check]]\nid = "x"\nsubtask = "safety/jailbreak_resistance"\nmin = nan\n', "'min'", "finite"),
    "boolean min": ('[[check]]\nid = "x"\nsubtask = "safety/jailbreak_resistance"\nmin = true\n', "'min'", "finite"),
    "string min": ('[[check]]\nid = "x"\nsubtask = "safety/jailbreak_resistance"\nmin = "0.9"\n', "'min'", "finite"),
    "negative severity": (GOOD + "severity = -10\n", "'severity'", "> 0"),
    "negative min_n": ("min_n = -5\n" + GOOD, "'min_n'", "whole number"),
    "fractional min_n": ("min_n = 2.5\n" + GOOD, "'min_n'", "whole number"),
    "quoted boolean": ('require_validated_judge = "false"\n' + GOOD, "'require_validated_judge'", "unquoted"),
    "quoted rate flag": (GOOD + 'rate = "yes"\n', "'rate'", "true or false"),
    "duplicate ids": (GOOD + GOOD, "'id'", "duplicate"),
    "typo in sub-task": ('[[check]]\nid = "x"\nsubtask = "safety/jailbreak_resistence"\nmin = 0.9\n', "'subtask'",
                         "unknown sub-task"),
    "sub-task without pillar": ('[[check]]\nid = "x"\nsubtask = "over_refusal"\nmin = 0.9\n', "'subtask'",
                                "did you mean 'safety/over_refusal'"),
    "typo in metric": ('[[check]]\nid = "x"\nsubtask = "crisis/severity_identification"\n'
                       'metric = "under_triage_at_rsk"\nmax = 0.2\n', "'metric'", "gateable"),
    "metric without interval": ('[[check]]\nid = "x"\nsubtask = "crisis/crisis_identification"\n'
                                'metric = "macro_f1"\nmin = 0.5\n', "'metric'", "with an interval"),
    "wrong count field": ('[[check]]\nid = "x"\nsubtask = "crisis/severity_identification"\n'
                          'metric = "under_triage_at_risk"\ncount = "n"\ntotal = "m"\nmax = 0.2\n', "'count'",
                          "counted by"),
    "max on a higher-is-better value": ('[[check]]\nid = "x"\nsubtask = "safety/over_refusal"\nmax = 0.9\n',
                                        "'max'", "higher is better"),
    "both max and min": ('[[check]]\nid = "x"\nsubtask = "privacy/leakage"\nmax = 0.1\nmin = 0.0\n', "'max'",
                         "exactly one"),
    "neither max nor min": ('[[check]]\nid = "x"\nsubtask = "privacy/leakage"\n', "'max'", "exactly one"),
    "missing id": ('[[check]]\nsubtask = "privacy/leakage"\nmax = 0.1\n', "'id'", "missing"),
    "unknown check key": (GOOD + 'colour = "red"\n', "'colour'", "unknown key"),
    "unknown top-level key": ('minimum_n = 30\n' + GOOD, "'minimum_n'", "unknown key"),
    "unknown suite": ('suite = "nosuch"\n' + GOOD, "'suite'", "unknown suite"),
    "judge threshold above 1": ("[judge_min.binary]\nsensitivity = 1.2\n" + GOOD, "'judge_min.binary.sensitivity'",
                                "outside"),
    "judge threshold label type": ("[judge_min.ternary]\nkappa = 0.5\n" + GOOD, "'judge_min.ternary'",
                                   "unknown label type"),
    "judge threshold metric": ("[judge_min.binary]\nrecall = 0.5\n" + GOOD, "'judge_min.binary.recall'",
                               "unknown judge agreement metric"),
    "check judge threshold": (GOOD + "judge_min = {sensitivity = \"high\"}\n", "'judge_min.sensitivity'",
                              "finite"),
    "no checks": ('version = "x"\n', "[[check]]", "no [[check]]"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_malformed_policy_is_one_line_naming_file_and_key(name: str, tmp_path: Path) -> None:
    text, key, why = BAD[name]
    path = tmp_path / "ours.toml"
    path.write_text('version = "t"\n' + text if not text.startswith("version") else text, encoding="utf-8")
    with pytest.raises(TrustmhError) as exc:
        load_policy(path)
    message = str(exc.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:")
    assert key in message
    assert why in message


def test_not_toml_and_unreadable_are_one_line(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("not = [toml", encoding="utf-8")
    with pytest.raises(TrustmhError, match="not valid TOML"):
        load_policy(path)
    with pytest.raises(TrustmhError, match="cannot read.*shipped policies: .*default.*faithful"):
        load_policy(tmp_path / "missing.toml")


def test_a_real_boolean_false_is_false(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text("require_validated_judge = false\n" + GOOD, encoding="utf-8")
    assert load_policy(path).require_validated_judge is False


def test_counted_rates_need_no_count_and_total_in_the_policy(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[[check]]\nid = "x"\nsubtask = "crisis/severity_identification"\n'
                    'metric = "under_triage_at_risk"\nmax = 0.2\n', encoding="utf-8")
    check = load_policy(path).checks[0]
    assert (check.count, check.total) == ("under_triage_at_risk_count", "under_triage_at_risk_total")


@pytest.mark.parametrize("name", ["default", "faithful"])
def test_shipped_policies_load_and_say_they_are_not_clinical_advice(name: str) -> None:
    policy = load_policy(name)
    assert "not clinical advice" in policy.note
    assert policy.judge_min["binary"]["sensitivity"] == 0.90
