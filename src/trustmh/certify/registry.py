"""Every reference a judge can be certified on, found by name (`--reference NAME`): the ones the pillars declare
beside their sub-tasks (`REFERENCES`, collected by the catalogue walk) and the generic tidy CSV
(`csv_reference`), named by its path. Adding a reference is declaring it in its pillar; no table here is
edited (docs/judges.md#adding-a-reference)."""

from __future__ import annotations

from pathlib import Path

from trustmh.catalogue import catalogue, lookup
from trustmh.certify.csv_reference import REFERENCE as CSV_SOURCE
from trustmh.core import TrustmhError
from trustmh.judges.references import CSV_REFERENCE, ReferenceRequest, ReferenceSource
from trustmh.run.reference import ReferenceRun


def reference_sources() -> dict[str, ReferenceSource]:
    """Every declared reference by name, the generic CSV last."""
    return {**catalogue().references, CSV_REFERENCE: CSV_SOURCE}


def find_reference(name: str, request: ReferenceRequest) -> tuple[ReferenceSource, ReferenceRequest]:
    """The source `--reference NAME|PATH` names (a path to a file is the generic CSV reference), checked
    against `--subtask`."""
    sources = reference_sources()
    source = sources.get(name)
    if source is None or source.name == CSV_REFERENCE:
        if not Path(name).is_file():
            named = ", ".join(n for n in sources if n != CSV_REFERENCE)
            raise TrustmhError(f"--reference {name}: neither a reference ({named}) nor a CSV file")
        source = sources[CSV_REFERENCE]
        request = ReferenceRequest(path=name, subtask=request.subtask, label_type=request.label_type,
                                   judge_key=request.judge_key)
    elif request.subtask and source.subtask and request.subtask not in (source.subtask, *source.also):
        raise TrustmhError(f"--reference {source.name} certifies {' or '.join((source.subtask, *source.also))}, "
                           f"not {request.subtask}")
    return source, request


def reference_run(source: ReferenceSource, request: ReferenceRequest) -> ReferenceRun:
    """The run's request part for this reference: its name, the judged sub-task (`--subtask`, else the
    reference's own) and `--reference-path` with the sub-task option it fills."""
    subtask = request.subtask or source.subtask
    if subtask is None:  # the generic CSV names no sub-task of its own
        raise TrustmhError("--reference CSV needs --subtask ID (which judge to certify)")
    if lookup(subtask) is None:
        raise TrustmhError(f"--subtask {subtask}: unknown sub-task")
    return ReferenceRun(name=source.name, subtask=subtask, path=request.path, path_option=source.path_option)
