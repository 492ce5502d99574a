"""Judge ensembles for every judged sub-task (docs/judges.md#ensembles). Plain Python, no Inspect.

Each judge request of a reply goes to every member (`--judge` repeated); each member's raw outputs are scored
by the sub-task's own `score`, and the member scores are combined key by key into the one score dict the
sub-task's `aggregate` reads, so no sub-task needs to know it is being judged by an ensemble:

* integer and real scores: `vote` (the median rounded half up: it keeps every score a valid level of its
  scale, so rate and level comparisons in the aggregates stay meaningful), `median` or `mean`
  (`-O ensemble=…`, read once into `RunContext.ensemble`). Without it the sub-task's declared rule applies
  (`Subtask.ensemble_rule`: `vote` unless it says otherwise; MentalBench, whose attribute scores are
  averaged, declares `mean`); `RunContext.ensemble_rule` gives a sub-task's rule;
* booleans and labels: the majority; a tie goes to the first-listed judge (deterministic, stated);
* anything else (lists, objects, free text): the first valid member's value.

Only members whose judge output was valid take part (`judge_valid`, else `valid`); fewer than `min_valid`
(`-O min_valid=N`, default every member) marks the combined score invalid, so it is counted, never scored.
The members' own scores stay in the record (`score["members"]`) for the agreement figures.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np

from trustmh.core import (
    ENSEMBLE_RULES,
    EnsembleRule,
    Item,
    JudgeRequest,
    RunContext,
    Subtask,
    TrustmhError,
    truthy,
)
from trustmh.stats.agreement import krippendorff_alpha

AGGREGATORS = ENSEMBLE_RULES
DEFAULT_RULE: EnsembleRule = Subtask.ensemble_rule
MEMBERS_KEY = "members"
# Keys that describe the model's reply or the bookkeeping, never a judge's opinion.
_NOT_JUDGED = {"valid", "judge_valid", "correct", "epoch", MEMBERS_KEY, "n_judges_valid"}


def ensemble_option(options: Mapping[str, Any]) -> EnsembleRule | None:
    """The run's ensemble rule from `-O ensemble=…` (None when not given), checked: read once, where a run,
    a certification or a rescoring builds its context (`RunContext.ensemble`)."""
    value = options.get("ensemble")
    if value is None:
        return None
    for rule in AGGREGATORS:
        if str(value) == rule:
            return rule
    raise TrustmhError(f"-O ensemble={value!r}: use vote, median or mean")


def ensemble_settings(ctx: RunContext, subtask: Subtask | type[Subtask] | None, n_members: int
                      ) -> tuple[EnsembleRule, int]:
    """(aggregator, min_valid) of `subtask`'s ensemble: the context's rule for it (`RunContext.ensemble_rule`)
    and `-O min_valid=N` (default every member), checked."""
    aggregator = ctx.ensemble_rule(subtask)
    raw = ctx.options.get("min_valid", n_members)
    try:
        min_valid = int(raw)
    except (TypeError, ValueError):
        raise TrustmhError(f"-O min_valid={raw!r} must be a whole number") from None
    if not 1 <= min_valid <= n_members:
        raise TrustmhError(f"-O min_valid={min_valid} must be between 1 and the {n_members} judges")
    return aggregator, min_valid


def _judge_valid(score: Mapping[str, Any]) -> bool:
    if "judge_valid" in score:
        return truthy(score["judge_valid"])
    return truthy(score.get("valid", True))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and not (isinstance(v, float) and math.isnan(v))


def _majority(values: Sequence[Any]) -> Any:
    counts = Counter(values)
    top = max(counts.values())
    return next(v for v in values if counts[v] == top)  # first-listed among the tied


def combine_numbers(values: Sequence[float], aggregator: str) -> float:
    """One number from the members' numbers: their mean, median, or median rounded half up (`vote`)."""
    if aggregator == "mean":
        return float(np.mean(values))
    med = float(np.median(values))
    return med if aggregator == "median" else float(math.floor(med + 0.5))


def combine(values: Sequence[float | None], aggregator: str = DEFAULT_RULE,
            min_valid: int | None = None) -> tuple[float | None, str]:
    """(ensemble score, status) of one scale score from the members' scores (None/NaN = no valid score):
    fewer than `min_valid` valid members (default: every member) gives (None, "ensemble_incomplete")."""
    if aggregator not in AGGREGATORS:
        raise TrustmhError(f"ensemble aggregator must be one of {', '.join(AGGREGATORS)}, not {aggregator!r}")
    need = len(values) if min_valid is None else int(min_valid)
    valid = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not valid or len(valid) < need:
        return None, "ensemble_incomplete"
    return combine_numbers(valid, aggregator), "ok"


def _combine_scores(values: Sequence[float], aggregator: str) -> float:
    combined = combine_numbers(values, aggregator)
    # a vote over whole-number levels is a level of the same scale
    whole = aggregator == "vote" and all(float(v).is_integer() for v in values)
    return int(combined) if whole else combined


