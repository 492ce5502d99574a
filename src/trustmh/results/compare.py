"""`trustmh compare RUN_A RUN_B` (docs/judge-probes.md#compare): per sub-task, the change of its figure from run A
to run B beside what the judge did on the anchor items both runs judged (fixed replies, so only the judge can
move them). Where the judge's anchor verdicts moved, part of the change may be the judge's; where they held,
the change is the model's (and the data's). Plain Python on two results.json dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmh.core import TrustmhError
from trustmh.judges.drift import STALE, anchor_drift

NO_RUBRIC = "none (scored before the rule of care)"


def rubric_of(subtask: Mapping[str, Any]) -> str | None:
    """The rubric version a sub-task's figures were scored under (`metrics.rubric_version`, the rule of care);
    None for a sub-task no rubric applies to."""
    version = (subtask.get("metrics") or {}).get("rubric_version")
    return None if version is None else str(version)


def compare_runs(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per sub-task both runs computed: the values, the change, the judge's drift on the anchors from
    A to B and whose the change is. Two runs whose figures for one sub-task were scored under different rubric
    versions are not set side by side: a TrustmhError naming the sub-task and both versions (a run of a
    crisis-type check without a version was scored before the rule of care)."""
    rows = []
    subs_a, subs_b = a.get("subtasks") or {}, b.get("subtasks") or {}
    for sid in sorted(set(subs_a) & set(subs_b)):
        sa, sb = subs_a[sid] or {}, subs_b[sid] or {}
        if sa.get("value") is None or sb.get("value") is None:
            continue
        ra, rb = rubric_of(sa), rubric_of(sb)
        if ra != rb:
            raise TrustmhError(f"{sid}: run A was scored under rubric {ra or NO_RUBRIC} and run B under "
                               f"{rb or NO_RUBRIC}; their figures measure different things and are not compared "
                               "(run both under one version)")
        row: dict[str, Any] = {"subtask": sid, "a": sa["value"], "b": sb["value"], "change": sb["value"] - sa["value"]}
        judge_a, judge_b = sa.get("judge") or {}, sb.get("judge") or {}
        if not (judge_a.get("anchors") or judge_b.get("anchors")):
            row["whose"] = "not judged" if not judge_a and not judge_b else "no anchors: cannot tell"
        else:
            drift = anchor_drift(judge_b.get("anchors"), judge_a.get("anchors"))
            row["judge_drift"] = drift
            if drift["status"] == STALE:
                row["whose"] = (f"judge and model: the judge's anchor verdicts moved ({drift['changed']} of "
                                f"{drift['n']}, {drift['share']:.0%}): part of the change may be the judge's")
            elif "share" in drift:
                row["whose"] = (f"model: the judge held its anchor verdicts ({drift['changed']} of {drift['n']} "
                                "moved, within the bound)")
            else:
                row["whose"] = f"cannot tell: {drift.get('reason')}"
            if judge_a.get("fingerprint") != judge_b.get("fingerprint"):
                row["whose"] += "; the judge's fingerprint differs too (prompt, model or settings)"
        rows.append(row)
    return rows


def compare_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The comparison as the command prints it."""
    if not rows:
        return ["no sub-task computed by both runs"]
    return [f"{r['subtask']}: {r['a']:.3f} -> {r['b']:.3f} ({r['change']:+.3f}); {r['whose']}" for r in rows]
