"""`trustmh run`, `plan` and `merge`: their arguments and what each command does with them."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trustmh import exit_codes
from trustmh.cli.args import (
    MAX_CONNECTIONS,
    MAX_LIMIT,
    MAX_LOG_BUFFER,
    MAX_N_BOOT,
    MAX_REPLY_TOKENS,
    MAX_RETRIES,
    MAX_TASKS,
    MAX_TIMEOUT,
    MAX_WORKERS,
    MIN_N_BOOT,
    add_batch_arguments,
    agreement,
    at_least,
    correlation,
    csv_list,
    key_value,
    model_name,
    moved_url,
    positive_float,
    rate,
    shard_arg,
)
from trustmh.core import EPOCHS_MAX, SEED_MAX, TrustmhError
from trustmh.flag_values import FlagValue
from trustmh.judges.evidence import ASSUMED_AGREEMENT
from trustmh.run.budget import BUDGET_EXIT
from trustmh.stats.clustered import ASSUMED_ICC
from trustmh.storage import cli_path

SUITES = {
    "starter": "items written by trustmh for every implemented sub-task (offline demo; not the real data)",
    "trustmh": "TrustMH-Bench: the real datasets (TRUSTMH_DATA_DIR, cache or download; gated ones by path)",
    "mentalbench": "MentalBench: counselling responses for real contexts, judged on 7 attributes",
}


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """The arguments of `trustmh run`, shared by `trustmh plan`."""
    run.add_argument("--model", type=model_name("--model"), metavar="MODEL", help="any Inspect model, e.g. openai/gpt-4o-mini, ollama/llama3.1, "
                     "openai-api/<name>/<model>; default: the bundled gguf/smollm2")
    run.add_argument("--endpoint", type=Path, metavar="FILE",
                     help="with --model http/<name>: the product's own chat API, described in one TOML file "
                     "(URL, headers, body template, reply path, sessions; see docs/products.md)")
    run.add_argument("--suite", choices=sorted(SUITES), help="default: starter for the bundled model, "
                     "else trustmh")
    run.add_argument("--pillars", type=csv_list, metavar="LIST",
                     help="comma-separated pillars, e.g. crisis,privacy (`trustmh list` names them)")
    run.add_argument("--subtasks", type=csv_list, metavar="LIST",
                     help="comma-separated sub-task ids or task names, e.g. crisis/interjections (`trustmh list`)")
    run.add_argument("--limit", type=at_least(1, "--limit", MAX_LIMIT), metavar="N",
                     help="items per sub-task (faithful: the first N; default: a seeded stratified sample). "
                     "Samples can be more: fairness asks each context in 17 identity variants, privacy "
                     "awareness draws several samples per item, robustness asks each item at each "
                     "perturbation level; results.json records the samples of each sub-task")
    run.add_argument("--epochs", type=at_least(1, "--epochs", EPOCHS_MAX), default=1, metavar="N",
                     help=f"repeated administrations, 1 to {EPOCHS_MAX}: every item of the sub-tasks that repeat "
                     "their items (clinical/siri2, crisis/interjections) is asked N times; their intervals then "
                     "cover the repeats too (default 1)")
    run.add_argument("--judge", action="append", default=[], type=model_name("--judge"), metavar="MODEL",
                     help="judge model (Inspect `grader` role; temperature 0, seeded); repeat for an "
                     "ensemble (-O ensemble=vote|median|mean, -O min_valid=N)")
    run.add_argument("--patient", type=model_name("--patient"), metavar="MODEL[,MODEL...]", help="simulated patient's model for conversation/simulated_patient (Inspect "
                     "`patient` role); a comma-separated list is an ensemble, each model playing every n-th "
                     "profile (use several families); default: the run's judge, else the bundled gguf/smollm2")
    run.add_argument("--judge-validated", action="store_true",
                     help="mark the judge as validated for these tasks (you vouch for it)")
    run.add_argument("--certificates", metavar="DIR", help="judge certificates directory for the report's Judges "
                     "section (docs/judges.md#certificates)")
    run.add_argument("--no-judge", action="store_true", help="never call a judge (rule fallbacks only)")
    run.add_argument("--mode", choices=["default", "faithful"], default="default",
                     help="faithful: each benchmark's published protocol, to compare with published figures; default: "
                     "trustmh's corrected one (docs/pillars/index.md#modes)")
    run.add_argument("--seed", type=at_least(0, "--seed", SEED_MAX), default=0, metavar="N",
                     help="the seed of sampling, decoding, judges and every bootstrap (default 0)")
    run.add_argument("--out", type=cli_path, default=Path("trustmh-out"), metavar="DIR",
                     help="the run directory: a local path or an fsspec URL such as s3://bucket/run (Inspect "
                     "writes its logs there; for a URL the response cache stays on this machine: "
                     "$TRUSTMH_CACHE_DIR/responses if set, else ~/.cache/trustmh/url-runs/; default: "
                     "trustmh-out)")
    run.add_argument("--max-retries", type=at_least(0, "--max-retries", MAX_RETRIES), default=3, metavar="N",
                     help="retries of a failed model request (default 3)")
    run.add_argument("--timeout", type=at_least(1, "--timeout", MAX_TIMEOUT), default=120, metavar="SECONDS",
                     help="seconds per model request (default 120)")
    run.add_argument("--max-connections", type=at_least(1, "--max-connections", MAX_CONNECTIONS), metavar="N",
                     help="connections per model at once (default 10)")
    run.add_argument("--display", choices=["full", "conversation", "rich", "plain", "log", "none"],
                     help="Inspect's own progress display (default: off, with trustmh's one-line progress)")
    run.add_argument("--overwrite", action="store_true",
                     help="replace a run of another configuration in --out (default: refuse; the same "
                     "configuration continues where it stopped)")
    run.add_argument("--max-tasks", type=at_least(1, "--max-tasks", MAX_TASKS), metavar="N",
                     help="sub-tasks evaluated at once (default 4; 1 for the bundled model)")
    run.add_argument("--shard", type=shard_arg, metavar="I/N",
                     help="run only slice I of N (0-based) of every sub-task's items; combine the N shard "
                     "directories with `trustmh merge` (for job arrays: Slurm, Kubernetes, Ray)")
    run.add_argument("--log-buffer", type=at_least(1, "--log-buffer", MAX_LOG_BUFFER), metavar="N",
                     help="finished samples per write of a sub-task's log (default 50); a killed run runs at "
                     "most N finished samples per sub-task again, from the response cache")
    run.add_argument("--live-log", action="store_true",
                     help="Inspect's realtime event log: watch running samples in `inspect view` (costs CPU "
                     "per sample; off by default)")
    run.add_argument("--until-decided", action="store_true",
                     help="play each gated sub-task's items in a seeded random order, in rounds, and stop it once "
                     "every check it feeds is decided on an anytime-valid interval (`plan` prices it; the same "
                     "command continues a stopped run, the same without the flag plays every item)")
    run.add_argument("--workers", type=at_least(1, "--workers", MAX_WORKERS), metavar="N",
                     help="split the run over N shards (OUT/workers/i; local processes, or Ray tasks with "
                     "--engine ray), then merge them into OUT")
    run.add_argument("--engine", choices=["local", "ray"], default="local",
                     help="where the --workers shards run: local processes (default), or tasks on a Ray "
                     "cluster (pip install 'trustmh[ray]'; OUT must be on storage every node sees: the "
                     "same mounted path, or a URL such as s3://bucket/run)")
    run.add_argument("--ray-address", metavar="ADDR",
                     help="Ray cluster to use with --engine ray, e.g. 10.0.0.5:6379 or ray://head:10001 "
                     "(default: $RAY_ADDRESS, else a local cluster for this command)")
    run.add_argument("--ray-cpus", type=positive_float, default=1.0, metavar="C",
                     help="CPUs Ray reserves for each shard task (default 1)")
    run.add_argument("--no-cache", action="store_true",
                     help="do not use Inspect's response cache (default: on, in OUT/cache or "
                     "$TRUSTMH_CACHE_DIR/responses)")
    run.add_argument("--endpoint-moved", type=moved_url, action="append", default=[], metavar="OLD_URL=NEW_URL",
                     help="the same model, unchanged, now answers at NEW_URL: its replies cached at OLD_URL "
                     "are reused (the response cache is keyed by the endpoint's URL; docs/long-runs.md)")
    run.add_argument("--n-boot", type=at_least(MIN_N_BOOT, "--n-boot", MAX_N_BOOT), default=2000, metavar="N",
                     help="bootstrap replicates for intervals (default 2000)")
    run.add_argument("--rubric", choices=["trustmh", "upstream"],
                     help="crisis escalation rubric: ours (default) or the study's protocol.csv (same as "
                     "-O rubric=…)")
    run.add_argument("--tier2-limit", type=at_least(1, "--tier2-limit", MAX_LIMIT), metavar="N",
                     help="privacy awareness: tier-2 items per tier (faithful default 20; same as "
                     "-O tier2_limit=N)")
    run.add_argument("--full", action="store_true",
                     help="anti-sycophancy: every ELEPHANT row instead of the seeded sample (same as -O full=1)")
    run.add_argument("-O", "--option", type=key_value, action="append", default=[], metavar="KEY=VALUE",
                     help="sub-task option, e.g. -O swmh_path=/data/swmh.csv -O tier2_limit=98")


def add_price_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prices", type=Path, metavar="FILE",
                   help="price file (TOML: per model, input and output per million tokens, optionally "
                   "cached_input, cache_write, batch_input and batch_output; see examples/prices.toml, whose "
                   "figures are dated examples, not current prices)")
    p.add_argument("--latency", type=positive_float, metavar="SECONDS",
                   help="assumed seconds per call for the wall-time estimate (default 3)")
    p.add_argument("--expect-reply-tokens", type=at_least(1, "--expect-reply-tokens", MAX_REPLY_TOKENS), metavar="N",
                   help="expected length of the model's replies for the estimates (default 150; caps bound the "
                   "upper estimate)")


def add_budget_arguments(p: argparse.ArgumentParser) -> None:
    """--budget and --force: `run` obeys them; `plan` says whether the run would start."""
    p.add_argument("--budget", type=positive_float, metavar="AMOUNT",
                   help="spend at most AMOUNT (in the price file's currency; needs --prices): refuse to start "
                   "when the plan's upper estimate is over it (unless --force), and stop taking new samples "
                   f"when the counted cost reaches it (exit {BUDGET_EXIT}; the same command with a higher "
                   "budget continues); `plan` says whether the run would start")
    p.add_argument("--force", action="store_true", help="start even when the plan's upper estimate is over "
                   "--budget (the budget still stops the run)")


def add_run_commands(sub: Any) -> None:
    """The `run`, `plan` and `merge` sub-commands, on the top-level parser's sub-parsers."""
    run = sub.add_parser("run", help="evaluate a model (default: the bundled model on the starter suite)",
                         epilog=exit_codes.help_text(), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(run)
    run.add_argument("-v", "--verbose", action="store_true",
                     help="show Inspect's own progress display (its panels on a terminal, plain lines elsewhere) "
                     "instead of trustmh's one-line progress")
    run.add_argument("--policy", type=Path, metavar="NAME|FILE",
                     help="with --until-decided: the gate policy or pack whose checks decide (default: trustmh's)")
    add_price_arguments(run)
    add_budget_arguments(run)
    add_batch_arguments(run)

    pln = sub.add_parser("plan", help="what a run will ask, cost and be able to decide, without any model call "
                         "(takes the arguments of `run`)",
                         description="Plan the run that `trustmh run` with the same arguments would make, without "
                         "calling any model: calls, tokens, output, wall time and cost per sub-task and role, what "
                         "the release gate will be able to decide, and (--target-width, --detect-difference) the "
                         "items needed. See docs/cost.md.",
                         epilog="example: trustmh plan --model openai/gpt-4o-mini --judge openai/gpt-4o --prices "
                         "examples/prices.toml --limit 100 --target-width 0.1")
    add_run_arguments(pln)
    add_budget_arguments(pln)
    for action in pln._actions:  # plan writes only plan.json, and only where asked
        if action.dest == "out":
            action.help = "write plan.json into this directory (default: print the table only)"
    add_price_arguments(pln)
    add_batch_arguments(pln)
    pln.add_argument("--target-width", type=positive_float, metavar="W",
                     help="items needed per sub-task for a 95%% interval of total width W")
    pln.add_argument("--detect-difference", type=positive_float, metavar="D",
                     help="items needed per sub-task to detect a difference D between two models (80%% power, "
                     "two-sided alpha 0.05)")
    pln.add_argument("--pilot", type=cli_path, metavar="RUN_DIR",
                     help="a finished run whose per-item variance the power figures use (else --rate), and whose "
                     "judged values' correlation within a conversation set's units sizes the labels its checks "
                     "need (else --icc, stated beside)")
    pln.add_argument("--rate", type=rate, metavar="P", help="the rate assumed for interval widths and power "
                     "when there is no pilot (default: a check's own limit, else 0.5)")
    pln.add_argument("--policy", type=Path, metavar="NAME|FILE", help="gate policy or pack whose checks are looked at (default: trustmh's)")
    pln.add_argument("--icc", type=correlation, default=ASSUMED_ICC, metavar="R",
                     help="within-stimulus correlation assumed for the conversation checks' effective n "
                     f"(default {ASSUMED_ICC}; docs/statistics.md#clustered-intervals)")
    pln.add_argument("--assume-agreement", type=agreement, default=ASSUMED_AGREEMENT, metavar="A",
                     help="judge-human (and rater-rater) agreement assumed for the two-rater labels a judged check "
                     f"needs (default {ASSUMED_AGREEMENT}; docs/statistics.md#the-runs-own-labels)")
    pln.set_defaults(out=None)  # plan.json only where --out is given

    mrg = sub.add_parser("merge", help="combine the shard directories of one run (`run --shard I/N`)")

    mrg.add_argument("dirs", nargs="+", type=cli_path, metavar="SHARD_DIR", help="shard run directories (paths or URLs)")
    mrg.add_argument("--out", type=cli_path, required=True, metavar="DIR", help="merged run directory (a path or a URL)")


def run_options(args: argparse.Namespace) -> Any:
    """RunOptions from the arguments `run` and `plan` share."""
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.prices import load_prices
    from trustmh.run.config import RunOptions
    from trustmh.run.parts import setting_names

    if args.no_judge and args.judge:
        raise TrustmhError("--judge and --no-judge contradict each other; pass one")
    options = dict(args.option)
    # documented flags for the sub-task options people use most (the -O spelling keeps working)
    for key, value in (("rubric", args.rubric), ("tier2_limit", args.tier2_limit),
                       ("full", "1" if args.full else None)):
        if value is None:
            continue
        flag = f"--{key.replace('_', '-')}"
        typed = FlagValue(value, flag, typed=flag if key == "full" else None)  # a message names the flag
        if key in options and str(options[key]) != str(value):
            raise TrustmhError(f"{typed.typed} conflicts with -O {key}={options[key]}")
        options[key] = typed
    # the parts' settings (`run/parts.py`) by their names; an argument `plan` lacks keeps the part's default
    settings = {name: getattr(args, name) for name in setting_names() if hasattr(args, name)}
    settings.update(cache=not args.no_cache, cache_moved={new: old for old, new in args.endpoint_moved},
                    prompt_cache=not args.no_prompt_cache, prices=load_prices(args.prices))
    return RunOptions(model=args.model, suite=args.suite, pillars=args.pillars, subtasks=args.subtasks,
                      limit=args.limit, epochs=args.epochs, judge=args.judge[0] if args.judge else None,
                      more_judges=list(args.judge[1:]), no_judge=args.no_judge, judge_validated=args.judge_validated,
                      mode=args.mode, seed=args.seed, n_boot=args.n_boot, options=options, patient=args.patient,
                      endpoint=getattr(args, "endpoint", None), **settings)


def cmd_run(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.run.config import use_endpoint
    from trustmh.run.execute import run

    opts = run_options(args)
    if args.workers and args.shard:
        raise TrustmhError("--workers and --shard contradict each other; pass one")
    if (args.ray_address or args.ray_cpus != 1.0) and args.engine != "ray":
        raise TrustmhError("--ray-address and --ray-cpus go with --engine ray")
    if args.engine != "local" and not args.workers:
        raise TrustmhError(f"--engine {args.engine} runs the shards of --workers N; pass --workers")
    if args.workers:
        if args.endpoint is not None:
            use_endpoint(args.model, args.endpoint)  # a bad file fails here, before any shard starts
        if args.budget is not None:
            raise TrustmhError("--budget applies to a single-process run, not to --workers shards")
        code = run_workers(args)
    else:
        _, code = run(opts)
    if code in (exit_codes.PASS, exit_codes.INCOMPLETE):
        for line in next_steps(args.out, demo=args.model is None, shard=args.shard):
            print(f"trustmh: {line}", file=sys.stderr)
    if code == BUDGET_EXIT:
        print(f"trustmh: stopped at the budget (exit {BUDGET_EXIT}); the same command with a higher --budget "
              "continues", file=sys.stderr)
    elif code:
        print(f"trustmh: some tasks errored; see results.json 'errors' (exit {code})", file=sys.stderr)
    return code


# The README's next step after the demo: price a run of one's own model before any call.
PLAN_YOUR_MODEL = ("trustmh plan --model openai/gpt-4o-mini --judge anthropic/claude-sonnet-4-5 --batch "
                   "--prices examples/prices.toml")


def next_steps(out: Any, *, demo: bool, shard: tuple[int, int] | None = None) -> list[str]:
    """Where a finished run's report is and the command to try next."""
    if shard is not None:
        return [f"shard {shard[0]}/{shard[1]} written to {out}; once every shard has finished: trustmh merge "
                "SHARD_DIR... --out RUN_DIR"]
    lines = [f"report: {out / 'report.html'} (open it in a browser); the release gate's verdict: trustmh gate {out}"]
    if demo:
        lines.append(f"next, your own model, priced before any call: {PLAN_YOUR_MODEL} (then `trustmh run` with "
                     "the same arguments; README, 'Evaluating your model')")
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    """`trustmh plan`: the run's calls, tokens, wall time, cost and power, without a model call."""
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.certify.pilot import pilot_correlations
    from trustmh.run.budget import needs_prices, over_budget
    from trustmh.run.config import resolve
    from trustmh.run.estimate import estimate, plan_settings, to_json
    from trustmh.run.estimate_table import table
    from trustmh.run.plan_figures import BudgetOutlook
    from trustmh.run.select import plan_run
    from trustmh.storage import write_text_atomic

    opts = run_options(args)
    needs_prices(opts.cost)
    spec = resolve(opts)
    plan = plan_run(spec)
    data = estimate(plan, plan_settings(spec, rate=args.rate, target_width=args.target_width,
                                        detect_difference=args.detect_difference, pilot=args.pilot,
                                        policy=args.policy, icc=args.icc,
                                        assume_agreement=args.assume_agreement,
                                        pilot_correlations=pilot_correlations(args.pilot) if args.pilot else None))
    if args.budget is not None:
        why = over_budget(data, args.budget)
        data = replace(data, budget=BudgetOutlook(amount=args.budget, would_start=why is None or args.force,
                                                  reason=why))
    print(table(data))
    if args.until_decided:
        # imported when asked for, not at start-up (`trustmh --help` and `list` stay fast)
        from trustmh.run.rounds import decide_outlook

        print("\n" + "\n".join(decide_outlook(plan, data, args.policy)))
    if args.budget is not None:
        if why is None:
            verdict = f"would start: the plan's upper estimate {data.totals.cost.max:.4f} is within it"
        elif args.force:
            verdict = f"would start (--force) and stop at the budget: {why}"
        else:
            verdict = f"would refuse to start: {why}"
        print(f"\nbudget {args.budget:g}: `trustmh run` {verdict}")
    if args.out is not None:
        write_text_atomic(args.out / "plan.json", to_json(data))
        print(f"trustmh: wrote {args.out / 'plan.json'}", file=sys.stderr)
    return 0


def run_workers(args: argparse.Namespace) -> int:
    """`--workers N`: N shards `trustmh run --shard i/N` into OUT/workers/i (local processes, or Ray tasks with
    `--engine ray`), then `merge` into OUT."""
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.run.launch import launch, shard_dir
    from trustmh.run.shards import merge

    argv = getattr(args, "argv", None) or (list(sys.argv[1:]) if sys.argv[1:2] == ["run"] else ["run"])
    outcomes = launch(args.engine, argv, args.out, args.workers, ray_address=args.ray_address,
                      ray_cpus=args.ray_cpus)
    _, code = merge([shard_dir(args.out, i) for i in range(args.workers)], args.out)
    return max(code, *(o.code or 0 for o in outcomes))


def cmd_merge(args: argparse.Namespace) -> int:
    # imported when the command runs, not at start-up (`trustmh --help` and `list` stay fast)
    from trustmh.run.shards import merge

    refuse_finished_run(args.out, list(args.dirs))
    _, code = merge(list(args.dirs), args.out)
    return code


def refuse_finished_run(out: Any, shards: list[Any]) -> None:
    """`merge --out` never replaces a run of its own (a directory with results.json and Inspect logs of its
    own: a merge writes no logs, so a previous merge of these shards is continued) nor writes into a shard."""
    if any(str(out).rstrip("/") == str(d).rstrip("/") for d in shards):
        raise TrustmhError(f"merge --out {out}: is one of the shard directories; merge into a new directory")
    if (out / "results.json").exists() and any((out / "logs").glob("*.eval")):
        raise TrustmhError(f"merge --out {out}: holds a finished run of its own (results.json and logs/); merge "
                           "into a new directory, or remove that run first")