def combine_member_scores(scores: Mapping[str, Mapping[str, Any]], aggregator: str = "vote",
                          min_valid: int | None = None) -> dict[str, Any]:
    """One score dict from the members' score dicts (member name → the sub-task's score of its outputs)."""
    names = list(scores)
    if not names:
        raise ValueError("combine_member_scores: no members")
    need = len(names) if min_valid is None else min_valid
    valid = [n for n in names if _judge_valid(scores[n])]
    voters = valid or names
    out: dict[str, Any] = {}
    for key in scores[names[0]]:
        values = [scores[n].get(key) for n in voters]
        present = [v for v in values if v is not None]
        if not present:
            out[key] = None
        elif all(isinstance(v, bool) for v in present) or all(isinstance(v, str) for v in present):
            out[key] = _majority(present)
        elif all(_is_number(v) for v in present):
            out[key] = _combine_scores(present, aggregator)
        else:
            out[key] = present[0]
    # the key that carries the judge's validity: `judge_valid` where the sub-task has it, else `valid`
    first = scores[names[0]]
    vkey = "judge_valid" if "judge_valid" in first else ("valid" if "valid" in first else None)
    if vkey is not None:
        out[vkey] = len(valid) >= need
    out["n_judges_valid"] = len(valid)
    out[MEMBERS_KEY] = {n: dict(scores[n]) for n in names}
    return out


def member_agreement(member_scores: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """Agreement among ensemble members over the judged units (one `score["members"]` per unit).

    Per judged key (scalar values the members gave): Krippendorff's α (ordinal over the observed levels
    for numbers, nominal for booleans and labels), the number of units with at least two ratings, and the
    pairwise ICC(A,1) for numbers. Keys on which every member always agrees report α as None with
    `"identical": true` (α is undefined without variation). Fewer than 2 members → {}.
    """

    # imported here, not at the top: stats.icc loads scipy.stats (about 2 s of CPU), which
    # planning and calling the models never need (start-up)
    from trustmh.stats.icc import icc_a1

    if not member_scores:
        return {}
    names = list(member_scores[0])
    if len(names) < 2:
        return {}
    keys = [k for k in member_scores[0][names[0]] if k not in _NOT_JUDGED]
    out: dict[str, Any] = {}
    for key in keys:
        rows = [[unit.get(n, {}).get(key) if _judge_valid(unit.get(n, {})) else None for n in names]
                for unit in member_scores]
        flat = [v for row in rows for v in row if v is not None]
        if not flat or not all(isinstance(v, bool | str) or _is_number(v) for v in flat):
            continue
        numeric = all(_is_number(v) for v in flat)
        levels = sorted(set(flat), key=lambda v: (str(type(v)), v))
        code = {v: float(i) for i, v in enumerate(levels)}
        data = np.array([[np.nan if v is None else (float(v) if numeric else code[v]) for v in row]
                         for row in rows]).T  # (members, units)
        n_units = int((np.isfinite(data).sum(axis=0) >= 2).sum())
        cell: dict[str, Any] = {"level": "ordinal" if numeric else "nominal", "n_units": n_units}
        if len(levels) < 2:
            cell.update(alpha=None, identical=True)
        elif n_units == 0:
            cell.update(alpha=None, identical=False)
        else:
            domain = levels if numeric else list(code.values())
            a = krippendorff_alpha(data, cell["level"], value_domain=[float(v) for v in domain])
            cell.update(alpha=None if math.isnan(a) else float(a), identical=False)
        if numeric:
            pairs: dict[str, float | None] = {}
            for i, j in combinations(range(len(names)), 2):
                keep = np.isfinite(data[i]) & np.isfinite(data[j])
                v = float(icc_a1(np.column_stack([data[i][keep], data[j][keep]]))) if keep.sum() >= 2 else math.nan
                pairs[f"{names[i]}|{names[j]}"] = None if math.isnan(v) else v
            cell["icc_a1"] = pairs
        out[key] = cell
    return out


def judged_score(subtask: Subtask, item: Item, response: str,
                 outputs_by_member: dict[str, dict[str, str]] | None, ctx: RunContext
                 ) -> tuple[dict[str, Any], dict[str, str]]:
    """(score, judge_raw) of one reply from the judges' raw outputs (member → request name → text).

    One judge: the sub-task's own score of its outputs, judge_raw as the judge wrote it. An ensemble: each
    member's outputs scored, then combined key by key (this module); judge_raw keys are
    `<request>@<member>`. No judge: the sub-task's score without judge outputs (its rule fallback)."""
    if outputs_by_member is None:
        return subtask.score(item, response, None, ctx), {}
    if len(outputs_by_member) == 1:
        outputs = next(iter(outputs_by_member.values()))
        return subtask.score(item, response, outputs, ctx), dict(outputs)
    aggregator, min_valid = ensemble_settings(ctx, subtask, len(outputs_by_member))
    scores = {m: subtask.score(item, response, out, ctx) for m, out in outputs_by_member.items()}
    raw = {f"{name}@{m}": text for m, out in outputs_by_member.items() for name, text in out.items()}
    return combine_member_scores(scores, aggregator, min_valid), raw


def fans_out(requests: Sequence[JudgeRequest], ctx: RunContext) -> bool:
    """Whether the run's ensemble judges each request (a sub-task that names its judges, such as MentalBench,
    runs its own ensemble)."""
    return len(ctx.judges) > 1 and all(req.model is None for req in requests)
