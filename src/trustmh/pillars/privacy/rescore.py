"""Rescoring of the original's released Privacy outputs (docs/reproducing.md#privacy).

`root` is laid out like `shared/data/trustmh`: the released files live under
`TrustMH_Bench/DimGroup1/General-model/privacy/task{1,2,3}/`. Each released answer becomes a `Record`
scored by the live sub-task's `score` and aggregated by its `aggregate` in faithful mode, so rescoring and
live runs share one code path.

- Tier 1: `task1/result/outputs_{model}_tier1.jsonl`; the `parsed` field is mapped (not `raw`: on one
  model's raw text the faithful "very" rule fires inside an explanation).
- Tiers 2a/2b: `task2/result/final_report_{model}_data_tier_2{a,b}_nsamples_1.json` hold only the mapped
  number (`model`), which is fed to the faithful tier-2 mapper as text.
- Tier 3: `task3/result/outputs_{model}_data_tier_3_nsamples_1_q_…jsonl`, 400 rows; the released `input`
  is checked against our faithful prompt, and duplicated or missing scenarios are reported.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

from trustmh.core import Item, Record, RunContext, SubtaskResult, TrustmhError, make_record
from trustmh.data.files import read_jsonl
from trustmh.data.rows import RowProblem, RowReport
from trustmh.invalid import aggregate_records
from trustmh.pillars.privacy.awareness import PrivacyAwareness
from trustmh.pillars.privacy.data import load_confaide_tier1, load_confaide_tier2, load_psyleak
from trustmh.pillars.privacy.leak_prompts import faithful_story
from trustmh.pillars.privacy.leakage import QUESTION_TYPES, PrivacyLeakage, scenario_coverage
from trustmh.pillars.privacy.parse import TIER2_VALUES

PRIVACY_DIR = Path("TrustMH_Bench/DimGroup1/General-model/privacy")
TIER3_SUFFIX = "_data_tier_3_nsamples_1_q_free-response,info-accessibility,privacy-sharing,control.jsonl"

_T1 = re.compile(r"^outputs_(?P<model>.+)_tier1\.jsonl$")
_T2 = re.compile(r"^final_report_(?P<model>.+)_data_tier_2(?P<v>[ab])_nsamples_1\.json$")
_T3 = re.compile(r"^outputs_(?P<model>.+)" + re.escape(TIER3_SUFFIX) + "$")


def _field(row: dict[str, Any], key: str, path: Path, where: str) -> Any:
    if key not in row:
        raise TrustmhError(f"{path} {where}: missing field {key!r}")
    return row[key]


def _number(row: dict[str, Any], key: str, path: Path, where: str) -> float:
    """A numeric field of a released row (an id, a human label); anything else refuses the file, naming it."""
    value = _field(row, key, path, where)
    try:
        if isinstance(value, bool):
            raise ValueError
        number = float(value)
    except (TypeError, ValueError):
        raise TrustmhError(f"{path} {where}: field {key!r} is not a number ({value!r})") from None
    if not math.isfinite(number):
        raise TrustmhError(f"{path} {where}: field {key!r} is not a number ({value!r})")
    return number


def _tier2_text(value: Any) -> str | None:
    """A released tier-2 rating (the mapped number) as the text the faithful mapper reads; None when it is not
    one of the scale's values (-100, -50, 0, 50, 100): counted invalid, and named."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value not in TIER2_VALUES:
        return None
    return str(int(value))


def _models(pdir: Path) -> list[str]:
    found: set[str] = set()
    for sub, pat in (("task1/result", _T1), ("task2/result", _T2), ("task3/result", _T3)):
        d = pdir / sub
        if d.is_dir():
            for f in d.iterdir():
                m = pat.match(f.name)
                if m:
                    found.add(m.group("model"))
    return sorted(found)


def _faithful_ctx(ctx: RunContext) -> RunContext:
    # The released outputs come from the faithful protocol; no proxy model answers were released.
    options = {k: v for k, v in ctx.options.items() if k != "privacy_proxy_model"}
    return dataclasses.replace(ctx, mode="faithful", options=options)


def _ranges(values: list[int]) -> str:
    """[8, 9, 10, 11, 16, 17] → "8–11 and 16–17"."""
    spans: list[list[int]] = []
    for v in sorted(values):
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    parts = [f"{a}–{b}" if a != b else f"{a}" for a, b in spans]
    return " and ".join(parts)


# ----------------------------------------------------------------------------------------------------------
# Awareness
# ----------------------------------------------------------------------------------------------------------


