"""`trustmh rescore --format mentalbench`: re-judge the published MentalBench responses with new judge(s).

Every published reply (the `response` column as source `original`, and each model column, docs/pillars/mentalbench.md#data) of the
first `--limit` contexts in file order (the first 1,000 are the MentalAlign subset) is judged through
Inspect by the live `mentalbench/generation` sub-task, which treats them as fixed replies: the "model" of
the Inspect run is a replay stub that is never judged. Outputs: the usual results.json / results.csv /
items.jsonl / report.html, plus `judge_long.csv` (+ `judge_long_all.csv`) and, when the MentalAlign
workbooks are available, `human_long.csv`, so that

    trustmh rescore --format mentalbench --from DIR --out OUT --judge MODEL [--judge MODEL2 ...] --limit 1000
    trustmh align --human OUT/human_long.csv --judge OUT/judge_long.csv --mode default --out OUT/align.json

measures the new judge(s) against the released expert ratings. In `faithful` mode the judges see the
published text as it is (reasoning leaks included; a missing reply as `nan`) and scores come from the
strict parser; in `default` mode reasoning is stripped, missing or reasoning-only replies are not judged
(`no_response`), scores come from the robust parser, and human_long.csv leaves out the 19 rows whose human
rating belongs to another conversation (docs/align.md#data-quality).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from trustmh.catalogue import get_subtask
from trustmh.core import Mode, TrustmhError
from trustmh.data import resolve
from trustmh.digest import sha256_bytes, sha256_file
from trustmh.judges.ensemble import ensemble_option
from trustmh.pillars.mentalbench.data import find_data_file
from trustmh.pillars.mentalbench.export import HUMAN_LONG, export_long_table, human_long_table
from trustmh.report import run_report_html
from trustmh.results import RunResults, write_run
from trustmh.run.collect import records_from_log
from trustmh.run.config import run_manifest
from trustmh.run.direct import direct_spec
from trustmh.run.finalize import aggregate
from trustmh.run.inspect_eval import evaluate
from trustmh.run.parts import Execution
from trustmh.run.select import RunPlan
from trustmh.run.tasks import build_task

SUBTASK_ID = "mentalbench/generation"
NOTICE = ("rescore of the published MentalBench responses: every source is a fixed reply judged by the "
          "judge(s) named here; no model was run")


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def _data_path(source: Path) -> Path:

    if source.is_file():
        return source
    if not source.is_dir():
        raise TrustmhError(f"--from {source}: not a file or directory")
    files = find_data_file(source)
    return files[0] if len(files) == 1 else source


def _replay_model() -> Any:
    """A stand-in for the model under test: every item of a rescore is a fixed reply, so its output is
    never used. Outputs carry token usage so that mockllm never looks for a tokenizer."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def outputs(messages: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        out = ModelOutput.from_content(model="published", content="OK")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return get_model("mockllm/published", custom_outputs=outputs, memoize=False)


def _mentalalign_dir(options: dict[str, Any]) -> Path | None:
    if options.get("mentalalign_dir"):
        return Path(options["mentalalign_dir"])

    try:
        return resolve("mentalalign", "mentalalign/Human_Judge/Human_judge.xlsx").parent.parent
    except TrustmhError:
        return None


def rescore_mentalbench(source: Path, out: Path, *, mode: Mode, seed: int, judges: list[Any],
                        limit: int | None, options: dict[str, Any] | None = None, n_boot: int = 2000,
                        display: str | None = None, execution: Execution | None = None) -> int:
    """Judge the published responses in `source` (a MentalBench CSV/Parquet/JSON(L) file, a folder holding
    one, or a Hugging Face export folder) with `judges` (model strings; the first may also be an Inspect
    `Model`). `execution`: how the judges are called (`--batch`…; `display` overrides its display). Returns 0,
    or 1 when some samples errored (see results.json `errors`)."""
    if not judges:
        raise TrustmhError("rescore --format mentalbench: name at least one judge (--judge MODEL)")
    if limit is not None and limit < 1:
        raise TrustmhError(f"--limit must be >= 1, got {limit}")
    path = _data_path(Path(source))
    labels = [str(j) for j in judges]
    opts: dict[str, Any] = {"mentalbench_path": str(path), "rescore": "1", "selection": "head", **(options or {})}
    if len(judges) > 1 and not all(isinstance(j, str) for j in judges):
        raise TrustmhError("an ensemble of judges must be given as model strings")
    execution = replace(execution or Execution(), **({"display": display} if display else {}))
    spec = direct_spec(mode=mode, seed=seed, suite="mentalbench", limit=limit, subtasks=[SUBTASK_ID], judges=judges,
                       options=opts, n_boot=n_boot, model=f"published:{path.name}", model_target=_replay_model(),
                       ensemble=ensemble_option(opts), execution=execution)
    ctx = spec.context()
    subtask = get_subtask(SUBTASK_ID)
    task = build_task(SUBTASK_ID, ctx)
    _log(f"rescoring published MentalBench responses from {path} with judge(s) {', '.join(labels)} "
         f"(mode={mode}, limit={limit})")
    # one eval set per configuration (settings, versions, the file's content): the same rescore run again continues
    # its own; another (a new --limit, judge or file) never reads its logs as its own
    config = json.dumps([run_manifest(spec), sha256_file(path) if path.is_file() else str(path)], sort_keys=True)
    logs = evaluate(RunPlan(spec=spec, ctx=ctx, tasks=[task], subtasks={SUBTASK_ID: subtask}), Path(out),
                    log_dir=Path(out) / "logs" / sha256_bytes(config.encode("utf-8"))[:16])
    errors: list[str] = []
    records = []
    for log in logs:
        recs, n_errors, _ = records_from_log(log)
        records.extend(recs)
        if log.status != "success":
            errors.append(f"{SUBTASK_ID}: task {log.status}: {log.error.message if log.error else log.status}")
        if n_errors:
            errors.append(f"{SUBTASK_ID}: {n_errors} sample(s) errored")
    result = aggregate(subtask, records, ctx, 0)
    run = RunResults(model=f"published:{path.name}", ctx=ctx, subtasks={SUBTASK_ID: result},
                     records={SUBTASK_ID: records}, errors=errors,
                     notice=NOTICE, source=str(path), judges=labels)
    out = Path(out)
    write_run(run, out, report=run_report_html)
    paths = export_long_table(records, out)
    written = [out / "results.json", *paths.values()]
    if "judge_long" not in paths:
        _log("judge_long.csv not written: no judged reply can be paired with the human ratings")
    ma_dir = _mentalalign_dir(opts)
    if ma_dir is not None:
        try:
            try:
                written.append(human_long_table(ma_dir, out / HUMAN_LONG,
                                                exclude_misaligned=(mode == "default")))
            except TrustmhError as exc:
                if mode != "default":
                    raise
                _log(f"cannot leave out the misaligned human rows ({exc}); writing all rows")
                written.append(human_long_table(ma_dir, out / HUMAN_LONG))
        except TrustmhError as exc:
            _log(f"human_long.csv not written: {exc}")
    _log("wrote " + ", ".join(str(p) for p in written))
    return 1 if errors else 0
