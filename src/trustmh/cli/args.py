"""Argument types shared by the commands."""

from __future__ import annotations

import argparse
import math

# `trustmh run --budget`: the exit code of a run stopped at its budget (trustmh.run.execute.BUDGET_EXIT).
BUDGET_EXIT = 3

# Fewer bootstrap replicates than this give intervals too coarse to publish; more than MAX_N_BOOT change no
# published digit and cost minutes of CPU and gigabytes of memory per figure.
MIN_N_BOOT = 200
MAX_N_BOOT = 100_000

# The stated ranges of the other counts (docs/cli.md): far above any real use, far below what exhausts a machine.
MAX_LIMIT = 1_000_000  # items per sub-task (the largest dataset has about 100,000 rows)
MAX_TIMEOUT = 86_400  # seconds per model request: a day
MAX_RETRIES = 100
MAX_CONNECTIONS = 10_000
MAX_TASKS = 1_000
MAX_WORKERS = 1_024
MAX_LOG_BUFFER = 100_000
MAX_REPLY_TOKENS = 1_000_000
MAX_STABILITY_SEEDS = 10_000  # `align --stability-seeds`: each seed is a whole bootstrap


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


def model_name(what: str):  # noqa: ANN202
    """An argparse type: a model name (or a comma-separated list of them with `many`), never empty: an empty
    role name would fall through to a default nobody chose, or fail at the first call minutes later."""
    def parse(value: str) -> str:
        names = value.split(",") if what == "--patient" else [value]
        if not value.strip() or any(not n.strip() for n in names):
            raise argparse.ArgumentTypeError(f"{what} needs a model name such as openai/gpt-4o-mini, got {value!r}")
        return value.strip()
    return parse


def finite_positive(what: str):  # noqa: ANN202
    """An argparse type: a finite number above 0 (inf and nan are not amounts)."""
    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} expects a number, got {value!r}") from None
        if not math.isfinite(number) or not number > 0:
            raise argparse.ArgumentTypeError(f"{what} expects a finite number above 0, got {value}")
        return number
    return parse
