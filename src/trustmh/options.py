"""Every `-O key=value` option trustmh knows, where it applies, and how its value is checked.

An unknown key is an error that lists the keys known for the chosen sub-tasks (a typo must never be
accepted silently), and a value that must be a number is checked before any model call.
Options of every run are declared here; a sub-task declares the options it reads itself (`Subtask.options`),
and `tests/cli/test_options.py` reads the source and fails when a key is read somewhere but not declared.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trustmh.catalogue import catalogue, lookup
from trustmh.core import MAX_ATTEMPTS, MAX_TOKENS, Option, TrustmhError
from trustmh.flag_values import as_typed, flag_of
from trustmh.judges.ensemble import ensemble_option

# Options of every run (the glue, the judges, the run itself).
GLOBAL: dict[str, Option] = {
    "max_tokens_cap": Option("cap on the model under test's reply tokens (the bundled model: 192, the offline demo 64)", minimum=1,
                             maximum=MAX_TOKENS),
    "judge_max_tokens": Option("token limit of every judge reply (default: each judge's own, sized to its schema)", minimum=1,
                               maximum=MAX_TOKENS),
    "judge_text_chars": Option("longest free-text field (e.g. rationale) a JSON-mode judge may write (the offline demo "
                        "uses 80)", minimum=1, maximum=MAX_TOKENS),
    "reasks": Option("re-asks of the model under test after an unparseable reply, 0-2 (default 2; the offline demo "
              "uses 0: the reply then counts as invalid)", minimum=0),
    "judge_json_mode": Option("1/0: ask judges for their exact JSON schema (default: on for the bundled model)"),
    "ensemble": Option("how several --judge combine: vote, median or mean (default: the sub-task's rule, vote; "
                       "MentalBench: mean)"),
    "min_valid": Option("ensemble members that must give a valid judgement (default: all)", minimum=1, maximum=100),
    "allow_sample": Option("1: score a fallback sample (e.g. 10-row ELEPHANT) with status 'sample'"),
    "answer_schema": Option("1/0: hold the model under test to each sub-task's answer format (its JSON schema: "
                            "`Subtask.answer_schema`), gguf models only (default 0; the offline demo uses 1)"),
    "anchors": Option("1/0: re-judge every judged sub-task's anchor items, for judge drift (default 1; the "
                      "offline demo uses 0)"),
}


# Options that became flags: what to write instead.
RETIRED = {"siri2_epochs": "--epochs N (every sub-task that repeats its items)",
           "interjection_epochs": "--epochs N (every sub-task that repeats its items)"}


def all_options() -> dict[str, Option]:
    """Every option of every sub-task, with the options of every run."""
    c = catalogue()
    out = dict(GLOBAL)
    for cls in c.subtasks + tuple(t for ts in c.suite_tasks.values() for t in ts):
        out.update(cls.options)
    return out


def known_keys(subtask_ids: Iterable[str]) -> dict[str, Option]:
    """The keys that mean something for these sub-tasks (robustness perturbs other sub-tasks' items, so it
    knows theirs too)."""
    classes = [cls for cls in (lookup(s) for s in subtask_ids) if cls is not None]
    if any(cls.pillar == "robustness" for cls in classes):
        return all_options()
    keys = dict(GLOBAL)
    for cls in classes:
        keys.update(cls.options)
    return keys


def _readers(key: str) -> list[str]:
    """The sub-tasks that read option `key`."""
    return [cls.id for cls in catalogue().subtasks if key in cls.options]


def check_options(options: Mapping[str, Any], subtask_ids: Iterable[str]) -> None:
    """TrustmhError for an unknown key or a malformed value, naming the option and what is accepted."""
    ids = list(subtask_ids)
    known = known_keys(ids)
    everywhere = all_options()
    for key, value in options.items():
        if key in RETIRED:
            raise TrustmhError(f"-O {key}: replaced by {RETIRED[key]}")
        if key not in known and key in everywhere and flag_of(key, value) != f"-O {key}":
            raise TrustmhError(f"{flag_of(key, value)}: applies to none of the chosen sub-tasks (it is for "
                               f"{', '.join(_readers(key))})")
        if key not in known:
            where = "for the chosen sub-tasks" if key in everywhere else "anywhere"
            raise TrustmhError(f"-O {key}: unknown option {where}; known: {', '.join(sorted(known))}")
        if key == "ensemble":
            ensemble_option(options)
        if known[key].nonempty and not str(value).strip():
            raise TrustmhError(f"-O {key}=: empty; name what it reads ({known[key].help.split(':')[0]}), or leave "
                               f"-O {key} out")
        minimum = known[key].minimum
        if minimum is not None and not isinstance(value, int):
            try:
                number = int(str(value))
            except ValueError:
                raise TrustmhError(f"{as_typed(key, value)}: must be a whole number") from None
            if number < minimum:
                raise TrustmhError(f"{as_typed(key, value)}: must be at least {minimum}")
            maximum = known[key].maximum
            if maximum is not None and number > maximum:
                raise TrustmhError(f"{as_typed(key, value)}: at most {maximum}")
        if key == "reasks" and str(value).strip().lstrip("-").isdigit() and int(str(value)) > MAX_ATTEMPTS - 1:
            raise TrustmhError(f"-O reasks={value!r}: at most {MAX_ATTEMPTS - 1}")
