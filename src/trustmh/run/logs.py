"""Inspect logs → trustmh records. Logs are read only through `inspect_ai.log` (they are zstd zips)."""

from __future__ import annotations

from pathlib import Path

from inspect_ai.log import EvalLog, read_eval_log

from trustmh.core import Record
from trustmh.run.calls import SCORER_NAME

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
