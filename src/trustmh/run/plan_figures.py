"""`trustmh plan`'s figures as typed objects: what `run/estimate.py` computes, what `run/outlook.py` adds (the gate
outlook, the items needed), what the budget check and the plain-text table read. plan.json is `PlanEstimate.
to_json()`, the one place that names its keys; every other module reads attributes.

`PlanSettings` (the estimate's assumptions) lives here too, so that the estimate and the outlook both stand on
this module and neither imports the other's types.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trustmh.core import Patient
from trustmh.discounts import SCENARIOS
from trustmh.judges.evidence import ASSUMED_AGREEMENT
from trustmh.models.batch import BatchMode
from trustmh.prices import Price
from trustmh.prompt_cache import PrefixShare
from trustmh.stats.clustered import ASSUMED_ICC

# What a reply is assumed to be, in tokens, when estimating (the upper bound always uses the caps). A typical
# chat answer of a few short paragraphs; a judge's JSON verdict with a one-sentence rationale; a simulated
# patient's chat message. `--expect-reply-tokens` replaces the first.
EXPECTED_TOKENS = {"model": 150, "judge": 80, "patient": 40, "proxy": 80}
# Assumed seconds per call when no `--latency` is given (a hosted model answering a few hundred tokens).
DEFAULT_LATENCY = 3.0
PRICE_UNKNOWN = "price unknown"  # plan.json's word for a cost that a missing price leaves open, never 0


@dataclass
class PlanSettings:
    """The estimate's assumptions and the outlook's questions (`estimate.plan_settings` builds them)."""

    prices: dict[str, Price] = field(default_factory=dict)
    expected: dict[str, int] = field(default_factory=lambda: dict(EXPECTED_TOKENS))  # reply tokens per role
    latency: float = DEFAULT_LATENCY  # seconds per call
    rate: float | None = None  # `--rate`: the rate assumed for widths and power (None: the check's limit or 0.5)
    target_width: float | None = None  # `--target-width`: items needed for this 95% interval width
    detect_difference: float | None = None  # `--detect-difference`: items needed to detect this difference
    pilot: str | Path | None = None  # `--pilot RUN_DIR`: per-item spread from a finished run
    # `--pilot`'s within-unit correlations per review unit (`certify.review_rounds.pilot_correlations`): read by the
    # caller, since the review's reading of a run sits a floor above the plan
    pilot_correlations: dict[str, float] = field(default_factory=dict)
    policy: str | Path | None = None  # `--policy FILE`: the gate policy (None: the default)
    batch: BatchMode | None = None  # the run's --batch (None: live; the plan still prices batch beside it)
    icc: float = ASSUMED_ICC  # `--icc`: within-stimulus correlation for the conversation checks' effective n
    # `--assume-agreement`: judge-human agreement for the labels a judged check needs (judges/evidence.py)
    assume_agreement: float = ASSUMED_AGREEMENT


@dataclass(frozen=True)
class MinMax:
    """A count or a time with no re-ask (min) and with every re-ask the run allows (max)."""

    min: float
    max: float

    def to_json(self) -> dict[str, float]:
        return {"min": self.min, "max": self.max}


@dataclass(frozen=True)
class ExpectedMax:
    """Tokens or a cost at the expected reply length (expected) and with every reply at its cap (max); a cost is
    None where a price is unknown."""

    expected: float | None
    max: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"expected": self.expected, "max": self.max}


@dataclass(frozen=True)
class CostScenarios:
    """The cost live, in batch mode, with prompt caching, and with both (`discounts.SCENARIOS`); for the run's
    totals a scenario is None when any model's price is unknown."""

    by_scenario: Mapping[str, ExpectedMax | None]

    @classmethod
    def of(cls, costs: Mapping[str, Mapping[str, float | None] | None]) -> CostScenarios:
        """From `discounts.scenario_costs` / `scenario_totals`."""
        return cls({s: None if (c := costs[s]) is None else ExpectedMax(c["expected"], c["max"]) for s in SCENARIOS})

    def __getitem__(self, scenario: str) -> ExpectedMax | None:
        return self.by_scenario[scenario]

    def to_json(self) -> dict[str, dict[str, float | None] | None]:
        return {s: None if v is None else v.to_json() for s, v in self.by_scenario.items()}


@dataclass(frozen=True)
class RoleEstimate:
    """What one role (model, judge, patient, proxy) of one sub-task is expected to do and cost."""

    role: str
    model: str
    samples: int
    calls: MinMax
    input_tokens: MinMax
    output_tokens: ExpectedMax
    tokenizer: str  # how its tokens are counted (`run.tokens.Tokenizer.note`)
    cost: ExpectedMax | None  # None: the model is not in the price file
    cost_scenarios: CostScenarios
    batched: bool  # its calls go through a batch in the run's batch mode

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "model": self.model, "samples": self.samples, "calls": self.calls.to_json(),
                "input_tokens": self.input_tokens.to_json(), "output_tokens": self.output_tokens.to_json(),
                "tokenizer": self.tokenizer, "cost": PRICE_UNKNOWN if self.cost is None else self.cost.to_json(),
                "cost_scenarios": self.cost_scenarios.to_json(), "batched": self.batched}


