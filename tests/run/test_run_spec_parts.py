"""`RunSpec` is composed of typed parts (`run/config.py`: the model, the judges, the patient; `run/parts.py`:
execution, cost, output). A setting of a part reaches the spec from the command line by its name alone: every
field of every part set to a value other than its default on the command line comes out of
`run_options` -> `resolve` unchanged, and a field added to a part without a command-line argument fails here."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from fixture_paths import REPO
from trustmh.cli import build_parser
from trustmh.cli.run import run_options
from trustmh.prices import load_prices
from trustmh.run.config import RunOptions, options_from_manifest, resolve, run_manifest
from trustmh.run.parts import PARTS, CostSettings, Execution, Output

PRICES = REPO / "examples" / "prices.toml"
# Every field of every part: (the command-line words that set it, the value the spec must hold).
NON_DEFAULT: dict[str, tuple[list[str], Any]] = {
    "timeout": (["--timeout", "7"], 7),
    "max_retries": (["--max-retries", "1"], 1),
    "cache": (["--no-cache"], False),
    "cache_moved": (["--endpoint-moved", "https://old.example/v1=https://new.example/v1"],
                    {"https://new.example/v1": "https://old.example/v1"}),
    "max_connections": (["--max-connections", "3"], 3),
    "max_tasks": (["--max-tasks", "2"], 2),
    "display": (["--display", "plain"], "plain"),
    "verbose": (["--verbose"], True),
    "shard": (["--shard", "1/3"], (1, 3)),
    "log_buffer": (["--log-buffer", "5"], 5),
    "live_log": (["--live-log"], True),
    "batch": (["--batch", "50"], 50),
    "batch_conversations": (["--batch-conversations"], True),
    "batch_timeout": (["--batch-timeout", "90"], 90.0),
    "prompt_cache": (["--no-prompt-cache"], False),
    "until_decided": (["--until-decided"], True),
    "policy": (["--policy", "faithful"], Path("faithful")),
    "prices": (["--prices", str(PRICES)], load_prices(PRICES)),
    "budget": (["--budget", "2.5"], 2.5),
    "force": (["--force"], True),
    "latency": (["--latency", "1.5"], 1.5),
    "expect_reply_tokens": (["--expect-reply-tokens", "90"], 90),
    "out": (["--out", "OUT"], None),  # the path under tmp_path (set in the test)
    "overwrite": (["--overwrite"], True),
    "certificates": (["--certificates", "certs"], "certs"),
}
SELECTION = ["--model", "openai/gpt-4o-mini", "--judge", "openai/gpt-4o", "--judge", "anthropic/claude-3-5-sonnet-latest",
             "--judge-validated", "--patient", "openai/gpt-4o-mini", "--suite", "trustmh",
             "--subtasks", "clinical/siri2,conversation/simulated_patient", "--limit", "3", "--epochs", "2",
             "--seed", "11", "--n-boot", "500", "-O", "reasks=0"]


def _spec(tmp_path: Path) -> Any:
    words = [w for argv, _ in NON_DEFAULT.values() for w in argv]
    words[words.index("OUT")] = str(tmp_path / "out")
    args = build_parser().parse_args(["run", *SELECTION, *words])
    return resolve(run_options(args))


def test_the_table_sets_every_field_of_every_part() -> None:
    assert set(NON_DEFAULT) == {f.name for part in PARTS.values() for f in fields(part)}


@pytest.mark.parametrize("name", sorted(NON_DEFAULT))
def test_every_part_setting_reaches_the_spec_from_the_command_line(name: str, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    part = getattr(spec, next(p for p, cls in PARTS.items() if name in {f.name for f in fields(cls)}))
    expected = tmp_path / "out" if name == "out" else NON_DEFAULT[name][1]
    default = next(f for f in fields(part) if f.name == name)
    assert getattr(part, name) == expected and expected != (
        default.default_factory() if callable(default.default_factory) else default.default)


def test_the_parts_round_trip_through_the_request(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    again = resolve(RunOptions(model=spec.model.target, judge=spec.judges.info.members[0],
                               more_judges=list(spec.judges.info.members[1:]), judge_validated=True,
                               patient=spec.patient.models[0], suite=spec.suite, subtasks=list(spec.subtasks),
                               limit=spec.limit, epochs=spec.epochs, mode=spec.mode, seed=spec.seed,
                               n_boot=spec.n_boot, options=spec.options, execution=spec.execution, cost=spec.cost,
                               output=spec.output))
    assert again == spec


def test_the_manifest_round_trip_keeps_what_a_run_computes(tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    again = resolve(options_from_manifest(run_manifest(spec), spec.output.out))
    assert run_manifest(again) == run_manifest(spec)


def test_a_keyword_goes_to_the_part_that_declares_it() -> None:
    opts = RunOptions(timeout=9, budget=1.0, overwrite=True)
    assert (opts.execution, opts.cost, opts.output) == (Execution(timeout=9), CostSettings(budget=1.0),
                                                        Output(overwrite=True))


def test_a_keyword_no_part_declares_is_refused() -> None:
    with pytest.raises(TypeError, match="no setting 'timeuot'"):
        RunOptions(timeuot=9)
