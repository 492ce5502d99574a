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


def add_batch_arguments(p: argparse.ArgumentParser, conversations: bool = True) -> None:
    """--batch [N], --batch-conversations and --no-prompt-cache (`run`, `plan`, `judge certify`, `rescore`)."""
    p.add_argument("--batch", nargs="?", const=0, default=None, type=at_least(1, "--batch"), metavar="N",
                   help="send the calls that can wait through the providers' batch APIs (OpenAI, Anthropic, "
                   "Google, Together, Grok: about half price; other providers run live, and the run says which): "
                   "every judge call and the model under test's single-turn replies. N: requests per batch "
                   "(default Inspect's 100). A batch can take up to 24 hours; a killed run started again "
                   "collects its batches instead of paying again (docs/cost.md#batch)")
    if conversations:
        p.add_argument("--batch-conversations", action="store_true",
                       help="with --batch, batch the turns of multi-turn conversations too (model under test and "
                       "simulated patient). Off by default: each turn waits for its own batch, which can take "
                       "hours per turn")
    p.add_argument("--no-prompt-cache", action="store_true",
                   help="do not ask providers to cache prompt prefixes (on by default where the provider "
                   "supports it: Anthropic's cache breakpoints through Inspect; OpenAI and Google cache long "
                   "shared prefixes on their own)")
