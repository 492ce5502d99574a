"""Judge drift on anchor items (docs/judge-probes.md#drift): a run re-judges a few fixed anchor items of every
judged sub-task (our stored replies, so only the judge can change) and the certificate keeps its own run's
verdicts on them. More than `DRIFT_BOUND` of the shared anchors judged differently marks the certificate stale:
the judge behind the fingerprint changed since certification (a provider updated the model behind an alias).
Plain Python."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The share of anchor verdicts that may differ from the certificate's before it is stale. A judge asked at
# temperature 0 with a seed repeats itself on unchanged input; a tenth leaves room for a provider's occasional
# non-determinism while catching a changed model (one verdict in five).
DRIFT_BOUND = 0.10
STALE, CURRENT, NOT_MEASURED = "stale", "current", "not measured"


def anchor_drift(run_anchors: Mapping[str, Any] | None, cert_anchors: Mapping[str, Any] | None,
                 bound: float = DRIFT_BOUND) -> dict[str, Any]:
    """How the run's anchor verdicts compare with the certificate's: status, how many of the shared anchors
    changed, their share and the bound."""
    run, cert = dict(run_anchors or {}), dict(cert_anchors or {})
    shared = sorted(set(run) & set(cert))
    if not shared:
        why = ("the certificate records no anchor verdicts (certified before anchors; certify again)" if run
               else "the run judged no anchor items")
        return {"status": NOT_MEASURED, "reason": why, "bound": bound}
    changed = [k for k in shared if run[k] != cert[k]]
    share = len(changed) / len(shared)
    return {"status": STALE if share > bound else CURRENT, "changed": len(changed), "n": len(shared),
            "share": share, "bound": bound, "changed_items": changed}


def drift_line(drift: Mapping[str, Any]) -> str:
    """The drift as the gate and the report say it."""
    if drift.get("status") == NOT_MEASURED:
        return f"judge drift not measured: {drift.get('reason')}"
    said = (f"{drift['changed']} of {drift['n']} anchor verdicts ({drift['share']:.0%}) differ from the "
            f"certificate's (bound {drift['bound']:.0%})")
    return f"judge changed since certification: {said}" if drift["status"] == STALE else f"judge unchanged: {said}"
