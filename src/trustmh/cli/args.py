"""Argument types shared by the commands."""

from __future__ import annotations

import argparse

# `trustmh run --budget`: the exit code of a run stopped at its budget (trustmh.run.execute.BUDGET_EXIT).
BUDGET_EXIT = 3

# Fewer bootstrap replicates than this give intervals too coarse to publish.
MIN_N_BOOT = 200


def at_least(lo: int, what: str, hi: int | None = None):  # noqa: ANN202
    """An argparse type: a whole number ≥ lo (and ≤ hi when given), with a message that says why."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, got {value!r}") from None
        if number < lo:
            raise argparse.ArgumentTypeError(f"{what} must be at least {lo}, got {number}")
        if hi is not None and number > hi:
            raise argparse.ArgumentTypeError(f"{what} must be at most {hi}, got {number}")
        return number
    return parse
