"""The human-norms view (docs/results.md#human-norms): each instrument's model figures drawn on the same axis
as the published human groups'.

* SIRI-2 (`clinical/siri2`): every run's total with its interval, the expert floor, the literature's human
  groups (grey dots) and its LLM chat tools (purple diamonds; each group's `kind` as the norms table declares
  it, `trustmh.pillars.clinical.norms`), on one 0-110 axis; lower is closer to the expert panel. A total past
  the axis (a total can pass 200: 48 replies, each up to about 5 points from the panel) is drawn at its edge
  with the value written.
* Stigma (`fairness/stigma`): per condition, every run's stigma rate with its interval beside the GSS 2018
  public's rate (grey), on one 0-1 axis.

Inline SVG from `report.svg` (every label escaped); a run without the sub-task's figures adds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.report.svg import GREY, RED, forest

PURPLE = "#6a3d9a"  # not in the runs' palette (report.layout.PALETTE)

SIRI2 = "clinical/siri2"
STIGMA = "fairness/stigma"
PUBLIC = "GSS 2018 public"
HUMAN = "published human group"
LLM = "published LLM result"
# a group's `kind` in the norms table -> its legend entry, colour and marker; an unknown kind is a human group
KINDS = {"human": (HUMAN, GREY), "chat tool": (LLM, PURPLE)}


def _ci(sub: Mapping[str, Any]) -> tuple[float | None, float | None]:
    ci = sub.get("ci") or [None, None]
    return ci[0], ci[1]


def run_name(label: str, n_runs: int) -> str:
    """A run's legend entry: "this run" on a single run's page, else its label."""
    return "this run" if n_runs == 1 else label


def siri2_view(runs: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str | None:
    """`runs`: (label, colour, results.json). None when no run has a SIRI-2 total."""
    rows: list[tuple[str, list[tuple[float | None, float | None, float | None, str, str]]]] = []
    norms: list[dict[str, Any]] = []
    floor = None
    for label, colour, results in runs:
        sub = (results.get("subtasks") or {}).get(SIRI2) or {}
        if sub.get("value") is None:
            continue
        lo, hi = _ci(sub)
        rows.append((label, [(sub["value"], lo, hi, colour, run_name(label, len(runs)))]))
        metrics = sub.get("metrics") or {}
        norms = norms or list(metrics.get("human_norms") or [])
        floor = floor if floor is not None else metrics.get("expert_floor")
    if not rows:
        return None
    if floor is not None:
        rows.append(("expert floor (panel SDs)", [(floor, None, None, RED, "expert floor")]))
    for g in norms:
        name, colour = KINDS.get(str(g.get("kind")), KINDS["human"])
        rows.append((f"{g['group']} ({g['source']})", [(g["total"], None, None, colour, name)]))
    return forest(rows, lo=0.0, hi=110.0, marks=(0.0, 20.0, 40.0, 60.0, 80.0, 100.0), width=820,
                  shapes={LLM: "diamond"},
                  title="SIRI-2 total: runs beside published human groups and LLM results (lower is better)")


def stigma_view(runs: Sequence[tuple[str, str, Mapping[str, Any]]]) -> str | None:
    rows: list[tuple[str, list[tuple[float | None, float | None, float | None, str, str]]]] = []
    public: Mapping[str, Any] = {}
    per_run = []
    for label, colour, results in runs:
        sub = (results.get("subtasks") or {}).get(STIGMA) or {}
        metrics = sub.get("metrics") or {}
        if sub.get("value") is None or not metrics.get("per_condition"):
            continue
        per_run.append((label, colour, metrics["per_condition"]))
        public = public or ((metrics.get("public_2018") or {}).get("per_condition") or {})
    if not per_run:
        return None
    conditions = list(per_run[0][2])
    for c in conditions:
        series: list[tuple[float | None, float | None, float | None, str, str]] = []
        for label, colour, per in per_run:
            fig = per.get(c) or {}
            ci = fig.get("ci") or [None, None]
            series.append((fig.get("rate"), ci[0], ci[1], colour, run_name(label, len(runs))))
        if public.get(c) is not None:
            series.append((public[c], None, None, GREY, PUBLIC))
        rows.append((c, series))
    return forest(rows, lo=0.0, hi=1.0, marks=(0.0, 0.25, 0.5, 0.75, 1.0), width=820,
                  title="Stigma rate per condition: models beside the GSS 2018 public (lower is better)")


def norms_views(runs: Sequence[tuple[str, str, Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """[(title, svg)] of the instruments any run has figures for."""
    out = []
    if (svg := siri2_view(runs)) is not None:
        out.append(("SIRI-2: suicide intervention judgment", svg))
    if (svg := stigma_view(runs)) is not None:
        out.append(("Stigma vignettes", svg))
    return out
