"""`trustmh compare RUN_A RUN_B` (docs/judge-probes.md#compare): per sub-task, the change of its figure from run A
to run B beside what the judge did on the anchor items both runs judged (fixed replies, so only the judge can
move them). Where the judge's anchor verdicts moved, part of the change may be the judge's; where they held,
the change is the model's (and the data's). A judge asked for under one name that answered under other names
in B than in A (`judges_reported`, a provider's alias update) is said on its rows. Plain Python on two
results.json dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trustmh.core import TrustmhError
from trustmh.judges.drift import STALE, anchor_drift
from trustmh.results.reported import reported_change

NO_RUBRIC = "none (scored before the rule of care)"


def rubric_of(subtask: Mapping[str, Any]) -> str | None:
    """The rubric version a sub-task's figures were scored under (`metrics.rubric_version`, the rule of care);
    None for a sub-task no rubric applies to."""
    version = (subtask.get("metrics") or {}).get("rubric_version")
    return None if version is None else str(version)


def _versions(results: Mapping[str, Any], field: str) -> dict[str, Any]:
    """A version field per sub-task: the sub-task's own, else the run's (None: not recorded)."""
    top = results.get(field)
    return {sid: (sub or {}).get(field, top) for sid, sub in (results.get("subtasks") or {}).items()}


def like_with_like(a: Mapping[str, Any], b: Mapping[str, Any], where_a: str, where_b: str) -> str | None:
    """Why runs A and B cannot be compared (one line), or None: each must be a whole run (not a shard), and
    both must score with the same rubrics and read the same versions of the data they share (a dataset file
    both record with different hashes, or different conversation sets, `-O sets=`), else a change between
    them is partly the instrument's."""
    for results, where in ((a, where_a), (b, where_b)):
        shard = results.get("shard")
        if shard is not None:
            part = "/".join(str(x) for x in shard) if isinstance(shard, list) else str(shard)
            return (f"{where}: the results of shard {part}, a slice of the items, not a whole run; combine every "
                    "shard with `trustmh merge` and compare the merged directory")
    rubrics_a, rubrics_b = _versions(a, "rubric_version"), _versions(b, "rubric_version")
    for sid in sorted(set(rubrics_a) & set(rubrics_b)):
        if rubrics_a[sid] != rubrics_b[sid]:
            return (f"{sid}: scored with rubric version {rubrics_a[sid]!r} in {where_a} and {rubrics_b[sid]!r} in "
                    f"{where_b}; compare runs scored with one rubric (rescore one of them)")
    options_a, options_b = a.get("options") or {}, b.get("options") or {}
    for key, what in (("rubric", "rubric"), ("sets", "conversation sets")):
        if options_a.get(key) != options_b.get(key):
            return (f"different {what}: -O {key}={options_a.get(key) or '(shipped)'} in {where_a}, "
                    f"-O {key}={options_b.get(key) or '(shipped)'} in {where_b}; compare runs of the same {what}")
    data_a, data_b = a.get("datasets") or {}, b.get("datasets") or {}
    for name in sorted(set(data_a) & set(data_b)):
        files_a, files_b = data_a[name] or {}, data_b[name] or {}
        for file in sorted(set(files_a) & set(files_b)):
            if files_a[file] and files_b[file] and files_a[file] != files_b[file]:
                return (f"dataset {name}: {file} differs between {where_a} and {where_b} (sha256 "
                        f"{str(files_a[file])[:12]}… vs {str(files_b[file])[:12]}…); compare runs on the same data")
    return None


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
        # the same judge asked for, answering under another name: the fingerprint cannot see that, the names can
        moved = reported_change((a.get("judges_reported") or {}).get(sid), (b.get("judges_reported") or {}).get(sid))
        if moved is not None:
            row["judge_reported_change"] = moved
            row["whose"] += f"; {moved}"
        rows.append(row)
    return rows


def compare_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The comparison as the command prints it."""
    if not rows:
        return ["no sub-task computed by both runs"]
    return [f"{r['subtask']}: {r['a']:.3f} -> {r['b']:.3f} ({r['change']:+.3f}); {r['whose']}" for r in rows]
