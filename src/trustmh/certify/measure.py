"""`trustmh judge certify`'s machinery: a reference set judged as a run judges (docs/judges.md#certificates),
then the judge measured against the humans and a certificate written.

A certification is a run (`RunSpec.reference`): the reference's items carry the human-labelled reply
(`skip_generation`, the reply in `stored_response` or, for the crisis study, in the item's `answer`), so no
model is under test; the judges under test are the spec's judges, and the sub-task's own `trustmh_scorer` asks
each (same prompt, schema, ensemble rule, temperature 0, the run's seed, timeouts and retries) and scores its
reply. The run's stages do the rest: `plan_reference` (select), `evaluate` (the one Inspect call: an eval set in
`<work>/logs` with the response cache, so running the same command again resumes and asks no judge call
twice) and `collect`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from trustmh.catalogue import catalogue, get_subtask
from trustmh.core import Item, Record, Subtask, TrustmhError
from trustmh.judges.agreement import agreement_figures, attribute_figures
from trustmh.judges.certificates import (
    fingerprint_settings,
    make_certificate,
    parse_thresholds,
    write_certificate,
)
from trustmh.judges.reference_quality import KIND_OF, certify_reference
from trustmh.judges.references import Reference
from trustmh.run.collect import collect
from trustmh.run.config import RunOptions, RunSpec, resolve
from trustmh.run.inspect_eval import evaluate
from trustmh.run.reference import ReferenceRun
from trustmh.run.select import plan_reference


def certification_spec(judges: Sequence[Any], reference: ReferenceRun, *, seed: int = 0,
                       options: Mapping[str, Any] | None = None, limit: int | None = None, n_boot: int = 2000,
                       timeout: int = 120, max_retries: int = 3, batch: int | None = None,
                       prompt_cache: bool = True) -> RunSpec:
    """The run a certification is: the judges under test (model strings, or Inspect `Model` objects in tests)
    as the spec's judges, the reference's sub-task, no model under test (`RunSpec.reference`)."""
    first, *more = judges
    suite = next((name for name, classes in catalogue().suite_tasks.items()
                  if any(cls.id == reference.subtask for cls in classes)), "trustmh")
    return resolve(RunOptions(judge=first, more_judges=list(more), suite=suite, subtasks=[reference.subtask],
                              seed=seed, options=dict(options or {}), limit=limit, n_boot=n_boot, timeout=timeout,
                              max_retries=max_retries, batch=batch, prompt_cache=prompt_cache, display="none",
                              reference=reference))


def judge_reference(ref: Reference, spec: RunSpec, work: Path, *, anchors: dict[str, Any] | None = None
                    ) -> list[Record]:
    """Judge the reference items through the run's stages (a resumable eval set in `work/logs`); given
    `anchors`, the sub-task's anchor items too, their verdicts put there (docs/judge-probes.md#drift)."""
    return judge_fixed_replies(ref.judging or get_subtask(ref.subtask), ref.items, spec, work, name=ref.name,
                               anchors=anchors if ref.judging is None else None)


def refuse_unreadable(judged: Mapping[str, Any], judges: Sequence[str], what: str) -> None:
    """A TrustmhError (exit 2) when not one judge reply of `what` gave a mark its parser reads: every figure
    would be n = 0, read as inconclusive rather than as the judge's failure to answer in form."""
    if judged and all(v is None for v in judged.values()):
        raise TrustmhError(f"judge {', '.join(judges) or '(none)'}: none of the {len(judged)} judge replies on "
                           f"{what} held a mark its parser reads, so nothing can be measured; check the judge's "
                           "replies in the work folder's logs (`inspect view`), its model name and endpoint")


def judge_fixed_replies(subtask: Subtask, items: list[Item], spec: RunSpec, work: Path, *, name: str,
                        anchors: dict[str, Any] | None = None) -> list[Record]:
    """Judge fixed replies (`skip_generation` items) with `subtask`'s judge requests as a run judges them
    (`spec`, from `certification_spec`): `plan_reference`, the one Inspect call (an eval set in `work/logs`
    with the response cache, so the same command run again resumes and asks no call twice) and `collect`.
    A reference set's certification, and a rescore that re-judges stored replies (`rescore --judge`)."""
    plan = plan_reference(spec, subtask, items, name, anchors=anchors is not None)
    work.mkdir(parents=True, exist_ok=True)
    logs = evaluate(plan, work)
    records, _ = collect(plan, logs)
    if anchors is not None:
        anchors.update(plan.anchors.get(subtask.id, {}))
    n_errors = plan.n_errors.get(subtask.id, 0)
    unfinished = [str(log.status) for log in logs if log.status != "success"]
    if unfinished or n_errors:
        raise TrustmhError(judging_failed(name, subtask.id, unfinished[0] if unfinished else "success", n_errors,
                                          plan.error_messages.get(subtask.id, [])))
    return records.get(subtask.id, [])


_MISSING_KEY = re.compile(r"^KeyError\('([^']+)'\)$")


