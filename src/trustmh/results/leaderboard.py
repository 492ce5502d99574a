"""Aggregation (docs/results.md#aggregation): normalised scores, pillar and overall scores, ranks across models."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from trustmh.catalogue import ANCHORS_VERSION, BY_ID, PILLARS, pillars_for_mode
from trustmh.core import Mode, SubtaskResult
from trustmh.data.files import csv_text
from trustmh.results.item_scores import item_scores
from trustmh.stats.paired import paired_order_share


def normalise(value: float | None, subtask_id: str, mode: Mode) -> float | None:
    """clip((value − worst)/(best − worst), 0, 1) with the sub-task's fixed anchors."""
    if value is None or not np.isfinite(value):
        return None
    worst, best = BY_ID[subtask_id].anchors[mode]
    return float(np.clip((value - worst) / (best - worst), 0.0, 1.0)) + 0.0  # + 0.0: never -0.0 (best < worst)


def _value(result: SubtaskResult | Mapping[str, Any]) -> tuple[float | None, str]:
    if isinstance(result, SubtaskResult):
        return result.value, result.status
    return result.get("value"), result.get("status", "ok")


def normalised_summary(subtasks: Mapping[str, SubtaskResult | Mapping[str, Any]], mode: Mode) -> dict[str, Any]:
    """Pillar scores (mean of normalised sub-task scores) and the overall score (mean over pillars)."""
    pillars: dict[str, Any] = {}
    mode_pillars = pillars_for_mode(mode)
    for pillar in mode_pillars:
        members = [sid for sid in subtasks if sid.split("/")[0] == pillar]
        if not members:
            continue
        norms = {}
        for sid in members:
            value, status = _value(subtasks[sid])
            if status == "ok":
                n = normalise(value, sid, mode)
                if n is not None:
                    norms[sid] = n
        if norms:
            pillars[pillar] = {"normalised": float(np.mean(list(norms.values()))), "status": "ok",
                               "n_subtasks": len(norms), "n_subtasks_total": len(members),
                               "subtask_normalised": norms}
        else:
            pillars[pillar] = {"normalised": None, "status": "not_computed", "n_subtasks": 0,
                               "n_subtasks_total": len(members), "subtask_normalised": {},
                               "reason": "no sub-task of this pillar could be computed"}
    computed = [p["normalised"] for p in pillars.values() if p["status"] == "ok"]
    overall = {
        "normalised": float(np.mean(computed)) if computed else None,
        "n_pillars": len(computed),
        "n_pillars_total": len(mode_pillars),
        "partial": len(computed) < len(mode_pillars),
        "anchors_version": ANCHORS_VERSION,
    }
    if not computed:
        overall["status"] = "not_computed"
    return {"pillars": pillars, "overall": overall}


def rank_models(values: Mapping[str, float | None], direction: str) -> dict[str, float]:
    """Average-tie ranks (1 = best) of the models that have a value."""
    names = [m for m, v in values.items() if v is not None and np.isfinite(v)]
    if not names:
        return {}
    if len(names) == 1:  # a run's own report: no need to import scipy.stats (about a second of CPU)
        return {names[0]: 1.0}
    arr = np.array([values[m] for m in names], dtype=float)
    from scipy.stats import rankdata  # here, not at import: scipy.stats costs every `trustmh run` a second

    ranks = rankdata(-arr if direction == "higher" else arr, method="average")
    return dict(zip(names, (float(r) for r in ranks), strict=True))