@dataclass(frozen=True)
class SubtaskEstimate:
    """One sub-task of the plan: its items, samples (items x epochs) and roles."""

    items: int
    samples: int
    roles: tuple[RoleEstimate, ...] = ()
    note: str | None = None  # why it makes no calls of its own (derived) or is not reported (hidden)

    def to_json(self) -> dict[str, Any]:
        return {"items": self.items, "samples": self.samples, "roles": [r.to_json() for r in self.roles],
                **({"note": self.note} if self.note is not None else {})}


@dataclass(frozen=True)
class CostTotals:
    """The run's cost: None where any model's price is unknown, beside the part that is known."""

    expected: float | None
    max: float | None
    known_part: ExpectedMax
    price_unknown: tuple[str, ...]  # the models the price file does not list
    basis: str = "live"  # the rates it is at: "batch" when the run is batched (--batch)

    def to_json(self) -> dict[str, Any]:
        return {"expected": self.expected, "max": self.max, "known_part": self.known_part.to_json(),
                "price_unknown": list(self.price_unknown), **({"basis": self.basis} if self.basis != "live" else {})}


@dataclass(frozen=True)
class Totals:
    """The whole run: calls, tokens, cost, the cost per discount scenario, and which rates fell back to live."""

    calls: MinMax
    input_tokens: MinMax
    output_tokens: ExpectedMax
    cost: CostTotals
    cost_scenarios: CostScenarios
    rate_fallbacks: dict[str, list[str]]  # model -> the rates its price lacks (priced at the live rate)
    cost_live: CostTotals | None = None  # with --batch: the live cost beside the batch headline

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls.to_json(), "input_tokens": self.input_tokens.to_json(),
                "output_tokens": self.output_tokens.to_json(), "cost": self.cost.to_json(),
                **({"cost_live": self.cost_live.to_json()} if self.cost_live is not None else {}),
                "cost_scenarios": self.cost_scenarios.to_json(), "rate_fallbacks": self.rate_fallbacks}


@dataclass(frozen=True)
class Assumptions:
    """What the estimate assumed (said in plan.json and results.json beside the figures)."""

    expected_output_tokens: dict[str, int]
    latency_seconds: float
    max_connections: int
    tokenizers: dict[str, str]  # model -> how its tokens are counted
    calls: str = "min: no re-ask and every judge reply valid; max: every re-ask the run allows"
    cost: str = ("expected: min calls at the expected reply length; max: max calls, every reply at its cap; "
                 "no provider prefix caching assumed (cost_scenarios: batch rates for the batched roles, "
                 "cached reads of each judge template's shared prefix after its first call)")

    def to_json(self) -> dict[str, Any]:
        return {"expected_output_tokens": self.expected_output_tokens, "latency_seconds": self.latency_seconds,
                "max_connections": self.max_connections, "tokenizers": self.tokenizers, "calls": self.calls,
                "cost": self.cost}


@dataclass(frozen=True)
class BatchOutlook:
    """Batch mode: whether the run uses it, what it batches, and the wall time with batch turnarounds."""

    on: bool
    conversations: bool
    size: int | None
    live_providers: tuple[str, ...]  # models whose provider has no batch API (they run live)
    batched_rounds: int  # batched calls in the longest chain of one sample
    wall_seconds: MinMax

    def to_json(self) -> dict[str, Any]:
        return {"on": self.on, "conversations": self.conversations, "size": self.size,
                "live_providers": list(self.live_providers), "batched_rounds": self.batched_rounds,
                "wall_seconds": self.wall_seconds.to_json()}


@dataclass(frozen=True)
class GateCheckOutlook:
    """One check of the gate policy: the items the run will score against min_n, and the width expected."""

    id: str
    subtask: str
    metric: str
    items: int
    min_n: int
    in_run: bool
    decidable: bool
    reason: str
    width: float | None
    width_basis: str
    # A check on a primary whose items share stimuli (conversation checks): the stimuli, the effective n at
    # the assumed within-stimulus correlation, and the certificate its judge needs (None: none usable yet).
    clusters: int | None = None
    effective_n: float | None = None
    icc_assumed: float | None = None
    certificate_path: str | None = None
    # With `--pilot`: the within-unit correlation its judged values showed, which the figures above are at, and
    # the figures at the assumed `icc_assumed` (docs/statistics.md#pilot-correlation).
    icc_measured: float | None = None
    at_assumed_icc: dict[str, Any] | None = None
    # Without a usable certificate: the two-rater labels of this run that decide it (`judges.evidence`).
    labels_needed: int | None = None
    labels_basis: dict[str, Any] | None = None
    # No conversation with this product can show it (a clock figure without a clock): the gate says not testable.
    not_testable: bool = False

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "subtask": self.subtask, "metric": self.metric, "items": self.items,
               "min_n": self.min_n, "in_run": self.in_run, "decidable": self.decidable, "reason": self.reason,
               "width": self.width, "width_basis": self.width_basis}
        if self.not_testable:
            out["not_testable"] = True
        if self.clusters is not None:
            out.update(clusters=self.clusters, effective_n=self.effective_n, icc_assumed=self.icc_assumed,
                       certificate_path=self.certificate_path)
            if self.icc_measured is not None:
                out.update(icc_measured=self.icc_measured, at_assumed_icc=self.at_assumed_icc)
        if self.labels_basis is not None:
            out.update(labels_needed=self.labels_needed, labels_basis=self.labels_basis)
        return out


