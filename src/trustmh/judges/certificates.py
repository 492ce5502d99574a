"""Judge certificates: evidence that a judge, asked exactly as a run asks it, agrees with human labels
(docs/judges.md#certificates). Plain Python, no Inspect.

A judge's *fingerprint* is the sha256 of a canonical JSON of what the judge sees and how it is asked: the
sub-task, the sha256 of every prompt template its requests render (`Subtask.judge_templates`), the judge
models, the ensemble rule and `min_valid`, temperature, JSON-schema mode and the free-text cap. A changed
prompt, judge model, ensemble rule or setting gives a new fingerprint, so an old certificate no longer
applies. Item text is not part of it.

A certificate is one JSON file per fingerprint, `<certificates dir>/<fingerprint>.json`, holding the
reference set it was measured on, the agreement figures with seeded 95% intervals, the thresholds it was
held to and its verdict. Each run records `judge.fingerprint` per judged sub-task in results.json, so the
gate and the report find the certificate of the run's own judge.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trustmh
from trustmh.core import RunContext, Subtask, TrustmhError, notice
from trustmh.json_clean import clean_json
from trustmh.judges.ensemble import ensemble_settings
from trustmh.judges.reference_quality import CERTIFIED, NOT_CERTIFIED
from trustmh.judges.schema import judge_json_mode
from trustmh.prompts import template_sha256
from trustmh.stats.judge_agreement import JUDGE_METRICS, meets, metric_direction
from trustmh.storage import write_text_atomic

FORMAT = 2
KIND = "trustmh-judge-certificate"
ENV_DIR = "TRUSTMH_CERTIFICATES_DIR"
# The project's own folder, in the directory a command runs from (beside its run directories), so two projects on
# one machine never read each other's certificates; `--certificates DIR` or $TRUSTMH_CERTIFICATES_DIR choose another.
DEFAULT_DIR = Path("trustmh-certificates")
# Where certificates went before issue 53: no longer read unless named, and said once when it still holds some.
FORMER_DIR = Path("~/.cache/trustmh/certificates")
SOURCES = ("public", "run", "user")

# The thresholds a certificate is held to unless `--threshold metric=value` says otherwise; met at the
# protective bound of the 95% interval (docs/judges.md#thresholds).
DEFAULT_THRESHOLDS: dict[str, dict[str, dict[str, float]]] = {
    "binary": {"sensitivity": {"min": 0.90}, "specificity": {"min": 0.80}, "kappa": {"min": 0.60}},
    "ordinal": {"weighted_kappa": {"min": 0.60}, "icc_a1": {"min": 0.50}, "mae": {"max": 1.00},
                "within_1": {"min": 0.80}},
    "categorical": {"kappa": {"min": 0.60}},
    # the SIRI-2 as a judge check (trustmh.pillars.clinical.judge_check): trained counsellors' total, half a point
    "siri2": {"siri2_total": {"max": 41.0}, "inappropriate_bias": {"max": 0.5}},
}


_FORMER_SAID: list[bool] = []


def default_certificates_dir() -> Path:
    """`$TRUSTMH_CERTIFICATES_DIR`, else `./trustmh-certificates` (DEFAULT_DIR, from the current directory)."""
    value = os.environ.get(ENV_DIR)
    if value:
        return Path(value).expanduser()
    former = FORMER_DIR.expanduser()
    if not _FORMER_SAID and former.is_dir() and any(former.glob("*.json")):
        _FORMER_SAID.append(True)
        notice(f"judge certificates are read from {DEFAULT_DIR.resolve()} (this project's folder), no longer from "
               f"{former}; to use those, pass --certificates {former} or move them")
    return DEFAULT_DIR.resolve()


def certificates_dir(given: str | Path | None) -> Path:
    return Path(given).expanduser() if given else default_certificates_dir()


def fingerprint_settings(subtask: type[Subtask] | Subtask, ctx: RunContext) -> dict[str, Any]:
    """The canonical settings a fingerprint hashes (also stored in the certificate as `settings`)."""
    if not subtask.judge_templates:
        raise TrustmhError(f"{subtask.id}: no judge_templates declared, so its judge cannot be fingerprinted")
    members = sorted(ctx.judges)
    aggregator, min_valid = ensemble_settings(ctx, subtask, max(1, len(members)))
    chars = ctx.options.get("judge_text_chars")
    return {
        "subtask": subtask.id,
        # faithful and default modes ask the judge with different prompts and parse it differently
        "mode": ctx.mode,
        "templates": {name: template_sha256(name) for name in sorted(subtask.judge_templates)},
        "judges": members,
        "ensemble": aggregator,
        "min_valid": min_valid,
        "temperature": 0.0,
        "json_mode": judge_json_mode(ctx.judge.model, ctx.options),
        "judge_text_chars": None if chars is None else int(chars),
        "format": FORMAT,
    }


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint_of(settings: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_json(settings).encode("utf-8")).hexdigest()


def judge_fingerprint(subtask: type[Subtask] | Subtask, ctx: RunContext) -> str:
    """sha256 hex of the canonical JSON of `fingerprint_settings(subtask, ctx)`."""
    return fingerprint_of(fingerprint_settings(subtask, ctx))


CANNOT_CERTIFY = "cannot certify"  # a certificate's verdict when its reference's humans do not agree enough


def combined_verdict(thresholds_verdict: str, reference_quality: Mapping[str, Any] | None) -> str:
    """A certificate's verdict (docs/references.md#the-rule): "fail" when the reference-quality rule finds the
    judge not certified on some criterion, "cannot certify" when the reference cannot certify some criterion
    (never a pass), else the thresholds' verdict. Without the rule (a single-rater review import), the
    thresholds' verdict."""
    if reference_quality is None:
        return thresholds_verdict
    status = reference_quality.get("status")
    if status == NOT_CERTIFIED:
        return "fail"
    if status != CERTIFIED:
        return CANNOT_CERTIFY
    return thresholds_verdict


