"""What a reference set is, as plain data (docs/judges.md#adding-a-reference): the human-labelled items a judge is
certified on (`Reference`), what the command line says about one beyond its name (`ReferenceRequest`), and the
declaration a pillar makes of each reference it owns (`ReferenceSource`, listed in the pillar's `REFERENCES`
beside its `SUBTASKS`; `trustmh.catalogue` collects them).

A source declares `load(ctx, request) -> Reference`, which reads the humans' labels and the replies they rated
(the publisher's files at run time, never a copy in the repository). Every reference is judged as a run
(`trustmh.certify.measure`). A reference whose humans are not raters to agree with (the SIRI-2's expert panel: a
mean and an SD per reply) says in `Reference.measured` how the collected judgements become its certificate's
figures (`OwnMeasure`), in place of the agreement with raters.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from trustmh.core import Item, Record, RunContext, Subtask
from trustmh.data.rows import RowReport

CSV_REFERENCE = "csv"  # the generic reference: a path to a tidy CSV instead of a name

Limits = dict[str, dict[str, float]]  # metric -> {"min"|"max": bound}, as `parse_thresholds` gives them


@dataclass(frozen=True)
class OwnMeasure:
    """How a reference whose humans are not raters measures its judged records (the SIRI-2: the expert panel's
    means and SDs). `limits(thresholds)` reads `--threshold` against the reference's own rule before any judge
    call (a refused value costs nothing); `certificate(reference, records, ctx, limits)` is the certificate's
    content, which `certify` writes like any other."""

    limits: Callable[[list[str] | None], Limits]
    certificate: Callable[[Reference, Sequence[Record], RunContext, Limits], dict[str, Any]]


@dataclass
class Reference:
    """A human-labelled reference set, ready to be judged."""

    name: str
    source: str  # "public" | "run" | "user"
    sha256: str
    subtask: str
    label_type: str
    items: list[Item]
    humans: dict[str, dict[str, Any]]  # item id -> rater -> label (None = not labelled)
    judge_value: Callable[[Record], Any]  # a judged record -> the judge's label (None = unreadable)
    scale: tuple[float, float] | None = None
    notes: list[str] = field(default_factory=list)
    # A judge scoring several attributes at once (MentalBench): each rater's label and the judge's value are
    # then dicts attribute -> label, and the certificate carries figures per attribute.
    attributes: tuple[str, ...] = ()
    clusters: dict[str, str] | None = None  # item id -> cluster for the bootstrap (None: items)
    counts: dict[str, Any] = field(default_factory=dict)  # what the reader left out, and why
    judge_key: str | None = None  # the score field `judge_value` reads (a CSV's --judge-key), checked once judged
    # Asks and scores the judge when the sub-task's own scorer cannot take a stored item (a stored
    # conversation): it sends the very requests a run sends (None: the sub-task itself).
    judging: Subtask | None = None
    # Set ("labels" or "ratings"): the reference-quality rule decides the verdict (judges/reference_quality.py):
    # the humans' own agreement must clear its floor and the judge in a rater's place must do as well. The
    # fixed thresholds then apply only when given (--threshold).
    quality_kind: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # reference-specific fields for the certificate
    # What an item is: a single "reply" or a whole "conversation" (the certificate's `reference.unit`; only a
    # certificate on conversations certifies a conversation sub-task's judge).
    unit: str = "reply"
    # The rows of the reference's files its reader could not use (docs/data.md#publisher-numbers): named on stderr
    # and in the certificate exactly as `trustmh rescore` names them on the same files.
    report: RowReport | None = None
    # Set: the humans are not raters to agree with; the certificate's figures are the reference's own.
    measured: OwnMeasure | None = None


@dataclass(frozen=True)
class ReferenceRequest:
    """What the command line says about the reference beyond its name."""

    path: str | None = None  # --reference-path (or the CSV file given as --reference)
    subtask: str | None = None  # --subtask
    label_type: str | None = None  # --label-type
    judge_key: str | None = None  # --judge-key


@dataclass(frozen=True)
class ReferenceSource:
    """A reference a pillar declares (its `REFERENCES`), found by name (`--reference NAME`)."""

    name: str
    subtask: str | None  # the sub-task whose judge it certifies; None: the request names it (--subtask)
    label_type: str | None  # None: inferred from the data or given by --label-type
    load: Callable[[RunContext, ReferenceRequest], Reference]
    help: str = ""
    also: tuple[str, ...] = ()  # other sub-tasks whose judges it certifies too (`--subtask`; `subtask` by default)
    # What its items are ("reply" or "conversation", as `Reference.unit`): a reference of single replies is only
    # supporting evidence for a conversation sub-task's judge, so no hint sends a conversation judge to it.
    unit: str = "reply"
    # The sub-task option that names a folder laid out like the publisher's repository, which
    # `--reference-path` then fills (None: `load` reads `request.path` itself).
    path_option: str | None = None