@dataclass(frozen=True)
class GateOutlook:
    """What the gate will be able to decide (`outlook.gate_outlook`)."""

    policy: str  # the policy's version
    source: str
    checks: tuple[GateCheckOutlook, ...]

    def to_json(self) -> dict[str, Any]:
        return {"policy": self.policy, "source": self.source, "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True)
class ItemsNeeded:
    """Items needed for a target (a 95% interval width, or a difference at 80% power, two-sided alpha 0.05),
    capped by the items available."""

    target: float
    items_needed: int
    capped: bool
    items: int
    difference: bool = False  # the target is a difference to detect, not a width

    def to_json(self) -> dict[str, Any]:
        if self.difference:
            return {"difference": self.target, "items_needed": self.items_needed, "power": 0.8, "alpha": 0.05,
                    "capped": self.capped, "items": self.items}
        return {"width": self.target, "items_needed": self.items_needed, "capped": self.capped, "items": self.items}


@dataclass(frozen=True)
class PowerRow:
    """One sub-task's items needed for --target-width / --detect-difference (`outlook.power`)."""

    basis: str  # where the spread comes from (a pilot run or the stated rate)
    planned_items: int
    available_items: int | None  # None: the data is not on this machine
    target_width: ItemsNeeded | None = None
    detect_difference: ItemsNeeded | None = None

    def to_json(self) -> dict[str, Any]:
        return {"basis": self.basis, "planned_items": self.planned_items, "available_items": self.available_items,
                **({"target_width": self.target_width.to_json()} if self.target_width else {}),
                **({"detect_difference": self.detect_difference.to_json()} if self.detect_difference else {})}


@dataclass(frozen=True)
class BudgetOutlook:
    """`trustmh plan --budget`: whether `trustmh run` would start under it."""

    amount: float
    would_start: bool
    reason: str | None  # why it would refuse (None: within the budget)

    def to_json(self) -> dict[str, Any]:
        return {"amount": self.amount, "would_start": self.would_start, "reason": self.reason}


@dataclass(frozen=True)
class PlanEstimate:
    """The plan: per sub-task and role, the totals, the wall time, batch and prompt-cache figures, the gate
    outlook and, when asked, the items needed (plan.json is `to_json()`)."""

    model: str
    suite: str
    mode: str
    seed: int
    limit: int | None
    judges: tuple[str, ...]
    patient: Patient | None
    assumptions: Assumptions
    priced: bool  # a price file was given
    subtasks: dict[str, SubtaskEstimate]
    totals: Totals
    wall_seconds: MinMax
    batch: BatchOutlook
    prompt_cache: tuple[PrefixShare, ...]
    not_run: dict[str, str]  # sub-task -> why the run will not compute it
    gate: GateOutlook
    power: dict[str, PowerRow] | None = None  # with --target-width / --detect-difference
    budget: BudgetOutlook | None = None  # `trustmh plan --budget`
    # the judge calls of the anchor items (run/anchors.py), included in `totals` (docs/judge-probes.md#drift)
    # per judge model: {"calls": at least, "input_tokens": at least}
    anchor_calls_by_model: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def anchor_calls(self) -> int:
        return sum(m["calls"] for m in self.anchor_calls_by_model.values())

    @property
    def anchor_share(self) -> float:
        """The anchors' share of the run's calls (at least one attempt each)."""
        total = int(self.totals.calls.min)
        return self.anchor_calls / total if total else 0.0

    @property
    def bounding_cost(self) -> tuple[float | None, str]:
        """The upper cost a budget is held against and what it is: at batch rates when the run is batched."""
        return self.totals.cost.max, ("the plan's upper estimate at batch rates" if self.totals.cost.basis == "batch"
                                      else "the plan's upper estimate")

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model, "suite": self.suite, "mode": self.mode, "seed": self.seed, "limit": self.limit,
            "judges": list(self.judges), "patient": self.patient.to_json() if self.patient else None,
            "assumptions": self.assumptions.to_json(), "priced": self.priced,
            "subtasks": {sid: s.to_json() for sid, s in self.subtasks.items()}, "totals": self.totals.to_json(),
            "wall_seconds": self.wall_seconds.to_json(), "batch": self.batch.to_json(),
            "prompt_cache": [s.to_json() for s in self.prompt_cache], "not_run": self.not_run,
            "gate": self.gate.to_json(),
            **({"anchors": {"calls": self.anchor_calls, "share_of_calls": self.anchor_share,
                            "by_model": dict(self.anchor_calls_by_model)}} if self.anchor_calls else {}),
            **({"power": {sid: row.to_json() for sid, row in self.power.items()}} if self.power is not None else {}),
            **({"budget": self.budget.to_json()} if self.budget is not None else {}),
        }
