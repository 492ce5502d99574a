"""Inspect logs → trustmh records: read back per sub-task, in the canonical order, errors counted. Logs are
read only through `inspect_ai.log` (they are zstd zips)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inspect_ai.log import EvalLog, read_eval_log

from trustmh.core import Record
from trustmh.run.anchors import verdict_of
from trustmh.run.calls import SCORER_NAME
from trustmh.run.select import RunPlan
from trustmh.run.tasks import ANCHORS_OF, task_key

# What a record never needs from a sample (its transcript, messages, output, store…): left unparsed, so that
# reading a sub-task of 100,000 samples back holds records, not transcripts (benchmarks/collect_memory.py).
# `input` and `target` are required by EvalSample and stay.
TRANSCRIPT_FIELDS = frozenset({"events", "messages", "attachments", "store", "output", "metadata", "model_usage",
                               "role_usage", "events_data", "timelines"})


def records_from_log(log: EvalLog, errors: list[str] | None = None, samples: list[tuple[str, int]] | None = None
                     ) -> tuple[list[Record], int, str | None]:
    """(scored records, number of errored samples, provider-reported model id); the distinct messages of the
    errored samples are added to `errors` when given, and every sample's (id, epoch), scored or errored, to
    `samples` (merge checks them against the planned items). A header-only log (what an eval set returns) is
    read from its location without the transcripts (TRANSCRIPT_FIELDS)."""
    if log.samples is None and log.location:
        log = read_eval_log(log.location, exclude_fields=set(TRANSCRIPT_FIELDS))
    records: list[Record] = []
    n_errors = 0
    reported = None
    for sample in log.samples or []:
        if samples is not None:
            samples.append((str(sample.id), int(sample.epoch)))
        if sample.error is not None:
            n_errors += 1
            message = " ".join(str(sample.error.message).split())
            if errors is not None and message not in errors:
                errors.append(message)
            continue
        score = (sample.scores or {}).get(SCORER_NAME)
        if score is None or not score.metadata or "record" not in score.metadata:
            n_errors += 1
            continue
        rec = Record(**score.metadata["record"])
        reported = reported or rec.metadata.get("model_reported")
        records.append(rec)
    return records, n_errors, reported


def read_log(path: str | Path) -> EvalLog:
    return read_eval_log(str(path))


def collect(plan: RunPlan, logs: list[Any], samples: dict[str, list[tuple[str, int]]] | None = None
            ) -> tuple[dict[str, list[Record]], str | None]:
    """Records per sub-task from the logs (several logs of one sub-task, e.g. shards, are pooled), in the
    canonical order: dataset order, then epoch. Results never depend on completion order, on how a resumed
    run was interrupted, or on how samples were spread over processes. Errors go into the plan; every
    sample's (id, epoch) into `samples` when given (`check_items`)."""

    records: dict[str, list[Record]] = {}
    model_reported = None
    for log in logs:
        sid = (log.eval.metadata or {}).get("trustmh_subtask")
        watched = (log.eval.metadata or {}).get(ANCHORS_OF)
        if watched in plan.subtasks:  # the judge's anchor verdicts (`run/anchors.py`), not the sub-task's records
            # (a shard's slice of them: merge pools the shards' slices, each anchor once, `check_items`)
            anchor_errors: list[str] = []
            recs, n_anchor_errors, _ = records_from_log(log, anchor_errors, None if samples is None else samples.setdefault(
                task_key(log.eval.metadata), []))
            if n_anchor_errors:  # an anchor left unjudged (e.g. its batch expired): the judge's watch is incomplete
                plan.errors.append(f"{watched}: {n_anchor_errors} judge anchor(s) errored: {anchor_errors[0][:300]}"
                                   if anchor_errors else f"{watched}: {n_anchor_errors} judge anchor(s) errored")
            plan.anchors.setdefault(watched, {}).update({r.item_id: verdict_of(r) for r in recs})
            plan.anchor_records.setdefault(task_key(log.eval.metadata), []).extend(recs)
            continue
        if sid is None or sid not in plan.subtasks:
            continue
        messages: list[str] = []
        recs, n_errors, reported = records_from_log(
            log, messages, None if samples is None else samples.setdefault(sid, []))
        model_reported = model_reported or reported
        plan.error_messages.setdefault(sid, []).extend(m for m in messages
                                                       if m not in plan.error_messages[sid])
        if log.status != "success":
            msg = log.error.message if log.error else log.status
            plan.errors.append(f"{sid}: task {log.status}: {msg}")
        if n_errors:
            # the first distinct cause, on one line (a bad endpoint reply names its field)
            why = f": {messages[0][:300]}" + (f" (and {len(messages) - 1} other cause(s))" if len(messages) > 1
                                              else "") if messages else ""
            plan.errors.append(f"{sid}: {n_errors} sample(s) errored{why}")
        records.setdefault(sid, []).extend(recs)
        plan.n_errors[sid] = plan.n_errors.get(sid, 0) + n_errors
    for sid, recs in records.items():
        order = plan.item_order[sid]
        recs.sort(key=lambda r: (order.get(r.item_id, len(order)), r.epoch))
    return records, model_reported


def current_logs(logs: list[Any]) -> list[Any]:
    """The logs of one run directory that hold its current samples: a log that did not finish (a killed or
    failed process) is superseded by any later log of the same sub-task (the resumed run's, which carries the
    finished samples over), never pooled with it. Finished logs are all kept: two of one sub-task is a
    duplicate that `check_items` refuses."""

    def key(log: Any) -> tuple[str, str]:
        return str(log.eval.created or ""), str(log.location or "")

    by_sid: dict[str, list[Any]] = {}
    for log in logs:
        by_sid.setdefault(task_key(log.eval.metadata), []).append(log)
    kept = []
    for group in by_sid.values():
        group.sort(key=key)
        for i, log in enumerate(group):
            if log.status == "success" or i == len(group) - 1:
                kept.append(log)
    return kept

