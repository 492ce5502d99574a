"""Argument types shared by the commands."""

from __future__ import annotations

import argparse
import math
import re

from trustmh.models.batch import MAX_BATCH_SIZE
from trustmh.models.providers import batch_labels

# Fewer bootstrap replicates than this give intervals too coarse to publish; more than MAX_N_BOOT change no
# published digit and cost minutes of CPU and gigabytes of memory per figure.
MIN_N_BOOT = 200
MAX_N_BOOT = 100_000

# The stated ranges of the other counts (docs/running.md#ranges): far above any real use, far below what exhausts a machine.
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



def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def shard_arg(value: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in value.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard expects I/N, e.g. 0/4, got {value!r}") from None
    if n < 1 or not 0 <= i < n:
        raise argparse.ArgumentTypeError(f"--shard {value}: need 0 <= I < N")
    return i, n


def positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not math.isfinite(number) or not number > 0:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {value}")
    return number


def key_value(value: str) -> tuple[str, str]:
    if "=" not in value:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {value!r}")
    key, val = value.split("=", 1)
    return key.strip(), val


def moved_url(value: str) -> tuple[str, str]:
    """`--endpoint-moved OLD_URL=NEW_URL`: two URLs with a scheme, different."""
    match = re.fullmatch(r"([a-z][a-z0-9+.-]*://\S+?)=([a-z][a-z0-9+.-]*://\S+)", value.strip(), re.IGNORECASE)
    if match is None or match[1].rstrip("/") == match[2].rstrip("/"):
        raise argparse.ArgumentTypeError(f"expected OLD_URL=NEW_URL (two different URLs such as "
                                          f"https://old.example/v1=https://new.example/v1), got {value!r}")
    return match[1], match[2]




def rate(value: str) -> float:
    number = positive_float(value)
    if not number < 1:
        raise argparse.ArgumentTypeError(f"expected a rate between 0 and 1, got {value}")
    return number


def correlation(value: str) -> float:
    """A within-cluster correlation: 0 up to (not including) 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number from 0 up to 1, got {value!r}") from None
    if not 0 <= number < 1:
        raise argparse.ArgumentTypeError(f"expected a correlation from 0 up to 1, got {value}")
    return number


# Where every command finds judge certificates unless `--certificates DIR` says (`judges.certificates.
# default_certificates_dir`), said in each command's help
CERTIFICATES_DEFAULT = "$TRUSTMH_CERTIFICATES_DIR, else ./trustmh-certificates in the current directory"


def agreement(value: str) -> float:
    """An assumed agreement (κ or ICC) strictly between 0 and 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {value!r}") from None
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"expected an agreement between 0 and 1 (both excluded), got {value}")
    return number


# What `--batch` sends in a run: every call that can wait for a batch
RUN_BATCH_CALLS = "every judge call and the model under test's single-turn replies"


def add_batch_arguments(p: argparse.ArgumentParser, conversations: bool = True,
                        calls: str = RUN_BATCH_CALLS) -> None:
    """--batch [N], --batch-conversations and --no-prompt-cache (`run`, `plan`, `judge certify`, `rescore`);
    `calls` says which of the command's calls a batch takes."""
    p.add_argument("--batch", nargs="?", const=0, default=None, type=at_least(1, "--batch", MAX_BATCH_SIZE),
                   metavar="N",
                   help=f"send the calls that can wait through the providers' batch APIs ({', '.join(batch_labels())}"
                   f": about half price; other providers run live, and the command says which): {calls}. "
                   f"N: requests per batch (default Inspect's 100, at most {MAX_BATCH_SIZE:,}, OpenAI's limit). A "
                   "batch can take up to 24 hours; a killed command started again collects its batches instead "
                   "of paying again (docs/cost.md#batch)")
    p.add_argument("--batch-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="with --batch, end the command when a batch is still unfinished this long after it was "
                   "submitted: its requests count as errored (exit 5), and the same command again collects the "
                   "batch from the provider (default: the providers' 24-hour window)")
    if conversations:
        p.add_argument("--batch-conversations", action="store_true",
                       help="with --batch, batch the turns of multi-turn conversations too (model under test and "
                       "simulated patient). Off by default: each turn waits for its own batch, which can take "
                       "hours per turn")
    p.add_argument("--no-prompt-cache", action="store_true",
                   help="do not ask providers to cache prompt prefixes (on by default where the provider "
                   "supports it: Anthropic's cache breakpoints through Inspect; OpenAI and Google cache long "
                   "shared prefixes on their own)")
