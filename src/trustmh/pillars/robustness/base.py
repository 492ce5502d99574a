"""Robustness pillar (docs/pillars/robustness.md#perturbations): the emotional-support and diagnosis sub-tasks re-run on perturbed
user text.

A robustness sub-task wraps its base sub-task (`reliability/emotional_support`,
`reliability/psychological_diagnosis`): the items are the base's clean items plus perturbed variants
(`<base id>|<level>|<p>`) from `base.perturbable_items`, and every reply is judged and scored by the base.
Each condition (clean, or one level at one p) is aggregated by the base into its primary metric; the
robustness numbers are built from those:

* faithful: cascade (char → word → sentence) at p = 0.10; `value` = (clean − perturbed) / clean (↓).
  This rewards a model at chance (docs/pillars/robustness.md#modes) and is kept for comparability only.
* default: each level alone and the cascade at p ∈ {0.05, 0.10, 0.20, 0.30}; retention(p) =
  (s_p − worst) / (s_0 − worst) with `worst` the base's anchor; `value` = mean cascade retention (↑);
  not computed when the clean normalised score is below 0.05 (the model is at chance), when the clean
  score's 95% interval reaches the chance anchor (the notes say how close it is), or when the mean retention
  is above 1 (a floor effect: perturbed replies scored above the clean ones; never clipped to a perfect 1).

Intervals are paired: one draw of base clusters (dialogues / posts) per replicate, shared by the clean and
the perturbed conditions, with the composite recomputed in every replicate.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from trustmh.core import (
    NOT_COMPUTED,
    Direction,
    GenConfig,
    Item,
    JudgeRequest,
    Mode,
    Option,
    Record,
    RunContext,
    Subtask,
    SubtaskResult,
)
from trustmh.pillars.robustness.perturb import ALL_LEVELS, CASCADE, perturber
from trustmh.stats.bootstrap import cluster_codes, cluster_draw_counts, percentile_ci

CLEAN = "clean"
DEFAULT_PS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3)
FAITHFUL_P = 0.1
CHANCE_NORMALISED = 0.05  # clean normalised score below this: the model is at chance, retention undefined
RETENTION_CEILING = 1.0  # retention above it: perturbed scored above clean (a floor effect), not computed
SUPPORT_BASE_ID = "reliability/emotional_support"
DIAGNOSIS_BASE_ID = "reliability/psychological_diagnosis"

Conditions = list[tuple[str, float]]
Replicates = Callable[[Sequence[Record], np.ndarray, RunContext], np.ndarray]


def condition_key(level: str, p: float) -> str:
    """`clean`, or `<level>_<p>` (p as Python prints it: 0.05, 0.1, 0.2, 0.3), the `curve_*` suffix."""
    return CLEAN if level == CLEAN else f"{level}_{float(p)}"


# The offline demo's grid: the cascade at two intensities (the full grid is 16 conditions per item).
QUICK_PS: tuple[float, ...] = (0.1, 0.3)


def grid(ctx: RunContext) -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Levels and intensities of the default-mode curve; `-O robustness_grid=quick` shrinks it."""
    if ctx.options.get("robustness_grid") == "quick":
        return (CASCADE,), QUICK_PS
    return tuple(ALL_LEVELS), DEFAULT_PS


def conditions_for(mode: Mode, ctx: RunContext | None = None) -> Conditions:
    if mode == "faithful":
        return [(CASCADE, FAITHFUL_P)]
    levels, ps = grid(ctx) if ctx is not None else (tuple(ALL_LEVELS), DEFAULT_PS)
    return [(level, p) for level in levels for p in ps]


def _turn_owner(key: str) -> str:
    """The item id a perturb key belongs to: keys are `<item id>` or `<item id>#<turn index>`."""
    head, sep, tail = key.rpartition("#")
    return head if sep and tail.isdigit() else key


def _ci_list(reps: np.ndarray) -> list[float] | None:
    lo, hi = percentile_ci(reps)
    return None if not (np.isfinite(lo) and np.isfinite(hi)) else [lo, hi]


# ---------------------------------------------------------------------------------------------- base



# `-O` options of the robustness sub-tasks (both perturb the same base data)
OPTIONS: dict[str, Option] = {
    'robustness_grid': Option('quick or full perturbation grid'),
}


