"""The reference sets a judge can be certified on, one module each, found by name (`--reference NAME`).

A reference module in this package declares one `REFERENCE = ReferenceSource(...)`: its `name` (what
`--reference` names), the sub-task whose judge it checks (`subtask`; None when the user names it with
`--subtask`, as for a CSV), its label type (`binary`, `ordinal` or `categorical`; None when read from the
data) and `load(ctx, request) -> Reference`, which reads the humans' labels and the replies they rated. Adding
a reference is adding a module; nothing else is edited (docs/judges.md#adding-a-reference).

A reference whose humans are not raters to agree with (the SIRI-2's expert panel: a mean and an SD per
reply) declares `certify(ctx, request, certs_dir, thresholds) -> (certificate, path)` instead, measuring the
judge its own way into the same certificate format.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from trustmh.core import RunContext, TrustmhError
from trustmh.judges.certify.core import Reference

CSV_REFERENCE = "csv"  # the generic reference: a path to a tidy CSV instead of a name


@dataclass(frozen=True)
class ReferenceRequest:
    """What the command line says about the reference beyond its name."""

    path: str | None = None  # --reference-path (or the CSV file given as --reference)
    subtask: str | None = None  # --subtask
    label_type: str | None = None  # --label-type
    judge_key: str | None = None  # --judge-key


@dataclass(frozen=True)
class ReferenceSource:
    name: str
    subtask: str | None  # the sub-task whose judge it certifies; None: the request names it (--subtask)
    label_type: str | None  # None: inferred from the data or given by --label-type
    load: Callable[[RunContext, ReferenceRequest], Reference] | None = None
    help: str = ""
    # set: the reference certifies the judge itself (no agreement with raters; see the module docstring)
    certify: Callable[[RunContext, ReferenceRequest, Path, list[str] | None], tuple[dict[str, Any], Path]] | None = None
    also: tuple[str, ...] = ()  # other sub-tasks whose judges it certifies too (`--subtask`; `subtask` by default)


@cache
def reference_sources() -> dict[str, ReferenceSource]:
    """Every reference module's REFERENCE, by name."""
    found: dict[str, ReferenceSource] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        source = getattr(module, "REFERENCE", None)
        if not isinstance(source, ReferenceSource):
            continue
        if source.name in found:
            raise TrustmhError(f"two certification references are named {source.name!r}")
        found[source.name] = source
    return found


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
