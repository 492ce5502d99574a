"""Finishing a run: every sub-task's records aggregated (with the judges' bookkeeping), the run directory's
results, report and exports written (a sub-task's own files through `Subtask.finish_run`), secrets scrubbed."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from trustmh import exit_codes
from trustmh.core import Record, RunContext, Subtask, SubtaskResult, notice
from trustmh.invalid import aggregate_records
from trustmh.judges.certificates import (
    certificates_dir,
    find_certificate,
    fingerprint_of,
    fingerprint_settings,
)
from trustmh.judges.drift import STALE, anchor_drift, drift_line
from trustmh.judges.ensemble import MEMBERS_KEY, ensemble_settings, member_agreement
from trustmh.judges.parse import judge_was_recovered
from trustmh.models.providers import model_family
from trustmh.report import run_report_html
from trustmh.results import RunResults, write_run
from trustmh.results.usage import usage_rows
from trustmh.run.plan_figures import PlanEstimate
from trustmh.run.secrets import redact, scrub_run_dir, secret_values
from trustmh.run.select import RunPlan
from trustmh.storage import Url


def aggregate(subtask: Subtask, recs: list[Record], ctx: RunContext, n_errors: int = 0) -> SubtaskResult:
    """Sub-task aggregate plus the bookkeeping every result carries (judge identity and agreement, judge
    replies recovered from truncation, sample errors)."""
    if not recs:
        result = SubtaskResult.not_computed("no scored samples", subtask.direction(ctx.mode))
    else:
        result = aggregate_records(subtask, recs, ctx)
        result.metrics.update(subtask.floors(recs, ctx))
    # what --limit became: replies scored and distinct items (fairness asks each item in 17 variants,
    # privacy awareness samples several replies per item, robustness asks each item at each level)
    result.metrics["n_samples"] = len(recs)
    result.metrics["n_items"] = len({r.item_id for r in recs})
    if subtask.judge_use != "no" and ctx.has_judge:
        judge_bookkeeping(result, recs, ctx, subtask)
    if n_errors:
        result.metrics["n_errors"] = n_errors
        result.notes.append(f"{n_errors} sample(s) failed with an error and are not scored")
    return result


def judge_bookkeeping(result: SubtaskResult, recs: list[Record], ctx: RunContext,
                      subtask: Subtask | None = None) -> None:
    """Which judge(s) produced the numbers, whether they are validated, the fingerprint of how the judge was
    asked (the key of its certificate, docs/judges.md#certificates), the ensemble's agreement and
    same-family flags, and how many judge replies were recovered from a truncated reply."""

    members = ctx.judges
    if result.judge is None:
        result.judge = ctx.judge.record()
        result.notes += ctx.judge.validation_notes()
    if subtask is not None and subtask.judge_templates:
        settings = fingerprint_settings(subtask, ctx)
        result.judge["fingerprint"] = fingerprint_of(settings)
        result.judge["fingerprint_settings"] = settings
    model_fam = model_family(ctx.model or "")
    same = {m: bool(model_fam is not None and model_family(m) == model_fam) for m in members}
    result.judge["same_family"] = same
    for m, flag in same.items():
        if flag:
            result.notes.append(f"judge {m} is from the same family ({model_fam}) as the model under test: "
                                "its scores may favour it (self-preference)")
    unit_members = [r.score[MEMBERS_KEY] for r in recs if isinstance(r.score.get(MEMBERS_KEY), dict)]
    if len(members) > 1 and unit_members:
        aggregator, min_valid = ensemble_settings(ctx, subtask, len(members))
        result.judge.update(members=members, aggregator=aggregator, min_valid=min_valid)
        result.metrics["judge_agreement"] = member_agreement(unit_members)
        result.notes.append(f"scored by an ensemble of {len(members)} judges ({aggregator}, at least "
                            f"{min_valid} valid); agreement among them in metrics.judge_agreement")
    recovered = sum(1 for r in recs for text in r.judge_raw.values() if judge_was_recovered(text))
    result.metrics["judge_recovered"] = recovered
    if recovered:
        result.notes.append(f"{recovered} judge repl(ies) were cut off by the token limit; their complete "
                            "score fields were recovered and used")


def plan_block(planned: PlanEstimate) -> dict[str, Any]:
    """results.json's `plan`: the estimate's totals, wall time, assumptions and batch figures."""
    return {"totals": planned.totals.to_json(), "wall_seconds": planned.wall_seconds.to_json(),
            "assumptions": planned.assumptions.to_json(), "batch": planned.batch.to_json()}


def record_anchors(plan: RunPlan, results: dict[str, SubtaskResult]) -> None:
    """Each watched judge's anchor verdicts in its sub-task's `judge` block, compared with its certificate's
    (docs/judge-probes.md#drift): a stale certificate is said in the results and on the console."""
    certs = certificates_dir(plan.spec.output.certificates)
    for sid, verdicts in plan.anchors.items():
        res = results.get(sid)
        if res is None or res.judge is None:
            continue
        res.judge["anchors"] = dict(sorted(verdicts.items()))
        cert = find_certificate(certs, res.judge.get("fingerprint"), sid)
        if cert is None:
            continue
        res.judge["drift"] = anchor_drift(res.judge["anchors"], cert.get("anchors"))
        if res.judge["drift"]["status"] == STALE:
            res.notes.append(f"certificate stale: {drift_line(res.judge['drift'])}")
            notice(f"{sid}: certificate stale: {drift_line(res.judge['drift'])}")


def finalize(plan: RunPlan, records: dict[str, list[Record]], model_reported: str | None, out: Path | Url,
             started: float, budget: dict[str, Any] | None = None) -> tuple[dict[str, Any], int]:
    """Aggregate, write the run directory's results (with the budget's account, `run.budget.settle`, when
    the run had one), scrub secrets, report errors."""
    ctx, results, errors = plan.ctx, plan.results, plan.errors
    for sid, subtask in plan.subtasks.items():
        results[sid] = aggregate(subtask, records.get(sid, []), ctx, plan.n_errors.get(sid, 0))
    for sid, subtask in plan.derived.items():
        source = subtask.derived_from or ""
        if source in records:
            errs = results[source].metrics.get("n_errors", 0)
            results[sid] = aggregate(subtask, records[source], ctx, errs)
            results[sid].notes.append(f"aggregated from the replies and judge calls of {source}")
        elif source in results:
            results[sid] = SubtaskResult.not_computed(f"{source} was not computed ({results[source].reason})",
                                                      subtask.direction(ctx.mode))
    for sid, block in plan.sequential.items():  # `--until-decided`: where each gated sub-task stopped, and why
        if sid in results:
            results[sid].sequential = block
            results[sid].notes.append(f"--until-decided: {block['reason']}")
    record_anchors(plan, results)
    for sid in plan.hidden:
        results.pop(sid, None)  # run for a derived sub-task only; its records stay in items.jsonl
    planned = plan.planned
    spec = plan.spec
    run_results = RunResults(
        model=spec.model.label, ctx=ctx, subtasks=results, records=records, model_reported=model_reported,
        errors=errors, options=spec.recorded_options(), generation=plan.generation, patient=spec.patient,
        shard=spec.execution.shard, budget=budget, usage=usage_rows({**records, **plan.anchor_records}, spec.cost.prices, planned.to_json()["subtasks"] if planned else None),
        plan=plan_block(planned) if planned else None, stalled_endpoints=plan.stalls or None,
        notice=None if spec.execution.shard is None else (f"shard {spec.execution.shard[0]}/{spec.execution.shard[1]}: a slice of the items, "
                                                "not a result; combine all shards with `trustmh merge`"))
    data = write_run(run_results, out, report=functools.partial(run_report_html, certs_dir=spec.output.certificates))
    for sid, subtask in plan.subtasks.items():
        if sid in records:
            for message in subtask.finish_run(records[sid], out, ctx):
                notice(message)
    secrets = secret_values()
    scrubbed = scrub_run_dir(out, secrets, since=started)
    if scrubbed:
        notice(f"an API key appeared in {len(scrubbed)} file(s) (a provider quoted it in an error); redacted")
        data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for err in errors:  # shown whatever the display (Inspect's own display may be "none")
        notice(f"error: {redact(err, secrets)}")
    notice(f"wrote {out / 'results.json'}, {out / 'results.csv'}, {out / 'report.html'}")
    return data, (exit_codes.INCOMPLETE if errors else exit_codes.PASS)