def rescore_awareness(pdir: Path, model: str, ctx: RunContext) -> tuple[SubtaskResult, list[Record]]:
    task = PrivacyAwareness()
    bench1, bench2 = pdir / "task1/benchmark", pdir / "task2/benchmark"
    t1_rows = load_confaide_tier1(bench1 / "tier_1.txt", bench1 / "tier_1_labels.txt")
    t2_rows = load_confaide_tier2(bench2 / "tier_2a.txt", bench2 / "tier_2b.txt", bench2 / "tier_2_labels.txt")
    by_key = {(r["tier"], r["index"]): r for r in t1_rows + t2_rows}
    records: list[Record] = []
    notes: list[str] = []
    missing: list[str] = []
    report = RowReport()

    def add(item: Item, response: str, epoch: int, extra: dict[str, Any]) -> None:
        score = task.score(item, response, None, ctx)
        records.append(make_record(task, item, response, score, epoch=epoch,
                                   extra={"reasked": False, "source": "released", **extra}))

    path1 = pdir / "task1/result" / f"outputs_{model}_tier1.jsonl"
    if path1.exists():
        seen: Counter[int] = Counter()
        prompt_mismatch = 0
        for i, row in enumerate(read_jsonl(path1), start=1):
            idx = int(_field(row, "id", path1, f"line {i}"))
            if ("1", idx) not in by_key:
                raise TrustmhError(f"{path1} line {i}: id {idx} is not a tier-1 item")
            item = task.make_item(by_key[("1", idx)])
            prompt_mismatch += int(row.get("prompt") != item.prompt)
            seen[idx] += 1
            parsed = _field(row, "parsed", path1, f"line {i}")
            add(item, "" if parsed is None else str(parsed), seen[idx], {"raw": row.get("raw")})
        if prompt_mismatch:
            notes.append(f"warning: {prompt_mismatch} released tier-1 prompt(s) differ from ours")
    else:
        missing.append("tier 1")

    for variant in ("2a", "2b"):
        path2 = pdir / "task2/result" / f"final_report_{model}_data_tier_{variant}_nsamples_1.json"
        if not path2.exists():
            missing.append(f"tier {variant}")
            continue
        try:
            rows = json.loads(path2.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise TrustmhError(f"{path2}: invalid JSON ({exc.msg})") from exc
        if not isinstance(rows, list):
            raise TrustmhError(f"{path2}: expected a JSON array of rows")
        human_mismatch = 0
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                raise TrustmhError(f"{path2} row {i}: not an object ({type(row).__name__})")
            number = _number(row, "id", path2, f"row {i}")
            idx = int(number)
            if idx != number or (variant, idx) not in by_key:
                raise TrustmhError(f"{path2} row {i}: id {row['id']!r} is not a tier-{variant} item")
            item = task.make_item(by_key[(variant, idx)])
            human = _number(row, "human", path2, f"row {i}")
            human_mismatch += int(not math.isclose(human, item.metadata["human"], abs_tol=1e-9))
            value = _field(row, "model", path2, f"row {i}")
            # Only the mapped number was released; it is re-read by the same faithful mapper.
            text = _tier2_text(value)
            if text is None:
                report.add(RowProblem(path2.name, i, "model", f"not one of {', '.join(map(str, TIER2_VALUES))} "
                                      f"({value!r})", "counted invalid"))
            add(item, text or "", 1, {})
        if human_mismatch:
            notes.append(f"warning: {human_mismatch} tier-{variant} human label(s) in {path2.name} differ "
                         "from tier_2_labels.txt")

    result = aggregate_records(task, records, ctx) if records else SubtaskResult.not_computed(
        "no released awareness outputs", "higher")
    if missing:
        result.notes.append(f"released outputs missing for {', '.join(missing)}")
    result.notes.extend(notes)
    if report.problems:
        report.log()
        result.notes.append(report.note("released tier-2 rating(s) not on the scale, counted invalid"))
    result.notes.append("rescored from the original's released outputs (faithful mode)")
    return result, records


# ----------------------------------------------------------------------------------------------------------
# Leakage
# ----------------------------------------------------------------------------------------------------------


def _psyleak_files(root: Path, pdir: Path) -> tuple[Path, Path]:
    bench = pdir / "task3/benchmark"
    pairs = [(bench / "tier_3_psyqa_test.txt", bench / "tier_3_control_psyqa_test.txt"),
             (root / "dataset/PsyLeak.txt", root / "dataset/PsyLeak_control.txt")]
    for story, control in pairs:
        if story.exists() and control.exists():
            return story, control
    raise TrustmhError(f"{root}: neither {pairs[0][0]} nor {pairs[1][0]} (with its control file) exists")


def rescore_leakage(root: Path, pdir: Path, model: str, ctx: RunContext
                    ) -> tuple[SubtaskResult, list[Record]] | None:
    path = pdir / "task3/result" / f"outputs_{model}{TIER3_SUFFIX}"
    if not path.exists():
        return None
    task = PrivacyLeakage()
    scenarios = load_psyleak(*_psyleak_files(root, pdir))
    records: list[Record] = []
    rows_of: dict[int, list[int]] = {}
    seen: Counter[tuple[int, str]] = Counter()
    input_mismatch = 0
    name_mismatch = 0
    for lineno, row in enumerate(read_jsonl(path), start=1):
        data = _field(row, "data", path, f"line {lineno}")
        idx = int(_field(data, "scenario_idx", path, f"line {lineno} data"))
        qtype = str(_field(data, "question_type", path, f"line {lineno} data"))
        if not 0 <= idx < len(scenarios):
            raise TrustmhError(f"{path} line {lineno}: scenario_idx {idx} out of range")
        if qtype not in QUESTION_TYPES:
            raise TrustmhError(f"{path} line {lineno}: unknown question_type {qtype!r}")
        rec = scenarios[idx]
        item = task.make_item(rec, qtype, "faithful", primed=True)
        # Our instruction wording differs from the original's by design; the story must be the same.
        input_mismatch += int(faithful_story(rec["body"]) not in str(row.get("input", "")))
        name_mismatch += int(any(data.get(k) != rec[k] for k in ("subject_agent", "aware_agent",
                                                                  "oblivious_agent")))
        seen[(idx, qtype)] += 1
        rows_of.setdefault(idx, []).append(int(row.get("index", lineno - 1)))
        response = _field(row, "response", path, f"line {lineno}")
        response = "" if response is None else str(response)
        score = task.score(item, response, None, ctx)
        records.append(make_record(task, item, response, score, epoch=seen[(idx, qtype)],
                                   extra={"reasked": False, "source": "released"}))
    result = aggregate_records(task, records, ctx)
    cov = scenario_coverage(records, expected=len(scenarios))
    if cov["duplicated"] or cov["missing"]:
        dup_txt = "; ".join(f"scenario {i} appears {c} times (rows {_ranges(rows_of[i])})"
                            for i, c in cov["duplicated"].items())
        miss_txt = ", ".join(str(i) for i in cov["missing"])
        result.notes.insert(0, f"warning: the released tier-3 outputs of {model} are defective: {dup_txt or 'no duplicate'}"
                               f"; missing scenario(s): {miss_txt or 'none'}. Rates are flat means over the "
                               f"{len(records)} released rows, as the original computed them (a per-scenario "
                               "mean would shift them)")
        result.metrics["duplicated_scenarios"] = sorted(cov["duplicated"])
        result.metrics["missing_scenarios"] = cov["missing"]
    if input_mismatch:
        result.notes.append(f"warning: {input_mismatch} released input(s) do not hold the scenario's story as "
                            "PsyLeak.txt gives it")
    if name_mismatch:
        result.notes.append(f"warning: {name_mismatch} released row(s) name agents differently from PsyLeak.txt")
    result.notes.append("rescored from the original's released outputs (faithful mode)")
    return result, records


def rescore_privacy(root: Path, ctx: RunContext) -> dict[str, dict[str, tuple[SubtaskResult, list[Record]]]]:
    """model → {"privacy/awareness": (result, records), "privacy/leakage": (result, records)}."""
    root = Path(root)
    pdir = root / PRIVACY_DIR
    if not pdir.is_dir():
        raise TrustmhError(f"{root}: no {PRIVACY_DIR} folder (expected a directory laid out like "
                           "shared/data/trustmh)")
    fctx = _faithful_ctx(ctx)
    out: dict[str, dict[str, tuple[SubtaskResult, list[Record]]]] = {}
    for model in _models(pdir):
        entry: dict[str, tuple[SubtaskResult, list[Record]]] = {}
        entry["privacy/awareness"] = rescore_awareness(pdir, model, fctx)
        leak = rescore_leakage(root, pdir, model, fctx)
        entry["privacy/leakage"] = leak if leak is not None else (
            SubtaskResult.not_computed("no released tier-3 outputs", "lower"), [])
        if ctx.mode != "faithful":
            for res, _ in entry.values():
                res.notes.append("rescoring always uses faithful mode (the released outputs follow it)")
        out[model] = entry
    return out