def judging_failed(name: str, subtask_id: str, status: str, n_errors: int, messages: Sequence[str]) -> str:
    """One line for fixed replies (the reference set `name`) the judge could not finish: an item field the
    sub-task's judge prompt reads and the reference lacks (a missing `meta_<key>` column of a CSV) is named, and
    is not worth running again; any other error is shown, and running the same command again resumes."""
    missing = sorted({m[1] for m in (_MISSING_KEY.match(x) for x in messages) if m})
    if missing and len(missing) == len(messages):
        columns = ", ".join(f"meta_{k}" for k in missing)
        return (f"{name}: the judge of {subtask_id} reads item field(s) {', '.join(missing)}, which the "
                f"reference does not give ({n_errors} item(s)); add column(s) {columns}")
    first = f": {messages[0]}" if messages else ""
    return (f"judging {name} did not finish ({status}, {n_errors} error(s){first}); run the same "
            "command again to resume")


def check_judge_key(ref: Reference, records: Sequence[Record]) -> None:
    """`--judge-key` must name a field the judge's score carries: a misspelt one would read every judgement
    as unreadable (counted at its worst) and certify a number about nothing."""
    if ref.judge_key is None or not records:
        return
    if not any(ref.judge_key in rec.score for rec in records):
        fields = sorted({k for rec in records for k, v in rec.score.items()
                         if isinstance(v, bool | int | float | str) and not k.startswith("_")})
        raise TrustmhError(f"--judge-key {ref.judge_key}: no judged item's score has this field (fields: "
                           f"{', '.join(fields)}); the judge's answers are kept, run again with the right key")


# Where a limited certification is written: beside the certificates, never read as one (load_certificates and
# find_certificate read the directory's own files only).
TRIALS_DIR = "trials"


def certify(ref: Reference, spec: RunSpec, *, certs_dir: Path, work: Path, thresholds: list[str] | None = None
            ) -> tuple[dict[str, Any], Path]:
    """Judge the reference as a run (`spec`, from `certification_spec`), measure the judge and write its
    certificate; returns (certificate, path)."""
    if ref.report is not None:
        ref.report.log()
    if ref.measured is not None:  # humans that are not raters (the SIRI-2's panel): the reference's own figures
        own_limits = ref.measured.limits(thresholds)  # a refused --threshold costs no judge call
        cert = ref.measured.certificate(ref, judge_reference(ref, spec, work), spec.context(), own_limits)
        return cert, write_certificate(certs_dir, cert)
    anchors: dict[str, Any] = {}  # the judge's verdicts on its sub-task's anchor items, kept for drift
    records = judge_reference(ref, spec, work, anchors=anchors)
    ctx = spec.context()
    check_judge_key(ref, records)
    judged = {r.item_id: ref.judge_value(r) for r in records}
    refuse_unreadable(judged, ctx.judges, f"the reference {ref.name}")
    limits = parse_thresholds(thresholds, ref.label_type) if thresholds or not ref.quality_kind else {}
    if ref.attributes:
        figures, extra = attribute_figures(ref, judged, limits, seed=ctx.seed, n_boot=ctx.n_boot)
    else:
        figures, extra = agreement_figures(ref.label_type, ref.humans, judged, seed=ctx.seed,
                                           n_boot=ctx.n_boot, scale=ref.scale, clusters=ref.clusters)
    if ref.counts:
        extra["reference_counts"] = ref.counts
    if ref.report is not None:
        extra.update(ref.report.as_json())
    # reference quality before judge quality (docs/references.md#the-rule): per criterion, the humans' own
    # agreement (on the whole reference, whatever --limit sampled) must clear the floor and the judge, in every
    # rater's seat, must match that rater
    quality = certify_reference(ref.humans, judged, label_type=ref.label_type, seed=ctx.seed, n_boot=ctx.n_boot,
                                attributes=ref.attributes, clusters=ref.clusters, scale=ref.scale,
                                kind=ref.quality_kind or KIND_OF[ref.label_type])
    settings = fingerprint_settings(get_subtask(ref.subtask), ctx)
    cert = make_certificate(settings=settings, reference={"name": ref.name, "sha256": ref.sha256,
                                                          "source": ref.source, "n_items": len(ref.items),
                                                          "unit": ref.unit},
                            label_type=ref.label_type, figures=figures, thresholds=limits, seed=ctx.seed,
                            extra={**ref.extra, **extra, "notes": ref.notes,
                                   **({"anchors": dict(sorted(anchors.items()))} if anchors else {})},
                            reference_quality=quality)
    if quality.get("trial"):  # a --limit sample: a trial, never the certificate a run or the gate reads
        cert["trial"] = (f"the judge was asked about {quality['n_judged_items']} of the reference's "
                         f"{quality['n_reference_items']} items (--limit): a trial, not stored as the certificate")
        return cert, write_certificate(Path(certs_dir) / TRIALS_DIR, cert)
    return cert, write_certificate(certs_dir, cert)
