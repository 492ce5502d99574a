"""Per-run results: sub-task results → results.json, results.csv (one row per metric), items.jsonl.

Plain Python: live runs (via Inspect logs) and rescoring both end here. Files are written to a temporary
name and renamed when complete, so a crash never leaves a half-written result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trustmh
from trustmh.catalogue import ANCHORS_VERSION, BY_ID
from trustmh.core import Patient, Record, RunContext, SubtaskResult, TrustmhError
from trustmh.data.files import csv_text, read_jsonl
from trustmh.data.locate import resolved_files
from trustmh.json_clean import clean_json
from trustmh.results.leaderboard import normalised_summary
from trustmh.results.reported import counted
from trustmh.results.usage import USAGE_KEY, usage_metric_rows
from trustmh.storage import Url, run_path, write_text_atomic, write_texts_together

if TYPE_CHECKING:
    from trustmh.storage import Url


@dataclass
class RunResults:
    model: str
    ctx: RunContext
    subtasks: dict[str, SubtaskResult]
    records: dict[str, list[Record]] = field(default_factory=dict)
    model_reported: str | None = None
    errors: list[str] = field(default_factory=list)
    # The options as recorded (None: the context's, `RunContext.recorded_options`); a run adds its endpoint.
    options: dict[str, Any] | None = None
    # What results.json holds beside the results where it applies (None: left out). A run's:
    generation: dict[str, dict[str, Any]] | None = None  # per sub-task decoding (`run.select.RunPlan.generation`)
    patient: Patient | None = None  # the simulated patient
    shard: tuple[int, int] | None = None  # (i, N): the slice of the items this run is
    budget: dict[str, Any] | None = None  # the spending limit's account (`run.budget.settle`)
    usage: dict[str, Any] | None = None  # calls and tokens per sub-task and role (`results.usage.usage_rows`)
    plan: dict[str, Any] | None = None  # the cost estimate: totals, wall time, assumptions (`run.finalize.plan_block`)
    # the endpoints the progress line named as not answering while the run waited (`run.progress`)
    stalled_endpoints: list[dict[str, Any]] | None = None
    # What the results are when not a whole run of a model (a shard, a rescoring of published outputs), in
    # place of the starter suite's notice; and a rescoring's provenance:
    notice: str | None = None
    source: str | None = None  # the folder or file rescored
    judges: list[str] | None = None  # the judges of a rescoring

    def to_json(self) -> dict[str, Any]:
        summary = normalised_summary({k: v for k, v in self.subtasks.items()}, self.ctx.mode)
        judge = {"model": self.ctx.judge.model, "validated": self.ctx.judge.validated,
                 "temperature": self.ctx.judge.temperature, "seed": self.ctx.judge.seed}
        out: dict[str, Any] = {
            "model": self.model,
            "model_reported": self.model_reported,
            "suite": self.ctx.suite,
            "mode": self.ctx.mode,
            "seed": self.ctx.seed,
            "limit": self.ctx.limit,
            "n_boot": self.ctx.n_boot,
            "options": self.ctx.recorded_options() if self.options is None else self.options,
            "judge": judge,
            "trustmh_version": trustmh.__version__,
            "anchors_version": ANCHORS_VERSION,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "subtasks": {sid: self.subtasks[sid].to_json() for sid in _ordered(self.subtasks)},
            "pillars": summary["pillars"],
            "overall": summary["overall"],
            "errors": self.errors,
            "datasets": resolved_files(),
        }
        if self.ctx.suite == "starter":
            out["notice"] = ("starter suite: items written by trustmh as a demonstration of the pipeline; "
                             "not a substitute for the real datasets")
        if self.notice is not None:
            out["notice"] = self.notice
        # the judges asked for beside the names their providers answered with, per sub-task (results/reported.py)
        reported = {sid: c for sid in _ordered(self.records) if (c := counted(r.metadata for r in self.records[sid]))}
        bookkeeping = {"judges_reported": reported or None, "generation": self.generation,
                       "patient": None if self.patient is None else self.patient.to_json(),
                       "shard": None if self.shard is None else list(self.shard), "budget": self.budget,
                       "usage": self.usage, "plan": self.plan, "source": self.source, "judges": self.judges,
                       "stalled_endpoints": self.stalled_endpoints}
        out.update({key: value for key, value in bookkeeping.items() if value is not None})
        return clean_json(out)


def _ordered(subtasks: dict[str, Any]) -> list[str]:
    order = {sid: i for i, sid in enumerate(BY_ID)}
    return sorted(subtasks, key=lambda s: order.get(s, len(order)))


def metric_rows(results: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Flatten results.json into one row per (sub-task, metric); the primary metric is `value`."""
    for sid, sub in results["subtasks"].items():
        base = {"model": results["model"], "mode": results["mode"], "suite": results["suite"],
                "pillar": sid.split("/")[0], "subtask": sid, "status": sub["status"],
                "reason": sub.get("reason") or "", "direction": sub["direction"], "n": sub["n"],
                "n_invalid": sub["n_invalid"], "method": sub.get("method") or "",
                "judge": (sub.get("judge") or {}).get("model") or ""}
        ci = sub.get("ci") or [None, None]
        yield {**base, "metric": "value", "value": sub["value"], "ci_lo": ci[0], "ci_hi": ci[1]}
        for name, value in sorted(sub.get("metrics", {}).items()):
            if isinstance(value, dict | list):
                continue  # confusion matrices and other structures live in results.json
            yield {**base, "metric": name, "value": value, "ci_lo": None, "ci_hi": None}
    for sid, name, value in usage_metric_rows(results):
        yield {"model": results["model"], "mode": results["mode"], "suite": results["suite"],
               "pillar": sid.split("/")[0], "subtask": sid, "metric": name, "value": value, "status": "usage"}


