"""The parts of a run that pass from the request to the resolved `RunSpec` as given (`run/config.py`): how calls are
made and paced (`Execution`), what they may cost (`CostSettings`), and where the run is written (`Output`).
Like HELM's run spec, a run is composed of a few typed parts rather than one flat list of settings.

Adding a setting to one of these parts: a field here, documented where it is declared, with its default, and
the command-line argument whose `dest` is the field's name (`cli/run.py`). `RunOptions` routes a keyword to
its part by name, `resolve` hands the part on whole, and `cli.run.run_options` fills it by name. If the setting
changes what a run computes (not only how it is paid, paced or shown) it also belongs in `run_manifest`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path

from trustmh.prices import Price
from trustmh.storage import Url


@dataclass(frozen=True)
class Execution:
    """How the run's calls are made, bounded and shown; none of these changes what a run computes."""

    timeout: int = 120  # `--timeout`: seconds per attempt of a model call
    max_retries: int = 3  # `--max-retries`: retries of a failed model call
    cache: bool = True  # Inspect's response cache (`--no-cache` turns it off)
    # `--endpoint-moved OLD=NEW`: {NEW_URL: OLD_URL}, the same model now answering at NEW_URL keeps the
    # response cache it built at OLD_URL (`inspect_compat.cache_urls_moved`)
    cache_moved: dict[str, str] = field(default_factory=dict)
    max_connections: int | None = None  # `--max-connections`: concurrent calls per model (None: Inspect's 10)
    # `--max-tasks`: sub-tasks run at once within the process (Inspect's max_tasks); None: 4, or for the bundled
    # model its number of llama.cpp servers (`trustmh.models.gguf.default_parallel`).
    max_tasks: int | None = None
    # `--display`: Inspect's own display. None: trustmh's progress line (`run/progress.py`), Inspect's display
    # off; with `verbose` (`--verbose`) Inspect's default instead (plain when stderr is not a terminal).
    display: str | None = None
    verbose: bool = False
    # `--shard i/N`: run only the i-th of N deterministic slices of every sub-task's items (`trustmh merge`).
    shard: tuple[int, int] | None = None
    # `--log-buffer`: finished samples per log flush (None: the default); `--live-log`: Inspect's realtime event
    # log (live viewing of running samples in `inspect view`), off by default for its CPU cost
    # (`inspect_eval.log_settings`).
    log_buffer: int | None = None
    live_log: bool = False
    # `--batch [N]` (None: live; 0: Inspect's batch size), `--batch-conversations`, `--no-prompt-cache`
    # (trustmh.models.batch; they change how calls are paid, not what a run computes: not in run.json)
    batch: int | None = None
    batch_conversations: bool = False
    batch_timeout: float | None = None  # `--batch-timeout`: seconds a batch may run before the run ends without it
    prompt_cache: bool = True
    # `--until-decided`: gated sub-tasks played in rounds and stopped once their checks are decided, read with
    # `--policy` (None: trustmh's default) (`run/rounds.py`). Not in run.json: the same run without the flag
    # finishes it, the items already asked answered from the response cache.
    until_decided: bool = False
    policy: str | Path | None = None


@dataclass(frozen=True)
class CostSettings:
    """What the run's calls cost and may cost (docs/cost.md): the plan's assumptions and the budget."""

    prices: dict[str, Price] = field(default_factory=dict)  # `--prices FILE`, loaded (`trustmh.prices`)
    budget: float | None = None  # `--budget`: the spending limit, in the price file's currency
    force: bool = False  # `--force`: start even when the plan's upper estimate is over the budget
    latency: float | None = None  # `--latency`: the plan's assumed seconds per call (None: its default)
    expect_reply_tokens: int | None = None  # `--expect-reply-tokens`: the plan's expected reply length


@dataclass(frozen=True)
class Output:
    """Where the run is written and what its report reads beside it."""

    out: Path | Url = Path("trustmh-out")  # `--out`: a local path or an fsspec URL (`trustmh.storage`)
    overwrite: bool = False  # `--overwrite`: replace a run of another configuration in `out` instead of refusing
    certificates: str | None = None  # `--certificates`: judge certificates directory (the report's Judges section)


# The parts `RunOptions` and `RunSpec` hold under these names, each handed on as given.
PARTS: dict[str, type[Execution] | type[CostSettings] | type[Output]] = {
    "execution": Execution, "cost": CostSettings, "output": Output}


def part_of(setting: str) -> str | None:
    """The name of the part that declares `setting` (None: not a field of any part)."""
    for name, part in PARTS.items():
        if setting in {f.name for f in fields(part)}:
            return name
    return None


def setting_names() -> list[str]:
    """Every field of every part, as a keyword of `RunOptions` and a `dest` of the command line."""
    return [f.name for part in PARTS.values() for f in fields(part)]