class RobustnessBase(Subtask):
    """A base sub-task re-run on perturbed inputs. `base_cls` defaults to the real base (imported lazily);
    tests inject a fake. `fast_stat` picks the vectorised replicate statistic written for the real base
    (default when the base is not injected); otherwise each replicate re-runs `base.aggregate`."""

    base_id: str = ""
    modes = ("faithful", "default")
    metric_labels = {
        "clean": "score of the base sub-task on the unperturbed inputs",
        "clean_normalised": "clean score placed between the worst anchor (0) and the best (1)",
        "worst_anchor": "worst score of the base sub-task (its floor)",
        "clean_ci_margin_to_chance": "how far the clean score's interval sits above chance",
        "n_base_items": "base items, each asked clean and at every perturbation level",
        "n_replies": "replies scored over every condition",
        "curve_{level}_{p}": "score with {level}-level perturbations at rate {p}",
        "relative_drop": "drop of the score from clean to the published perturbation, as a share of clean",
        "mean_retention_{level}": "perturbed score as a share of the clean score, mean over the {level}-level rates",
    }

    def __init__(self, base_cls: type[Subtask] | None = None, *, fast_stat: bool | None = None) -> None:
        self._base_cls = base_cls
        self._base: Subtask | None = None
        self._fast_stat = base_cls is None if fast_stat is None else fast_stat

    # -- the base ---------------------------------------------------------------------------------

    def _default_base_cls(self) -> type[Subtask]:
        raise NotImplementedError

    @property
    def base(self) -> Subtask:
        if self._base is None:
            cls = self._base_cls if self._base_cls is not None else self._default_base_cls()
            self._base = cls()
        return self._base

    @property  # type: ignore[override]
    def format_reminder(self) -> str | None:  # the re-ask follows the base's reply format
        return self.base.format_reminder

    def direction(self, mode: Mode) -> Direction:
        return "lower" if mode == "faithful" else "higher"

    def base_anchors(self, ctx: RunContext) -> tuple[float, float]:
        """(worst, best) of the base's primary metric in this mode (the normalisation anchors), as the real
        base sub-task declares them (also when a stand-in base is passed). Not named `anchors`: that is the
        robustness sub-task's own declaration (a dict per mode)."""
        return self._default_base_cls().anchors[ctx.mode]

    def fast_replicates(self, ctx: RunContext) -> Replicates:
        raise NotImplementedError

    # -- the Subtask contract: delegated to the base -------------------------------------------------

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        reason = super().not_computed_reason(ctx)
        return reason if reason is not None else self.base.not_computed_reason(ctx)

    def generation(self, ctx: RunContext) -> GenConfig:
        return self.base.generation(ctx)

    def items(self, ctx: RunContext) -> list[Item]:
        """The base's clean items (same ids) then every perturbed condition (`<base id>|<level>|<p>`).

        `ctx.limit` is applied by the base to the base items; every condition covers the same items. The
        perturbed user text is kept in `metadata["perturbed_inputs"]` ({perturb key: text}) besides what
        the base stores itself.
        """
        out: list[Item] = []
        for it in self.base.items(ctx):
            md = {**it.metadata, "level": CLEAN, "p": 0.0, "base_id": it.id}
            out.append(replace(it, cluster=it.cluster_id, metadata=md))
        for level, p in conditions_for(ctx.mode, ctx):
            fn = perturber(level, p, ctx.seed)
            captured: dict[str, dict[str, str]] = defaultdict(dict)

            def record(key: str, text: str, fn: Callable[[str, str], str] = fn,
                       captured: dict[str, dict[str, str]] = captured) -> str:
                new = fn(key, text)
                captured[_turn_owner(key)][key] = new
                return new

            for it in self.base.perturbable_items(ctx, record):
                md = {**it.metadata, "level": level, "p": p, "base_id": it.id,
                      "perturbed_inputs": dict(captured.get(it.id, {}))}
                out.append(replace(it, id=f"{it.id}|{level}|{p}", cluster=it.cluster_id, metadata=md))
        return out

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        return self.base.parse_valid(item, text, ctx)

    def answer_schema(self, item: Item, ctx: RunContext) -> dict[str, Any] | None:
        return self.base.answer_schema(item, ctx)

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        return self.base.judge_requests(item, response, ctx)

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        return self.base.score(item, response, judge_outputs, ctx)

    # -- aggregation ----------------------------------------------------------------------------------

    def _generic_replicates(self, records: Sequence[Record], weights: np.ndarray, ctx: RunContext) -> np.ndarray:
        """The base's own aggregate on each resampled record list (slow; for bases without a fast path)."""
        quiet = replace(ctx, n_boot=0)
        out = np.full(weights.shape[0], np.nan)
        for b in range(weights.shape[0]):
            recs = [r for r, c in zip(records, weights[b], strict=True) for _ in range(int(c))]
            if recs:
                res = self.base.aggregate(recs, quiet)
                out[b] = np.nan if res.value is None else float(res.value)
        return out

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        direction = self.direction(ctx.mode)
        if not records:
            return SubtaskResult.not_computed("no items scored", direction)
        groups: dict[str, list[int]] = defaultdict(list)
        for i, r in enumerate(records):
            groups[condition_key(str(r.metadata.get("level", CLEAN)), float(r.metadata.get("p", 0.0)))].append(i)
        if CLEAN not in groups:
            return SubtaskResult.not_computed("no clean items scored", direction, n=len(records))
        wanted = [CLEAN] + [condition_key(lv, p) for lv, p in conditions_for(ctx.mode, ctx)]
        per: dict[str, SubtaskResult] = {k: self.base.aggregate([records[i] for i in groups[k]], ctx)
                                         for k in wanted if k in groups}
        n = sum(res.n for res in per.values())
        n_invalid = sum(res.n_invalid for res in per.values())
        clean = per[CLEAN]
        notes = list(dict.fromkeys(clean.notes))
        if clean.status == NOT_COMPUTED or clean.value is None:
            res = SubtaskResult.not_computed(clean.reason or "clean condition not computed", direction, n=n,
                                             n_invalid=n_invalid, notes=notes)
            res.method, res.judge = clean.method, clean.judge
            return res
        values = {k: (None if r.status == NOT_COMPUTED or r.value is None else float(r.value))
                  for k, r in per.items()}
        missing = [k for k in wanted if values.get(k) is None]

        # Paired replicates: one cluster draw per replicate, shared by every condition.
        codes, n_clusters = cluster_codes([r.cluster for r in records])
        draws = cluster_draw_counts(n_clusters, ctx.n_boot, ctx.seed)
        stat = self.fast_replicates(ctx) if self._fast_stat else self._generic_replicates
        reps = {k: stat([records[i] for i in groups[k]], draws[:, codes[groups[k]]], ctx)
                for k in wanted if values.get(k) is not None}

        worst, best = self.base_anchors(ctx)
        s0 = values[CLEAN]
        metrics: dict[str, Any] = {
            "clean": s0,
            "clean_normalised": (s0 - worst) / (best - worst),
            "worst_anchor": worst,
            "n_base_items": len(groups[CLEAN]),
            "n_replies": len(records),
            "n_invalid_by_condition": {k: r.n_invalid for k, r in per.items()},
            "intervals": {"clean": _ci_list(reps[CLEAN])},
        }
        for k in wanted[1:]:
            metrics[f"curve_{k}"] = values.get(k)
        drop_key = condition_key(CASCADE, FAITHFUL_P)
        with np.errstate(invalid="ignore", divide="ignore"):
            if values.get(drop_key) is not None and s0 != 0:
                metrics["relative_drop"] = (s0 - values[drop_key]) / s0
                drop_reps = (reps[CLEAN] - reps[drop_key]) / reps[CLEAN]
                metrics["intervals"]["relative_drop"] = _ci_list(drop_reps)
            else:
                metrics["relative_drop"], drop_reps = None, None
        notes.append("perturbations are seeded (docs/pillars/robustness.md#perturbations) and applied to the user's text only; "
                     "cascade = char → word → sentence; perturbed inputs are stored in each record's metadata")
        if missing:
            notes.append(f"condition(s) not computed: {', '.join(missing)}")
        if ctx.mode == "faithful":
            value = metrics["relative_drop"]
            notes.append("faithful: relative drop of the base primary under the cascade at p = 0.1 (lower is "
                         "better); it rewards models at chance (docs/pillars/robustness.md#modes): default mode reports retention")
            if value is None:
                reason = ("clean score is 0: the relative drop is undefined" if s0 == 0
                          else f"perturbed condition {drop_key} not computed")
                return self._result_not_computed(reason, direction, n, n_invalid, metrics, notes, clean)
            ci = percentile_ci(drop_reps)
        else:
            retention: dict[str, dict[str, float | None]] = {}
            drops: dict[str, dict[str, float | None]] = {}
            ret_reps: dict[str, np.ndarray] = {}
            denom = s0 - worst
            rep_denom = reps[CLEAN] - worst
            rep_denom = np.where(rep_denom > 0, rep_denom, np.nan)  # clean at or below chance: undefined
            levels, ps = grid(ctx)
            for level in levels:
                retention[level], drops[level] = {}, {}
                for p in ps:
                    k = condition_key(level, p)
                    sp = values.get(k)
                    retention[level][str(p)] = None if sp is None or denom <= 0 else (sp - worst) / denom
                    drops[level][str(p)] = None if sp is None or s0 == 0 else (s0 - sp) / s0
                    if sp is not None:
                        ret_reps[k] = (reps[k] - worst) / rep_denom
                pts = [v for v in retention[level].values() if v is not None]
                metrics[f"mean_retention_{level}"] = float(np.mean(pts)) if pts else None
                lvl_reps = [ret_reps[condition_key(level, p)] for p in ps
                            if condition_key(level, p) in ret_reps]
                if lvl_reps:
                    metrics["intervals"][f"mean_retention_{level}"] = _ci_list(np.mean(lvl_reps, axis=0))
            metrics["retention_curve"] = retention
            metrics["relative_drop_curve"] = drops
            notes.append(f"retention(p) = (s_p − worst)/(s_0 − worst) with worst = {worst:g} (the base's "
                         f"anchor); value = mean cascade retention over p ∈ {set(ps)}; intervals "
                         "resample base items jointly across conditions")
            if metrics["clean_normalised"] < CHANCE_NORMALISED:
                return self._result_not_computed("model at chance on clean items", direction, n, n_invalid,
                                                 metrics, notes, clean)
            # A clean score whose interval reaches the chance anchor makes the ratio explode (the denominator
            # s_0 - worst may be ~0 in some replicates): not computed, and the notes say how close it is.
            clean_ci = metrics["intervals"]["clean"]
            if clean_ci is not None:
                near = min(clean_ci, key=lambda b: abs(b - worst))
                margin = (near - worst) * (1.0 if best >= worst else -1.0)
                metrics["clean_ci_margin_to_chance"] = margin
                notes.append(f"clean score {s0:.3f} is {abs(s0 - worst):.3f} from the chance anchor {worst:g} "
                             f"({metrics['clean_normalised']:.3f} of the way to {best:g}); its 95% interval "
                             f"[{clean_ci[0]:.3f}, {clean_ci[1]:.3f}] "
                             + (f"stays {margin:.3f} clear of it" if margin > 0 else "reaches it"))
                if margin <= 0:
                    return self._result_not_computed(
                        f"clean score's 95% interval [{clean_ci[0]:.3f}, {clean_ci[1]:.3f}] reaches the chance "
                        f"anchor {worst:g}: retention would divide by a difference that may be 0",
                        direction, n, n_invalid, metrics, notes, clean)
            value = metrics[f"mean_retention_{CASCADE}"]
            if value is None:
                return self._result_not_computed("no cascade condition computed", direction, n, n_invalid,
                                                 metrics, notes, clean)
            if value > RETENTION_CEILING:
                # The perturbed replies scored above the clean ones: a ratio past its ceiling is noise around a
                # clean score near the scale's floor, not robustness; clipped to 1 it would read as perfect.
                return self._result_not_computed(
                    f"floor effect: mean cascade retention {value:.2f} is above {RETENTION_CEILING:g} (perturbed "
                    f"replies scored above the clean score {s0:.3f}, {metrics['clean_normalised']:.3f} of the way "
                    f"from the floor {worst:g} to {best:g}): not a measure of robustness", direction, n, n_invalid,
                    metrics, notes, clean)
            cascade_reps = [ret_reps[condition_key(CASCADE, p)] for p in ps
                            if condition_key(CASCADE, p) in ret_reps]
            ci = percentile_ci(np.mean(cascade_reps, axis=0))
        return SubtaskResult(value=value, ci=ci, n=n, n_invalid=n_invalid, direction=direction, metrics=metrics,
                             method=clean.method, judge=clean.judge, notes=notes)

    @staticmethod
    def _result_not_computed(reason: str, direction: Direction, n: int, n_invalid: int, metrics: dict[str, Any],
                             notes: list[str], clean: SubtaskResult) -> SubtaskResult:
        res = SubtaskResult.not_computed(reason, direction, n=n, n_invalid=n_invalid, metrics=metrics,
                                         notes=notes)
        res.method, res.judge = clean.method, clean.judge
        return res