CSV_COLUMNS = ["model", "mode", "suite", "pillar", "subtask", "metric", "value", "ci_lo", "ci_hi", "n",
               "n_invalid", "direction", "status", "reason", "method", "judge"]


def results_csv(results: dict[str, Any]) -> str:
    return csv_text(CSV_COLUMNS, ([row.get(c) for c in CSV_COLUMNS] for row in metric_rows(results)))


def items_jsonl(run: RunResults) -> str:
    lines = []
    for sid in _ordered(run.records):
        for rec in run.records[sid]:
            row = rec.to_dict()
            # a sample's call counts are bookkeeping (results.json "usage"), not its result: a resumed run
            # answers some calls from the cache and must still write the same items
            row["metadata"] = {k: v for k, v in row["metadata"].items() if k != USAGE_KEY}
            lines.append(json.dumps(clean_json(row), ensure_ascii=False, sort_keys=True))
    return "\n".join(lines) + ("\n" if lines else "")


def write_run(run: RunResults, out_dir: Path | Url,
              report: Callable[[dict[str, Any], dict[str, list[Record]]], str] | None = None) -> dict[str, Any]:
    """Write results.json, results.csv and items.jsonl into `out_dir` (a path or a URL), and report.html
    when given the function that renders it (`trustmh.report.run_report_html`, a floor above this one)."""

    results = run.to_json()
    texts = {"items.jsonl": items_jsonl(run), "results.csv": results_csv(results),
             "results.json": json.dumps(results, indent=2, ensure_ascii=False) + "\n"}
    if report is not None:
        texts["report.html"] = report(results, run.records)
    if isinstance(out_dir, Url):
        for name, text in texts.items():  # each object appears whole; results.json, read first, is last
            write_text_atomic(out_dir / name, text)
    else:
        # the result files appear together or not at all (a full disk leaves the previous ones)
        write_texts_together({out_dir / name: text for name, text in texts.items()})
    return results


def load_results(path: Path | Url | str) -> dict[str, Any]:

    path = run_path(path)
    file = path / "results.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise TrustmhError(f"{file}: no results.json here (run `trustmh run --out {path}` first)") from exc
    except UnicodeDecodeError as exc:
        raise TrustmhError(f"{file}: not UTF-8 text (byte {exc.start}); is this a trustmh results.json?") from exc
    except OSError as exc:
        raise TrustmhError(f"{file}: cannot read ({exc.strerror or exc})") from exc
    except json.JSONDecodeError as exc:
        raise TrustmhError(f"{file}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    if not isinstance(data, dict):
        raise TrustmhError(f"{file}: expected a JSON object, got {type(data).__name__}")
    for key in ("model", "mode", "subtasks"):
        if key not in data:
            raise TrustmhError(f"{file}: missing field {key!r}; is this a trustmh results.json?")
    if not isinstance(data["subtasks"], dict):
        raise TrustmhError(f"{file}: field 'subtasks' must be an object of sub-task results")
    for sid, sub in data["subtasks"].items():
        missing = [k for k in ("value", "status", "direction", "n") if not isinstance(sub, dict) or k not in sub]
        if missing:
            raise TrustmhError(f"{file}: subtasks.{sid} lacks field(s) {', '.join(missing)}")
    return data


def load_items(path: Path | Url | str) -> list[dict[str, Any]] | None:
    """The scored items of a run directory (items.jsonl), or None when the run has none (older runs)."""

    path = run_path(path)
    file = path.parent / "items.jsonl" if path.is_file() else path / "items.jsonl"
    if not file.exists():
        return None
    rows = read_jsonl(file, name=str(file))
    for lineno, row in enumerate(rows, start=1):
        if "subtask" not in row or "item_id" not in row:
            raise TrustmhError(f"{file}: record {lineno}: expected a record with 'subtask' and 'item_id'")
    return rows


__all__ = ["RunResults", "write_run", "load_results", "load_items", "results_csv", "metric_rows"]