def leaderboard(runs: list[dict[str, Any]], items: Sequence[Sequence[Mapping[str, Any]] | None] | None = None,
                *, seed: int = 0, n_boot: int = 2000) -> dict[str, Any]:
    """Compare several results.json documents: per-sub-task ranks, pillar ranks (mean of sub-task ranks,
    the original's scheme) and normalised pillar/overall scores (comparable across runs). With each run's
    items.jsonl rows (`items`), every pair of rank-neighbours gets a paired bootstrap on shared items."""
    labels = _labels(runs)
    subtask_ids = [sid for sid in BY_ID if any(sid in r["subtasks"] for r in runs)]
    per_subtask: dict[str, Any] = {}
    for sid in subtask_ids:
        values: dict[str, float | None] = {}
        direction = "higher"
        for label, run in zip(labels, runs, strict=True):
            sub = run["subtasks"].get(sid)
            if sub is not None:
                direction = sub["direction"]
                values[label] = sub["value"] if sub["status"] == "ok" else None
        per_subtask[sid] = {"direction": direction, "values": values, "ranks": rank_models(values, direction)}
        # people's figure on the same items (e.g. human therapists), where a sub-task reports one: shown beside
        # the models, never ranked among them
        baselines = {label: base for label, run in zip(labels, runs, strict=True)
                     if (base := ((run["subtasks"].get(sid) or {}).get("metrics") or {}).get("human_baseline"))}
        if baselines:
            per_subtask[sid]["human_baseline"] = baselines
        # what string matching alone scores on each run's conversations (the keyword floor): beside, never ranked
        floors = {label: {k: floor.get(k) for k in ("model", "value", "ci", "n", "status", "reason")}
                  for label, run in zip(labels, runs, strict=True)
                  if (floor := ((run["subtasks"].get(sid) or {}).get("metrics") or {}).get("keyword_floor"))}
        if floors:
            per_subtask[sid]["keyword_floor"] = floors
        per_subtask[sid]["neighbours"] = _neighbours(sid, per_subtask[sid], labels, runs, items, seed, n_boot)
    # A mean of ranks is only fair over the same sub-tasks: a model that lacks one that another model has is
    # not ranked on that pillar (and so not overall), and the coverage says why.
    pillar_rank: dict[str, dict[str, float]] = {}
    not_ranked: dict[str, dict[str, list[str]]] = {}
    for pillar in PILLARS:
        sids = [s for s in subtask_ids if s.split("/")[0] == pillar and per_subtask[s]["ranks"]]
        ranks: dict[str, float] = {}
        for label in labels:
            missing = [s for s in sids if label not in per_subtask[s]["ranks"]]
            if missing and len(missing) < len(sids):
                not_ranked.setdefault(label, {})[pillar] = missing
            elif not missing and sids:
                ranks[label] = float(np.mean([per_subtask[s]["ranks"][label] for s in sids]))
        if ranks:
            pillar_rank[pillar] = ranks
    overall_rank = {}
    for label in labels:
        if label in not_ranked:
            continue
        mine = [pillar_rank[p][label] for p in pillar_rank if label in pillar_rank[p]]
        if mine and len(mine) == len(pillar_rank):
            overall_rank[label] = float(np.mean(mine))
    coverage = {label: {"subtasks": sorted(s for s in subtask_ids if per_subtask[s]["values"].get(label)
                                           is not None),
                        "not_ranked": not_ranked.get(label, {})} for label in labels}
    modes = sorted({r["mode"] for r in runs})
    return {
        "models": labels,
        "modes": modes,
        "subtasks": per_subtask,
        "pillar_mean_rank": pillar_rank,
        "overall_mean_rank": overall_rank,
        "pillar_normalised": {lab: {p: v["normalised"] for p, v in r.get("pillars", {}).items()}
                              for lab, r in zip(labels, runs, strict=True)},
        "overall_normalised": {lab: (r.get("overall") or {}).get("normalised")
                               for lab, r in zip(labels, runs, strict=True)},
        "coverage": coverage,
        "runs": {lab: {"model": r.get("model"), "folder": r.get("_folder"), "seed": r.get("seed"),
                       "created": r.get("created"), "mode": r.get("mode"), "suite": r.get("suite")}
                 for lab, r in zip(labels, runs, strict=True)},
        "notes": (["runs mix modes; faithful and default numbers are not comparable"] if len(modes) > 1 else [])
        + [f"{lab}: not ranked on {', '.join(sorted(miss))} (sub-tasks missing: "
           f"{', '.join(sorted({x for v in miss.values() for x in v}))})" for lab, miss in not_ranked.items()],
    }


def _neighbours(sid: str, entry: Mapping[str, Any], labels: list[str], runs: list[dict[str, Any]],
                items: Sequence[Sequence[Mapping[str, Any]] | None] | None, seed: int, n_boot: int
                ) -> list[dict[str, Any]]:
    """For each pair of rank-neighbours (better first): the share of paired-bootstrap replicates on their
    shared items that keep the order, or the reason it is not computed."""

    ranks = entry["ranks"]
    order = sorted(ranks, key=lambda m: ranks[m])
    by_label = dict(zip(labels, range(len(labels)), strict=True))
    out: list[dict[str, Any]] = []
    for a, b in zip(order, order[1:], strict=False):
        row: dict[str, Any] = {"a": a, "b": b, "share": None, "n_shared": 0, "reason": None}
        ia, ib = by_label[a], by_label[b]
        if ranks[a] == ranks[b]:
            row["reason"] = "tied"
        elif runs[ia].get("mode") != runs[ib].get("mode"):
            row["reason"] = "runs in different modes"
        elif items is None or items[ia] is None or items[ib] is None:
            row["reason"] = "items.jsonl not available for both runs"
        else:
            sa, ca, why_a = item_scores(sid, items[ia], runs[ia])
            sb, _, _ = item_scores(sid, items[ib], runs[ib])
            if why_a:
                row["reason"] = why_a
            else:
                res = paired_order_share(sa, sb, ca, direction=entry["direction"], seed=seed, n_boot=n_boot)
                row.update(share=res.share, n_shared=res.n_shared, reason=res.reason)
        out.append(row)
    return out


def leaderboard_csv(board: dict[str, Any]) -> str:
    """One row per (run, sub-task): value, rank, and the run's identity."""
    rows = []
    for sid, entry in board["subtasks"].items():
        below = {nb["a"]: nb for nb in entry.get("neighbours") or []}
        for label in board["models"]:
            run = board["runs"][label]
            value = entry["values"].get(label)
            nb = below.get(label) or {}
            rows.append([label, run["model"], run["folder"], run["seed"], run["created"], sid, entry["direction"],
                         value, entry["ranks"].get(label, ""), nb.get("b", ""), nb.get("share"),
                         nb.get("n_shared", ""), nb.get("reason") or ""])
    return csv_text(["run", "model", "folder", "seed", "created", "subtask", "direction", "value", "rank",
                     "next_below", "order_holds_share", "order_holds_n_shared", "order_holds_note"], rows)


def _labels(runs: list[dict[str, Any]]) -> list[str]:
    """Run names: the model, and where two runs share a model, their folder (then seed and date) too."""
    labels: list[str] = []
    models = [str(r["model"]) for r in runs]
    for run in runs:
        label = str(run["model"])
        if models.count(label) > 1:
            label = f"{label} [{run.get('_folder') or '?'}, seed {run.get('seed')}, {run.get('created') or '?'}]"
        base, k = label, 2
        while label in labels:
            label = f"{base} ({k})"
            k += 1
        labels.append(label)
    return labels
