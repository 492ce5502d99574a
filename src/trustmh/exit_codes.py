"""The exit codes of every trustmh command, one table (docs/exit-codes.md).

A CI step reads the code, not the text: each outcome has its own number, and "could not run" (a bad option, a
missing run directory, an unreadable file, an unexpected failure) is never mistaken for a verdict. 2 is what
argparse already uses for a usage error, so every error before a verdict shares it.
"""

from __future__ import annotations

from typing import Final

PASS: Final = 0  # gate and judge certify: pass; any other command: finished
FAIL: Final = 1  # gate and judge certify: fail; verify: not verified
COULD_NOT_RUN: Final = 2  # bad option, missing run, unreadable file, unexpected failure: no verdict at all
INSUFFICIENT: Final = 3  # gate: insufficient evidence; judge certify: the reference cannot certify
BUDGET: Final = 4  # run: stopped when the counted cost reached --budget (the same command continues)
INCOMPLETE: Final = 5  # run, merge: finished, but some sub-tasks errored (results.json 'errors')
INTERRUPTED: Final = 130  # Ctrl-C (the same command continues)

# name -> (code, meaning), in the order docs/exit-codes.md shows them; the docs page is checked against it
TABLE: Final[dict[str, tuple[int, str]]] = {
    "pass": (PASS, "gate or judge certify passed; any other command finished"),
    "fail": (FAIL, "gate or judge certify failed; verify: the dossier does not verify"),
    "could not run": (COULD_NOT_RUN, "a bad option, a missing run directory, an unreadable file or an "
                      "unexpected failure: no verdict was reached"),
    "insufficient evidence": (INSUFFICIENT, "gate: the evidence cannot decide a check; judge certify: the "
                              "reference cannot certify (its raters disagree, or it is too small)"),
    "stopped at the budget": (BUDGET, "run: the counted cost reached --budget; the same command with a higher "
                              "budget continues"),
    "incomplete": (INCOMPLETE, "run or merge: some sub-tasks errored; see results.json 'errors'"),
    "interrupted": (INTERRUPTED, "interrupted; the same command continues"),
}

# a verdict -> its exit code (gate: pass / fail / insufficient; judge certify: also the reference's refusals)
VERDICT_EXIT: Final[dict[str, int]] = {"pass": PASS, "fail": FAIL, "insufficient": INSUFFICIENT,
                                       "cannot certify": INSUFFICIENT}


def worst_verdict_exit(verdicts: list[str]) -> int:
    """The exit code of several verdicts (`review import`, one per sub-task): fail if any fails, else
    insufficient if any cannot decide, else pass; an unknown verdict is never a pass."""
    codes = {VERDICT_EXIT.get(v, FAIL) for v in verdicts}
    return FAIL if FAIL in codes else INSUFFICIENT if INSUFFICIENT in codes else PASS


def help_text() -> str:
    """The table as the commands' help shows it."""
    rows = [f"  {code:>3}  {name}: {meaning}" for name, (code, meaning) in TABLE.items()]
    return "exit codes:\n" + "\n".join(rows)
