"""`trustmh rescore`: outputs produced elsewhere → the same results files as `trustmh run`.

Each format module turns released outputs into trustmh `Record`s and aggregates them with the live
sub-task's own `aggregate`, so a rescore exercises exactly the scorers of a live run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from trustmh.cli.rescore_mentalbench import rescore_mentalbench
from trustmh.core import Item, Mode, Record, SubtaskResult, TrustmhError
from trustmh.data.locate import reset_resolved
from trustmh.digest import sha256_bytes
from trustmh.inspect_compat import provider_discounts
from trustmh.pillars.clinical.rescore import rescore_siri2
from trustmh.pillars.conversation.mindeval import rescore_mindeval
from trustmh.pillars.crisis.moore_rescore import rescore_moore
from trustmh.pillars.crisis.rescore import StoredAnswerJudge, rescore_crisis
from trustmh.pillars.ethics.rescore import rescore_ethics
from trustmh.pillars.fairness.stigma_rescore import rescore_moore_stigma
from trustmh.pillars.privacy.rescore import rescore_privacy
from trustmh.report import comparison_report_html, run_report_html
from trustmh.results import RunResults, write_run
from trustmh.results.leaderboard import leaderboard
from trustmh.run.config import check_model_name, run_manifest
from trustmh.run.direct import direct_spec
from trustmh.run.parts import Execution
from trustmh.storage import write_text_atomic

if TYPE_CHECKING:
    from inspect_ai.model import Model

CRISIS_ORIGINAL = "crisis-original"
ORIGINAL_NOTICE = ("rescored from the released outputs of the original TrustMH-Bench; judge scores are the "
                   "original's (gpt-4.1), not re-judged")


def rescore(fmt: str, source: Path, out: Path, *, mode: Mode = "faithful", seed: int = 0,
            judges: Sequence[str | Model] | None = None, limit: int | None = None,
            execution: Execution | None = None) -> int:
    """`execution`: how the judges of mentalbench and crisis-original are called (`--batch`, `--no-prompt-cache`;
    the run's Inspect call applies them); the other formats are wrapped in `provider_discounts` by `cmd_rescore`."""
    if fmt == CRISIS_ORIGINAL:
        return _rescore_crisis(source, out, seed=seed, judges=judges or [], execution=execution or Execution())
    if fmt in ("siri2", "moore-stigma"):
        if judges:
            raise TrustmhError(f"rescore --format {fmt}: takes no --judge (the released results are rescored as "
                               "they stand)")
        if fmt == "siri2":
            return rescore_siri2(source, out, seed=seed)
        return rescore_moore_stigma(source, out, seed=seed)
    if fmt == "moore-interjections":
        if judges:
            raise TrustmhError("rescore --format moore-interjections takes no --judge (the published verdicts are "
                               "summarised; certify a judge with `trustmh judge certify --reference moore-interjections`)")
        return rescore_moore(source, out, seed=seed)
    if fmt == "mindeval":
        if not source.is_dir():
            raise TrustmhError(f"--from {source}: not a directory (give a copy of SWORDHealth/mind-eval)")
        return rescore_mindeval(source, out, seed=seed)
    if fmt == "mentalbench" and not source.exists():
        raise TrustmhError(f"--from {source}: no such file or directory")
    if fmt != "mentalbench" and not source.is_dir():
        raise TrustmhError(f"--from {source}: not a directory")
    reset_resolved()
    if fmt == "trustmh-original":
        return rescore_trustmh_original(source, out, mode=mode, seed=seed)
    if fmt == "mentalbench":

        return rescore_mentalbench(source, out, mode=mode, seed=seed, judges=judges or [], limit=limit,
                                   execution=execution)
    raise TrustmhError(f"unknown rescore format {fmt!r}")


def rescore_trustmh_original(source: Path, out: Path, *, mode: Mode = "faithful", seed: int = 0) -> int:
    """Released Ethics (12 models) and Privacy (6 models) outputs → `out/<model>/results.json` each."""
    ctx = direct_spec(mode=mode, seed=seed, suite="trustmh-original-released").context()
    per_model: dict[str, dict[str, tuple[SubtaskResult, list[Record]]]] = {}
    found = []
    ethics_dir = source / "TrustMH_Bench" / "DimGroup2" / "Ethics" / "outputs"
    if ethics_dir.is_dir():

        for model, pair in rescore_ethics(source, ctx).items():
            per_model.setdefault(model, {})["ethics/ethical_reasoning"] = pair
        found.append("ethics")
    privacy_dir = source / "TrustMH_Bench" / "DimGroup1" / "General-model" / "privacy"
    if privacy_dir.is_dir():

        for model, by_subtask in rescore_privacy(source, ctx).items():
            per_model.setdefault(model, {}).update(by_subtask)
        found.append("privacy")
    if not found:
        raise TrustmhError(f"{source}: no released outputs found (expected TrustMH_Bench/DimGroup2/Ethics/outputs "
                           "or TrustMH_Bench/DimGroup1/General-model/privacy); point --from at a folder laid "
                           "out like the original repository's top level")
    runs = []
    items = []
    for model in sorted(per_model):
        subtasks = {sid: pair[0] for sid, pair in per_model[model].items()}
        records = {sid: pair[1] for sid, pair in per_model[model].items()}
        run = RunResults(model=model, ctx=ctx, subtasks=subtasks, records=records,
                         notice=ORIGINAL_NOTICE, source=str(source))
        runs.append(write_run(run, out / _safe_dir_name(model), report=run_report_html))
        items.append([r.to_dict() for recs in records.values() for r in recs])

    write_text_atomic(out / "report.html", comparison_report_html(leaderboard(runs, items), runs, items))
    print(f"trustmh: rescored {len(runs)} models ({', '.join(found)}) into {out}", file=sys.stderr)
    return 0


def _safe_dir_name(model: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model)


def _rescore_crisis(source: Path, out: Path, *, seed: int, judges: Sequence[str | Model], execution: Execution
                    ) -> int:

    if not source.is_dir():
        raise TrustmhError(f"--from {source}: not a directory (give the crisis study's repository folder)")
    if len(judges) > 1:
        raise TrustmhError("rescore --format crisis-original: one --judge at most (trustmh's own judge)")
    if not judges:
        return rescore_crisis(source, out, seed=seed)
    if isinstance(judges[0], str):
        check_model_name(judges[0], "--judge")
    return rescore_crisis(source, out, seed=seed, judge=_judged_as_a_run(judges[0], seed, out, execution),
                          judge_label=str(judges[0]))


def _judged_as_a_run(judge: str | Model, seed: int, out: Path, execution: Execution
                     ) -> Callable[[list[Item]], list[Record]]:
    """The stored answers judged as a certification judges its reference: fixed replies, one eval set (its log
    and response cache under `out/work/<digest>`, so the same rescore run again resumes and asks no call twice;
    another judge, seed or set of answers never reads its logs as its own)."""
    # imported when the judge is asked, not at start-up: they load Inspect
    from trustmh.certify.measure import certification_spec, judge_fixed_replies
    from trustmh.run.reference import ReferenceRun

    def judge_items(items: list[Item]) -> list[Record]:
        spec = certification_spec([judge], ReferenceRun(name=CRISIS_ORIGINAL, subtask=StoredAnswerJudge.id),
                                  seed=seed, batch=execution.batch, prompt_cache=execution.prompt_cache)
        config = json.dumps([run_manifest(spec), [item.prompt for item in items]], sort_keys=True)
        work = out / "work" / sha256_bytes(config.encode("utf-8"))[:16]
        return judge_fixed_replies(StoredAnswerJudge(), items, spec, work, name=f"{CRISIS_ORIGINAL} answers")

    return judge_items


def cmd_rescore(args: argparse.Namespace) -> int:
    batch = args.batch
    # a judge that is a run (its stored replies judged through the one Inspect call, which applies `execution`)
    judged_run = args.fmt == "mentalbench" or (args.fmt == CRISIS_ORIGINAL and bool(args.judge))
    if batch is not None and not (judged_run and args.judge):  # mentalbench with no judge has nothing to batch
        print(f"trustmh: --batch applies to `rescore --format mentalbench` or `{CRISIS_ORIGINAL}` with a --judge; "
              f"{args.fmt} asks no judge here", file=sys.stderr)
        batch = None
    execution = Execution(batch=batch, prompt_cache=not args.no_prompt_cache)
    if judged_run:
        return rescore(args.fmt, args.source, args.out, mode=args.mode, seed=args.seed, judges=args.judge,
                       limit=args.limit, execution=execution)
    with provider_discounts(None, prompt_cache=execution.prompt_cache):
        return rescore(args.fmt, args.source, args.out, mode=args.mode, seed=args.seed, judges=args.judge,
                       limit=args.limit)