def verdict(agreement: Mapping[str, Mapping[str, Any]], thresholds: Mapping[str, Mapping[str, float]]) -> str:
    """"pass" when every threshold is met at the protective bound of its figure's interval, else "fail"."""
    for metric, bound in thresholds.items():
        if metric not in agreement or not meets(dict(agreement[metric]), dict(bound)):
            return "fail"
    return "pass"


def threshold_gaps(cert: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Per threshold: the protective bound, the limit and by how much it misses (negative = short)."""
    out: dict[str, dict[str, Any]] = {}
    for metric, bound in (cert.get("thresholds") or {}).items():
        fig = (cert.get("agreement") or {}).get(metric) or {}
        ci = fig.get("ci")
        if "min" in bound:
            at = ci[0] if ci else None
            out[metric] = {"bound": at, "min": bound["min"], "margin": None if at is None else at - bound["min"]}
        else:
            at = ci[1] if ci else None
            out[metric] = {"bound": at, "max": bound["max"], "margin": None if at is None else bound["max"] - at}
    return out


def parse_thresholds(specs: list[str] | None, label_type: str) -> dict[str, dict[str, float]]:
    """DEFAULT_THRESHOLDS[label_type] overridden by `metric=value` specs (floor or ceiling by metric)."""
    # the metrics a certificate of this label type carries, with their ranges (the gate's table too)
    # a label type the gate does not know (a reference measured its own way, the SIRI-2): its default
    # thresholds' metrics, unbounded
    ranges = dict(JUDGE_METRICS.get(label_type) or {m: (-math.inf, math.inf) for m in DEFAULT_THRESHOLDS[label_type]})
    out = {k: dict(v) for k, v in DEFAULT_THRESHOLDS[label_type].items()}
    for spec in specs or []:
        metric, sep, value = spec.partition("=")
        metric = metric.strip()
        try:
            x = float(value)
        except ValueError:
            x = float("nan")
        if not sep or not metric or not math.isfinite(x):
            raise TrustmhError(f"--threshold {spec!r}: use METRIC=NUMBER, e.g. sensitivity=0.9")
        rng = ranges.get(metric) or ((0.0, 1.0) if label_type == "categorical" and metric.startswith("recall_")
                                     else None)
        if rng is None:
            raise TrustmhError(f"--threshold {spec!r}: {metric!r} is not a figure of a {label_type} judge's "
                               f"certificate (known: {', '.join(ranges)}"
                               + (", recall_<class>)" if label_type == "categorical" else ")"))
        if not rng[0] <= x <= rng[1]:
            raise TrustmhError(f"--threshold {spec!r}: {x:g} is outside {metric}'s range [{rng[0]:g}, {rng[1]:g}]")
        out[metric] = {metric_direction(metric): x}
    return out


def worst_attribute(per_attribute: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """One judge scoring several attributes has one fingerprint, hence one certificate: its headline
    `agreement` holds, per metric, the figure of the attribute whose protective bound is the weakest (named in
    `attribute`), so that a threshold met there is met by every attribute (docs/judges.md#mentalalign).
    `per_attribute` maps attribute -> `judge_agreement` output; a figure without an interval counts as the
    weakest."""
    metrics = list(dict.fromkeys(m for figs in per_attribute.values() for m in figs.get("agreement", {})))
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        def strength(attr: str, metric: str = metric) -> float:
            ci = (per_attribute[attr].get("agreement", {}).get(metric) or {}).get("ci")
            if not ci:
                return float("-inf")
            return float(ci[0]) if metric_direction(metric) == "min" else -float(ci[1])

        attr = min(per_attribute, key=strength)
        out[metric] = {**dict(per_attribute[attr].get("agreement", {}).get(metric) or {}), "attribute": attr}
    return out


def make_certificate(*, settings: Mapping[str, Any], reference: Mapping[str, Any], label_type: str,
                     figures: Mapping[str, Any], thresholds: Mapping[str, Mapping[str, float]], seed: int,
                     extra: Mapping[str, Any] | None = None,
                     reference_quality: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A certificate dict (docs/judges.md#certificates); `figures` is `stats.judge_agreement.judge_agreement`'s
    output. `extra` adds informative fields (human-vs-human agreement, per-rater figures, notes).
    `reference_quality` is `judges.reference_quality.certify_reference`'s output: the verdict then follows
    `combined_verdict`, and the thresholds' own verdict is kept as `thresholds_verdict`."""
    if reference.get("source") not in SOURCES:
        raise ValueError(f"reference source must be one of {SOURCES}")
    agreement = dict(figures["agreement"])
    cert: dict[str, Any] = {
        "format": FORMAT, "kind": KIND,
        "fingerprint": fingerprint_of(settings),
        "subtask": settings["subtask"],
        "judges": list(settings["judges"]),
        "ensemble": settings["ensemble"],
        "settings": dict(settings),
        "reference": dict(reference),
        "label_type": label_type,
        "n": figures["n"],
        "n_judge_invalid": figures.get("n_judge_invalid", 0),
        "agreement": agreement,
        "thresholds": {k: dict(v) for k, v in thresholds.items()},
        "verdict": combined_verdict(verdict(agreement, thresholds), reference_quality),
        "seed": seed,
        "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "trustmh_version": trustmh.__version__,
    }
    if reference_quality is not None:
        cert["reference_quality"] = dict(reference_quality)
        cert["thresholds_verdict"] = verdict(agreement, thresholds)
    if extra:
        cert.update({k: v for k, v in extra.items() if k not in cert})
    return clean_json(cert)


def certificate_path(certs_dir: Path, fingerprint: str, reference_sha256: str | None = None) -> Path:
    """`<fingerprint>--ref-<first 16 hex of the reference's digest>.json`: the name depends on the reference's
    content, so a certificate measured on a damaged copy never replaces the clean copy's in a shared folder
    (`<fingerprint>.json` for a certificate whose reference has no digest, and as written before)."""
    if not reference_sha256:
        return Path(certs_dir) / f"{fingerprint}.json"
    return Path(certs_dir) / f"{fingerprint}--ref-{reference_sha256[:16]}.json"


def write_certificate(certs_dir: str | Path, cert: Mapping[str, Any]) -> Path:
    """Write the certificate atomically under `certificate_path` (replacing an older one for the same judge
    fingerprint and the same reference content only)."""
    if cert.get("kind") != KIND or not cert.get("fingerprint"):
        raise ValueError("not a judge certificate")
    reference = cert.get("reference")
    digest = reference.get("sha256") if isinstance(reference, Mapping) else None
    path = certificate_path(Path(certs_dir), str(cert["fingerprint"]), str(digest) if digest else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, json.dumps(cert, indent=2, ensure_ascii=False) + "\n")
    return path


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("kind") != KIND or data.get("format") != FORMAT:
        return None
    return data


# What a certificate's reference items were (`reference.unit`): single replies, each judged alone, or whole
# conversations. A conversation sub-task's judge reads turns in their conversation, so only a certificate on
# conversations certifies it; one on single replies (Moore et al.'s interjections) is supporting evidence only
# (docs/judges.md#conversation-review). A certificate that records no unit was measured on replies.
REPLY = "reply"
CONVERSATION = "conversation"


def reference_unit(cert: Mapping[str, Any]) -> str:
    reference = cert.get("reference")
    unit = reference.get("unit") if isinstance(reference, Mapping) else None
    return CONVERSATION if unit == CONVERSATION else REPLY


def certifies_unit(cert: Mapping[str, Any], unit: str) -> bool:
    """Whether the certificate can certify a judge whose items are `unit` (a sub-task's `judged_unit`)."""
    return unit != CONVERSATION or reference_unit(cert) == CONVERSATION


def single_reply_line(cert: Mapping[str, Any], subtask_id: str) -> str:
    """Why a single-reply certificate does not certify a conversation sub-task's judge, and what would."""
    name = (cert.get("reference") or {}).get("name")
    return (f"the certificate of {subtask_id}'s judge was measured on single replies ({name}): supporting "
            "evidence only; a conversation judge is certified on conversations (label them by two raters: "
            f"trustmh review export RUN_DIR --subtask {subtask_id} --n N --seed S)")


def find_certificate(certs_dir: str | Path | None, fingerprint: str | None, subtask_id: str,
                     unit: str = REPLY) -> dict[str, Any] | None:
    """The certificate for this fingerprint and sub-task, or None (no directory, no file, unreadable file,
    or a file for another sub-task or fingerprint); for a conversation sub-task (`unit`), only a certificate
    measured on conversations."""
    if not fingerprint or certs_dir is None:
        return None
    folder = Path(certs_dir)
    paths = [certificate_path(folder, fingerprint), *sorted(folder.glob(f"{fingerprint}--ref-*.json"))]
    certs = [c for p in paths if (c := _read(p)) is not None
             and c.get("fingerprint") == fingerprint and c.get("subtask") == subtask_id and certifies_unit(c, unit)]
    if not certs:
        return None
    # one judge measured on several copies of a reference: the least favourable status holds (a judge that fails
    # on one copy is not certified by another), the newest among equals
    rank = {"failed": 0, CANNOT_CERTIFY: 1, "certified": 2}
    return min(certs, key=lambda c: (rank[status_for(c)], _newest_first(c)))


def _newest_first(cert: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(-ord(ch) for ch in str(cert.get("created", "")))


def load_certificates(certs_dir: str | Path | None) -> list[dict[str, Any]]:
    """Every readable certificate in the directory, sorted by sub-task then creation time."""
    if certs_dir is None or not Path(certs_dir).is_dir():
        return []
    certs = [c for p in sorted(Path(certs_dir).glob("*.json")) if (c := _read(p)) is not None]
    return sorted(certs, key=lambda c: (str(c.get("subtask")), str(c.get("created"))))


def status_for(cert: Mapping[str, Any] | None) -> str:
    """"certified" (verdict pass), "cannot certify" (the reference's humans do not agree enough), "failed"
    (verdict fail) or "none" (no certificate)."""
    if cert is None:
        return "none"
    if cert.get("verdict") == CANNOT_CERTIFY:
        return CANNOT_CERTIFY
    return "certified" if cert.get("verdict") == "pass" else "failed"
