"""`trustmh judge probe`: the bias battery (`probe_battery`) judged as a certification is, through the run (fixed
replies, the spec's judges, the one Inspect call, the response cache, batch-capable), then each probe's effect
as a paired difference with a 95% interval held to a stated tolerance, written as a probe record beside the
certificates (`<certificates>/probes/<fingerprint>.json`, docs/judge-probes.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import trustmh
from trustmh.catalogue import get_subtask
from trustmh.certify.measure import judge_reference, refuse_unreadable
from trustmh.certify.probe_battery import BIAS, MATERIAL, NULL, REPLY_KEY, TOLERANCE, arms, battery
from trustmh.core import Item, TrustmhError, clean_json
from trustmh.digest import sha256_bytes
from trustmh.judges.certificates import canonical_json, fingerprint_of, fingerprint_settings
from trustmh.judges.probe_records import FORMAT, KIND, write_probe_record
from trustmh.judges.references import Reference
from trustmh.models.providers import model_family
from trustmh.run.config import RunSpec
from trustmh.stats.classification import wilson_interval
from trustmh.stats.paired_effect import paired_label_difference, paired_score_difference

PASS, FAIL, INCONCLUSIVE, INVALID = "pass", "fail", "inconclusive", "invalid"
DETECTED, NOT_DETECTED = "detected", "not detected"
# `trustmh judge probe`'s exit: pass 0, a bias found 1, inconclusive or invalid 3 (2 is a usage or data error)
PROBE_EXIT = {PASS: 0, FAIL: 1, INCONCLUSIVE: 3, INVALID: 3}


def probe_items(ref: Reference, family: str | None) -> tuple[list[Item], dict[str, Any]]:
    """Every item the battery judges (each stored item, then each applicable probe's arms) and, per probe, its
    pairs of item ids or why it does not apply."""
    subtask = ref.judging or get_subtask(ref.subtask)
    stored = [it for it in ref.items if it.metadata.get(REPLY_KEY) is not None]
    if not stored:
        raise TrustmhError(f"{ref.name}: no item stores its reply ({REPLY_KEY}), so no probe can vary one")
    items: dict[str, Item] = {it.id: it for it in stored}
    plan: dict[str, Any] = {}
    for probe in battery(subtask):
        reason = probe.not_applicable(subtask, family)
        if reason is not None:
            plan[probe.name] = {"role": probe.role, "tests": probe.tests, "not_applicable": reason}
            continue
        pairs = []
        for it in stored:
            control, treated = arms(probe, it, family)
            items.setdefault(control.id, control)
            items[treated.id] = treated
            pairs.append((control.id, treated.id))
        plan[probe.name] = {"role": probe.role, "tests": probe.tests, "pairs": pairs}
    return list(items.values()), plan


def as_number(value: Any) -> float | None:
    """A judged value as one number: a label or score as is, several attributes (MentalBench) as their mean."""
    if isinstance(value, Mapping):
        numbers = [float(v) for v in value.values() if isinstance(v, int | float)]
        return sum(numbers) / len(numbers) if numbers else None
    return None if value is None else float(value)


def effect(label_type: str, pairs: Sequence[tuple[Any, Any]], *, scale: tuple[float, float] | None, seed: int,
           n_boot: int) -> dict[str, Any]:
    """The change from control to treated over the pairs both of whose verdicts could be read."""
    if label_type == "categorical":
        usable = [(a, b) for a, b in pairs if a is not None and b is not None]
        changed = sum(1 for a, b in usable if a != b)
        lo, hi = wilson_interval(changed, len(usable)) or (0.0, 1.0)
        return {"n": len(usable), "effect": changed / len(usable) if usable else None, "ci": [lo, hi],
                "measure": "share of items whose class changed", "method": "Wilson"}
    numbers = [(as_number(a), as_number(b)) for a, b in pairs]
    usable = [(a, b) for a, b in numbers if a is not None and b is not None]
    before, after = [a for a, _ in usable], [b for _, b in usable]
    if label_type == "binary":
        return {**paired_label_difference([int(x) for x in before], [int(x) for x in after]),
                "measure": "change in the rate of 1s"}
    width = (scale[1] - scale[0]) if scale and scale[1] > scale[0] else 1.0
    fig = paired_score_difference([x / width for x in before], [x / width for x in after], seed=seed,
                                  n_boot=n_boot)
    return {**fig, "measure": "change in the mean score, as a share of the scale's range"}


def decide(role: str, fig: Mapping[str, Any], tolerance: float) -> str:
    """A bias probe or the null placebo: fail when the interval excludes no change and the effect is beyond the
    tolerance, pass when the whole interval is within it, else inconclusive. The material placebo: detected
    when the interval excludes no change and the effect is beyond the tolerance."""
    if fig.get("effect") is None or not fig.get("ci"):
        return INCONCLUSIVE
    lo, hi = fig["ci"]
    moved = (lo > 0 or hi < 0) and abs(fig["effect"]) > tolerance
    if role == MATERIAL:
        return DETECTED if moved else NOT_DETECTED
    if moved:
        return FAIL
    return PASS if -tolerance <= lo and hi <= tolerance else INCONCLUSIVE


def overall(probes: Mapping[str, Mapping[str, Any]]) -> tuple[str, str]:
    """The record's verdict and why: invalid when a placebo misbehaves (the battery cannot be read), fail when
    a bias probe fails, pass when every applicable one passes, else inconclusive."""
    misbehaving = [n for n, p in probes.items() if (p["role"] == NULL and p.get("verdict") != PASS)
                   or (p["role"] == MATERIAL and p.get("verdict") != DETECTED)]
    if misbehaving:
        return INVALID, ("placebo(s) misbehaved: " + ", ".join(f"{n} {probes[n].get('verdict')}" for n in misbehaving)
                         + " (the judge follows a null change, or misses a material one)")
    failed = [n for n, p in probes.items() if p["role"] == BIAS and p.get("verdict") == FAIL]
    if failed:
        return FAIL, "bias found: " + ", ".join(failed)
    unsure = [n for n, p in probes.items() if p["role"] == BIAS and p.get("verdict") == INCONCLUSIVE]
    if unsure:
        return INCONCLUSIVE, "interval wider than the tolerance (more items needed): " + ", ".join(unsure)
    return PASS, "every applicable probe is within its tolerance; both placebos behave"


def run_probe(ref: Reference, spec: RunSpec, *, certs_dir: Path, work: Path,
              tolerance: float = TOLERANCE) -> tuple[dict[str, Any], Path]:
    """Judge the battery as a run (`spec`, from `certify.measure.certification_spec`), measure each probe and
    write the probe record; returns (record, path)."""
    ctx = spec.context()
    family = model_family(ctx.judges[0]) if ctx.judges else None
    items, plan = probe_items(ref, family)
    records = judge_reference(replace(ref, items=items, name=f"{ref.name}-probe"), spec, work)
    judged = {r.item_id: ref.judge_value(r) for r in records}
    refuse_unreadable(judged, ctx.judges, f"the bias battery of {ref.name}")
    probes: dict[str, Any] = {}
    for name, entry in plan.items():
        if "pairs" not in entry:
            probes[name] = {**entry, "verdict": "not applicable"}
            continue
        fig = effect(ref.label_type, [(judged.get(a), judged.get(b)) for a, b in entry["pairs"]],
                     scale=ref.scale, seed=ctx.seed, n_boot=ctx.n_boot)
        probes[name] = {"role": entry["role"], "tests": entry["tests"], **fig, "tolerance": tolerance,
                        "verdict": decide(entry["role"], fig, tolerance)}
    verdict, reason = overall(probes)
    settings = fingerprint_settings(get_subtask(ref.subtask), ctx)
    record: dict[str, Any] = {
        "format": FORMAT, "kind": KIND, "fingerprint": fingerprint_of(settings), "subtask": ref.subtask,
        "judges": list(settings["judges"]), "family": family, "settings": settings,
        "reference": {"name": ref.name, "sha256": ref.sha256, "source": ref.source},
        "label_type": ref.label_type, "items": sorted(it.id for it in ref.items if it.metadata.get(REPLY_KEY)),
        "n_calls": len(items), "seed": ctx.seed, "n_boot": ctx.n_boot, "tolerance": tolerance,
        "probes": probes, "verdict": verdict, "reason": reason,
    }
    record = clean_json(record)
    record["digest"] = sha256_bytes(canonical_json(record).encode("utf-8"))
    record["created"] = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    record["trustmh_version"] = trustmh.__version__
    return record, write_probe_record(certs_dir, record)


def probe_line(name: str, probe: Mapping[str, Any]) -> str:
    """One probe as the command and the report show it: its effect, interval and tolerance, and its verdict."""
    if probe.get("verdict") == "not applicable":
        return f"{name}: not applicable ({probe.get('not_applicable')})"
    ci = probe.get("ci") or [None, None]

    def num(x: Any) -> str:
        return "—" if x is None else f"{float(x):+.3f}"

    return (f"{name} ({probe['role']}): effect {num(probe.get('effect'))} (95% CI {num(ci[0])} to {num(ci[1])}; "
            f"tolerance ±{probe['tolerance']:g}, n = {probe.get('n')}): {probe['verdict']}")
