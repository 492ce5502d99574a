"""MentalBench's judge side (docs/pillars/mentalbench.md#mentalbench): the ensemble members and repeats of a
run, the text a judge sees of a response, and the judge's reply read as per-attribute ratings (both parsers,
docs/pillars/mentalbench.md#judge-parsing). The sub-task is `trustmh.pillars.mentalbench.generation`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from trustmh.core import (
    Item,
    Mode,
    Record,
    RunContext,
    TrustmhError,
)
from trustmh.judges.schema import json_object_schema
from trustmh.pillars.mentalbench.ratings import ATTRIBUTES, STATUSES, VALID_CODES, robust_parse, strict_parse
from trustmh.pillars.mentalbench.sources import (
    MODEL_SOURCE,
    Split,
    split_reasoning,
)

GEN_STATUSES = ("ok", "truncated", "reasoning_only", "empty", "error")


# ==========================================================================================================
# Options, judges, views of a response
# ==========================================================================================================

def option_int(ctx: RunContext, key: str, default: int, lo: int = 1) -> int:
    v = ctx.options.get(key, default)
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise TrustmhError(f"mentalbench: option {key}={v!r} must be an integer") from None
    if n < lo:
        raise TrustmhError(f"mentalbench: option {key}={v!r} must be >= {lo}")
    return n


def judge_members(ctx: RunContext) -> list[tuple[str, str | None]]:
    """(label, model) per ensemble member (`--judge` repeated), else the run's judge (model None = the
    Inspect grader role)."""
    judges = ctx.judges
    if len(judges) > 1:
        if len(set(judges)) != len(judges):
            raise TrustmhError(f"mentalbench: a judge is listed twice in {judges}")
        return [(j, j) for j in judges]
    return [(str(ctx.judge.model) if ctx.judge.model else "judge", None)]


def judge_repeats(ctx: RunContext) -> int:
    return option_int(ctx, "judge_repeats", 1)


def request_name(label: str, k: int, repeats: int) -> str:
    return label if repeats == 1 else f"{label}@{k}"


def model_label(ctx: RunContext, records: Sequence[Record] = ()) -> str:
    if ctx.model:
        return ctx.model
    for r in records:
        if r.metadata.get("model_reported"):
            return str(r.metadata["model_reported"])
    return MODEL_SOURCE


def response_view(item: Item, response: str, ctx: RunContext) -> tuple[str | None, Split, bool]:
    """(text the judge sees or None = not judged, reasoning split, placeholder) for an item's response.

    Model replies: only the visible text. Published replies (`fixed_response`): in default mode the same;
    in faithful mode the published text as it is (reasoning leaks included) and a missing reply as the
    text `nan`, as the original pipeline judged them (docs/align.md#data-quality); `placeholder` marks that case.
    """
    if "fixed_response" not in item.metadata:
        split = split_reasoning(response)
        return (split.text or None), split, False
    raw = item.metadata["fixed_response"]
    split = split_reasoning(raw or "")
    if ctx.mode == "faithful" and not ctx.flag("faithful_clean_published"):
        if raw is None:
            return "nan", split, True
        return raw, split, False
    return (split.text or None), split, False


# ==========================================================================================================
# Judge output → per-attribute ratings
# ==========================================================================================================

def parse_judge(text: str | None) -> dict[str, Any]:
    """Both parsers (docs/pillars/mentalbench.md#judge-parsing): robust statuses/scores and the strict scores, per attribute."""
    rc = robust_parse(text)
    strict = strict_parse(text)
    return {
        "status": {a: STATUSES[s] for a, s in zip(ATTRIBUTES, rc.status, strict=True)},
        "robust": {a: (float(v) if s in VALID_CODES else None)
                   for a, s, v in zip(ATTRIBUTES, rc.status, rc.value, strict=True)},
        "raw": {a: (None if math.isnan(v) else float(v)) for a, v in zip(ATTRIBUTES, rc.value, strict=True)},
        "strict": {a: (None if math.isnan(v) else float(v)) for a, v in zip(ATTRIBUTES, strict, strict=True)},
    }


def no_response_rating() -> dict[str, Any]:
    none = dict.fromkeys(ATTRIBUTES)
    return {"status": dict.fromkeys(ATTRIBUTES, "no_response"), "robust": dict(none), "raw": dict(none),
            "strict": dict(none)}


def judge_schema(mode: Mode) -> dict[str, Any]:
    """What `judge_valid` accepts: the seven attributes 1-5; the faithful template's `Overall` (not scored)
    and the `Explanation` optional, last."""
    integers = {a: (1, 5) for a in ATTRIBUTES} | ({"Overall": (1, 5)} if mode == "faithful" else {})
    optional = ("Overall", "Explanation") if mode == "faithful" else ("Explanation",)
    return json_object_schema(integers=integers, strings=("Explanation",), optional=optional)


def judge_valid(text: str) -> bool:
    rc = robust_parse(text)
    return all(s in VALID_CODES for s in rc.status)


def rating_scores(rating: dict[str, Any], mode: str) -> dict[str, float | None]:
    """The per-attribute score a mode uses: faithful = the strict parser's value, default = the robust one.
    Either is used only where the attribute's status is `ok` or `recovered`: a 0, 6, 99, 2.5 or `true` (which
    the authors' strict parse would average) is left out, and counted under its status (`out_of_range`,
    `non_numeric`) in every report."""
    if mode != "faithful":
        return dict(rating["robust"])
    return {a: v if rating["robust"][a] is not None else None for a, v in rating["strict"].items()}


# ==========================================================================================================
# The sub-task
# ==========================================================================================================
