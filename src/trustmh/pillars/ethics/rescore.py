"""Rescore the original's released Ethics outputs (docs/reproducing.md#ethics): 12 models on EthicMH.

Each released `{model}-ethics_reasoning-{stamp}-125.json` becomes trustmh `Record`s built with
`make_record` and is aggregated by the live `EthicalReasoning.aggregate`:
- choice: the live choice parser on `response.content` (API models), else the released
  `model_choice_option` (the six mental-health models were released without raw text);
- gold: EthicMH by `sample_id`; the judge's sc1..sc5 come from `judge_parsed`, passed through the live
  judge parser. A value that is not a score 1-5 (99, -3, "high") is left out of the means and named, on
  stderr and in the result's notes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from trustmh.core import Record, RunContext, SubtaskResult, TrustmhError, judge_info, make_record
from trustmh.data.rows import RowProblem, RowReport
from trustmh.invalid import aggregate_records
from trustmh.pillars.ethics.data import load_ethicmh
from trustmh.pillars.ethics.reasoning import JUDGE_NAME, EthicalReasoning, sc_problems

OUTPUTS_REL = Path("TrustMH_Bench/DimGroup2/Ethics/outputs")
ETHICMH_REL = Path("TrustMH_Bench/DimGroup2/Ethics/data/EthicMH.csv")
_FILE = re.compile(r"^(?P<model>.+?)-ethics_reasoning-(?P<stamp>\d{8}_\d{2}_\d{2}_\d{2})-(?P<n>\d+)\.json$")
# The original misspells one model in its file names.
DISPLAY_NAMES = {"Medtron3-70B": "Meditron3-70B"}


def display_name(file_model: str) -> str:
    return DISPLAY_NAMES.get(file_model, file_model)


def released_files(root: Path) -> dict[str, Path]:
    """File-name model → released JSON path. Two files for one model is an error (which one is meant?)."""
    outputs = root / OUTPUTS_REL
    if not outputs.is_dir():
        raise TrustmhError(f"{outputs}: folder of released Ethics outputs not found")
    found: dict[str, Path] = {}
    for path in sorted(outputs.glob("*-ethics_reasoning-*.json")):
        m = _FILE.match(path.name)
        if m is None:
            continue
        model = m.group("model")
        if model in found:
            raise TrustmhError(f"{outputs}: two released files for model {model!r}: {found[model].name}, {path.name}")
        found[model] = path
    if not found:
        raise TrustmhError(f"{outputs}: no *-ethics_reasoning-*.json files")
    return found


def _rescore_file(path: Path, subtask: EthicalReasoning, items: dict[int, Any],
                  ctx: RunContext) -> tuple[SubtaskResult, list[Record]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{path}: invalid JSON ({exc.msg} at line {exc.lineno})") from exc
    for key in ("results", "judged"):
        if not isinstance(data.get(key), list):
            raise TrustmhError(f"{path}: field {key!r} must be a list")
    judge_model = data.get("judge_model")
    # the released file's own judge, unvalidated
    rctx = dataclasses.replace(ctx, judge=judge_info([judge_model] if judge_model else [], seed=ctx.judge.seed))
    results = {}
    for i, r in enumerate(data["results"]):
        if "sample_id" not in r:
            raise TrustmhError(f"{path}: results[{i}] has no 'sample_id'")
        results[int(r["sample_id"])] = r
    records: list[Record] = []
    report = RowReport()
    for i, j in enumerate(data["judged"]):
        where = f"{path}: judged[{i}]"
        sid = j.get("sample_id")
        if sid is None or int(sid) not in items:
            raise TrustmhError(f"{where}: field 'sample_id' {sid!r} is not an EthicMH index")
        item = items[int(sid)]
        res = results.get(int(sid))
        if res is None:
            raise TrustmhError(f"{where}: no entry in 'results' for sample_id {sid}")
        parsed = j.get("judge_parsed")
        for key, value in sc_problems(parsed) if isinstance(parsed, dict) else []:
            report.add(RowProblem(f"{path.name} judged", i, f"judge_parsed.{key}", f"not a score 1-5 ({value!r})",
                                  "score not used"))
        judge_outputs = {JUDGE_NAME: json.dumps(parsed, ensure_ascii=False)} if isinstance(parsed, dict) else {
            JUDGE_NAME: ""}
        raw = j.get("judge_raw")
        judge_raw = {JUDGE_NAME: raw.get("content", "") if isinstance(raw, dict) else str(raw or "")}
        if isinstance(res.get("response"), dict):
            response = res["response"].get("content") or ""
            score = subtask.score(item, response, judge_outputs, rctx)
            source = "response.content"
        elif "model_choice_option" in res:
            response = res.get("model_reasoning") or ""
            choice = res["model_choice_option"]
            choice = choice if choice in ("A", "B", "C", "D") else None
            score = subtask.score_choice(item, choice, judge_outputs, rctx)
            source = "model_choice_option"
        else:
            raise TrustmhError(f"{path}: results for sample_id {sid} have neither 'response' nor "
                               "'model_choice_option'")
        records.append(make_record(subtask, item, response, score, judge_raw=judge_raw,
                                   extra={"reasked": False, "choice_source": source}))
    result = aggregate_records(subtask, records, rctx)
    result.judge = {"model": judge_model, "validated": False}
    if report.problems:
        report.log()
        result.notes.append(report.note("judge score(s) not a score 1-5, left out of the sc means"))
    result.notes.append(f"rescored from {path.name}; sc scores are the original judge's ({judge_model}), "
                        "which was shown the gold letter")
    return result, records


def rescore_ethics(root: Path, ctx: RunContext) -> dict[str, tuple[SubtaskResult, list[Record]]]:
    """Display model name → (result, records) for every released Ethics output under `root`."""
    root = Path(root)
    data_path = root / ETHICMH_REL
    if not data_path.is_file():
        raise TrustmhError(f"{data_path}: EthicMH.csv not found next to the released outputs")
    subtask = EthicalReasoning()
    # The models saw the faithfully decoded text; the rows only supply gold, subcategory and judge inputs.
    items = {int(row["index"]): subtask.item_from_row(row) for row in load_ethicmh(data_path, "faithful")}
    out: dict[str, tuple[SubtaskResult, list[Record]]] = {}
    for model, path in released_files(root).items():
        result, records = _rescore_file(path, subtask, items, ctx)
        out[display_name(model)] = (result, records)
    return out
