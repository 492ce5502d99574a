"""`trustmh plan`: what a run will ask, what it will cost and what it will be able to decide, before any model
call (docs/cost.md). Plain Python over the run's own plan (`trustmh.run.select.plan_run`).

For every sample of every sub-task the run's steps are replayed without a model: the prompts are rendered
exactly as the run renders them (the item's messages for the model under test, each judge request's prompt,
the simulated patient's messages), with a placeholder reply of the documented expected length standing in for
each model's answer. Counted per sub-task and role:

* calls: the minimum (no re-ask, every judge reply valid) and the maximum (every reply re-asked as often as
  the run allows: `-O reasks`, and MAX_ATTEMPTS per judge request);
* input tokens: the rendered prompts through a tokenizer (`Tokenizer`: tiktoken's encoding, exact for OpenAI
  models when the encoding is on this machine; otherwise an approximation, said as such);
* output tokens: bounded by each call's token cap, estimated at the expected length (EXPECTED_TOKENS);
* wall time at `--max-connections` and an assumed latency per call;
* cost from a user-supplied price file (`load_prices`): a model missing from it is "price unknown", never 0.

What the gate will be able to decide and the items needed for a width or a difference: `run/outlook.py`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trustmh.core import MAX_ATTEMPTS, Item, JudgeRequest, RunContext, Subtask, judge_tokens, max_reasks
from trustmh.discounts import (
    RoleTokens,
    batch_wall_time,
    batched,
    scenario_costs,
    scenario_totals,
)
from trustmh.judges.ensemble import fans_out
from trustmh.judges.reask import run_without_loop
from trustmh.models.batch import BatchMode, live_providers
from trustmh.models.providers import cache_minimum, provider_of
from trustmh.multiturn import ConversationSubtask, model_messages, read_system_prompt
from trustmh.prices import Price, cost
from trustmh.prompt_cache import PrefixShare, PrefixTracker
from trustmh.run.config import RunSpec
from trustmh.run.outlook import gate_outlook, planned_units, power
from trustmh.run.plan_figures import (
    EXPECTED_TOKENS,
    Assumptions,
    BatchOutlook,
    CostScenarios,
    CostTotals,
    ExpectedMax,
    MinMax,
    PlanEstimate,
    PlanSettings,
    RoleEstimate,
    SubtaskEstimate,
    Totals,
)
from trustmh.run.tokens import APPROXIMATE, Tokenizer, placeholder
from trustmh.steps import play_turns

if TYPE_CHECKING:  # the plan's module imports the Inspect glue, loaded only when a run is planned
    from trustmh.run.select import RunPlan

# Inspect's default connections per model when --max-connections is not given.
DEFAULT_CONNECTIONS = 10


# ------------------------------------------------------------------------------------------ the replay
@dataclass
class RoleTally:
    """What one role of one sub-task is expected to do."""

    role: str
    model: str
    samples: int = 0
    calls_min: int = 0
    calls_max: int = 0
    input_min: int = 0  # tokens of the calls made without any re-ask
    input_max: int = 0  # ... with every re-ask
    output_expected: int = 0
    output_max: int = 0  # every call at its cap, every re-ask made
    chain: int = 0  # the longest chain of calls one sample makes in this role (no re-asks)
    cached_read: int = 0  # input a prefix cache could read: a conversation turn's earlier turns
    cache_write: int = 0  # ... and the input it would write (explicit caches, e.g. Anthropic's)


class _Replay:
    def __init__(self, ctx: RunContext, expected: Mapping[str, int], tokenizers: dict[str, Tokenizer],
                 mode: BatchMode | None = None, conversation: bool = False) -> None:
        self.ctx = ctx
        self.expected = expected
        self.tokenizers = tokenizers
        self.tallies: dict[tuple[str, str], RoleTally] = {}
        self._seen: set[tuple[str, str, str]] = set()
        self.mode = mode or BatchMode()
        self.conversation = conversation
        self.batched_calls = 0  # calls batch mode would batch (for the wall time's batch rounds)
        self.prefixes: dict[tuple[str, str, str], PrefixTracker] = {}  # (role, model, template) -> prefix

    def tokenizer(self, model: str) -> Tokenizer:
        if model not in self.tokenizers:
            self.tokenizers[model] = Tokenizer(model)
        return self.tokenizers[model]

    def call(self, sample_key: str, role: str, model: str, messages: list[dict[str, str]], cap: int,
             expected: int, attempts: int = 1, reask_messages: list[list[dict[str, str]]] | None = None,
             template: str | None = None, cached_prefix: int = 0) -> int:
        """One call (and what its re-asks would add: `attempts` in all, `reask_messages` when they differ);
        `template`: the judge request's name, whose prompts' shared prefix a prompt cache could read;
        `cached_prefix`: the tokens of this call's prompt that an earlier call of the sample sent (a
        conversation's earlier turns), read from the cache when the provider's minimum allows. Returns the
        call's input tokens."""
        tally = self.tallies.setdefault((role, model), RoleTally(role=role, model=model))
        tok = self.tokenizer(model)
        n = tok.prompt_tokens(messages)
        minimum = cache_minimum(model)
        if cached_prefix and minimum is not None and cached_prefix >= minimum:
            tally.cached_read += cached_prefix
            if provider_of(model).explicit_cache:
                tally.cache_write += n - cached_prefix
        if template is not None:
            self.prefixes.setdefault((role, model, template), PrefixTracker()).add(
                str(messages[-1].get("content") or ""), n)
        if self.mode.batches(model, conversation=self.conversation and role in ("model", "patient")):
            self.batched_calls += 1
        tally.calls_min += 1
        tally.calls_max += attempts
        tally.input_min += n
        if reask_messages is not None:
            tally.input_max += n + sum(tok.prompt_tokens(m) for m in reask_messages)
        else:
            tally.input_max += n * attempts
        tally.output_expected += min(cap, expected)
        tally.output_max += cap * attempts
        if (sample_key, role, model) not in self._seen:
            self._seen.add((sample_key, role, model))
            tally.samples += 1
        return n


def template_of(request_name: str) -> str:
    """A conversation judge request's template: its name without the turn and the test-retest repeat
    ("turn3:crisis#2" -> "crisis"), so one template's prompts are measured together."""
    return re.sub(r"turn\d+:", "", request_name.split("#")[0])


def _judge_role(ctx: RunContext, req: JudgeRequest, member: str | None) -> tuple[str, str]:
    """(role, model) of a judge request: the run's judge (or the ensemble member), a judge the request names
    itself, or the privacy sub-task's proxy model."""
    if member is not None:
        return ("judge", member)
    if req.model is None:
        return ("judge", str(ctx.judge.model or "judge"))
    if req.model == ctx.options.get("privacy_proxy_model"):
        return ("proxy", req.model)
    return ("judge", req.model)


def replay_single(r: _Replay, subtask: Subtask, item: Item, epoch: int, model: str, cap: int) -> None:
    """The steps of `trustmh.run.tasks` (generate, re-ask, judge) for one sample, without a model."""
    ctx = r.ctx
    key = f"{item.id}#{epoch}"
    reply = placeholder(r.expected["model"])
    if not item.metadata.get("skip_generation"):
        messages = [{"role": t["role"], "content": t["content"]} for t in item.history or []]
        messages.append({"role": "user", "content": item.prompt})
        reasks = max_reasks(ctx.options) if subtask.format_reminder else 0
        more: list[list[dict[str, str]]] = []
        convo = list(messages)
        for _ in range(reasks):
            convo = [*convo, {"role": "assistant", "content": reply},
                     {"role": "user", "content": str(subtask.format_reminder)}]
            more.append(convo)
        r.call(key, "model", model, messages, cap, r.expected["model"], attempts=1 + reasks, reask_messages=more)
    else:
        reply = str(item.metadata.get("response") or item.metadata.get("answer") or reply)
    if not ctx.has_judge:
        return
    requests = subtask.judge_requests(item, reply, ctx)
    members: list[str | None] = list(ctx.judges) if fans_out(requests, ctx) else [None]
    for member in members:
        for req in requests:
            role, who = _judge_role(ctx, req, member)
            r.call(key, role, who, [{"role": "user", "content": req.prompt}], judge_tokens(req, ctx),
                   r.expected[role], attempts=MAX_ATTEMPTS, template=req.name)


def replay_conversation(r: _Replay, subtask: ConversationSubtask, item: Item, epoch: int, model: str, cap: int) -> None:
    """The steps of `trustmh.run.conversation` for one sample: the run's own turn loop (`steps.play_turns`)
    with placeholder lines and replies counted instead of asked, then the judges."""
    # start-up: the Inspect glue's constants, imported only when a conversation is planned
    from trustmh.run.conversation import PATIENT_MAX_TOKENS, STARTER_PATIENT_MAX_TOKENS

    ctx = r.ctx
    key = f"{item.id}#{epoch}"
    system = read_system_prompt(ctx)
    patient = ctx.patient.label if ctx.patient else "patient"
    patient_cap = STARTER_PATIENT_MAX_TOKENS if ctx.suite == "starter" else PATIENT_MAX_TOKENS
    sent = {"patient": 0, "model": 0}  # each role's previous prompt in this conversation: its cacheable prefix

    # the placeholders are never empty, so each is asked once (attempt 1): the plan's minimum
    async def ask_patient(messages: list[dict[str, str]], attempt: int) -> tuple[str, str]:
        sent["patient"] = r.call(key, "patient", patient, list(messages), patient_cap, r.expected["patient"],
                                 cached_prefix=sent["patient"])
        return placeholder(min(patient_cap, r.expected["patient"])), patient

    async def ask_reply(turns: list[dict[str, Any]], elapsed_seconds: float | None, attempt: int) -> str:
        sent["model"] = r.call(key, "model", model, model_messages(turns, system), cap, r.expected["model"],
                               cached_prefix=sent["model"])
        return placeholder(min(cap, r.expected["model"]))

    turns = run_without_loop(play_turns(subtask, item, ctx, ask_patient, ask_reply, model_name=model))
    if ctx.has_judge:  # the requests already carry their test-retest repeats ("name#2")
        for req in subtask.conversation_judge_requests(item, turns, ctx):
            r.call(key, "judge", str(ctx.judges[0] if ctx.judges else ctx.judge.model),
                   [{"role": "user", "content": req.prompt}], judge_tokens(req, ctx), r.expected["judge"],
                   attempts=MAX_ATTEMPTS, template=template_of(req.name))


def plan_settings(spec: RunSpec, rate: float | None = None, target_width: float | None = None,
                  detect_difference: float | None = None, pilot: str | Path | None = None,
                  policy: str | Path | None = None, icc: float | None = None,
                  assume_agreement: float | None = None,
                  pilot_correlations: dict[str, float] | None = None) -> PlanSettings:
    """The estimate's assumptions from a RunSpec (prices, expected reply length, latency) and the outlook's
    questions (`trustmh plan`'s --rate, --target-width, --detect-difference, --pilot, --policy)."""
    expected = dict(EXPECTED_TOKENS)
    if spec.cost.expect_reply_tokens:
        expected["model"] = int(spec.cost.expect_reply_tokens)
    settings = PlanSettings(prices=dict(spec.cost.prices), expected=expected, rate=rate, target_width=target_width,
                            detect_difference=detect_difference, pilot=pilot, policy=policy,
                            pilot_correlations=dict(pilot_correlations or {}))
    if icc is not None:
        settings.icc = float(icc)
    if assume_agreement is not None:
        settings.assume_agreement = float(assume_agreement)
    if spec.execution.batch is not None:
        settings.batch = BatchMode(size=spec.execution.batch or None, conversations=spec.execution.batch_conversations)
    if spec.cost.latency:
        settings.latency = float(spec.cost.latency)
    return settings


def estimate(plan: RunPlan, settings: PlanSettings) -> PlanEstimate:
    """The plan's figures (plan.json is their `to_json()`)."""
    # start-up: the Inspect glue (it imports Inspect), loaded only when a plan is estimated
    from trustmh.run.calls import ITEM_KEY
    from trustmh.run.tasks import ANCHORS_OF, task_key

    ctx: RunContext = plan.ctx
    spec = plan.spec
    model = spec.model.label
    tokenizers: dict[str, Tokenizer] = {}
    subtasks: dict[str, SubtaskEstimate] = {}
    all_tallies: list[tuple[str, RoleTally]] = []
    items_per: dict[str, int] = {}
    # items the primary is over (a missed-crisis rate: risk conversations); "<sid>:<metric>": a counted rate's
    primary_per: dict[str, int] = {}
    stimuli_per: dict[str, list[int]] = {}  # conversations per stimulus of the primary (its design effect)
    samples_per: dict[str, int] = {}
    chain = 0
    # the batch figures: this run's batch mode, or what --batch would batch (priced side by side either way)
    mode = settings.batch or BatchMode(conversations=False)
    batched_rounds = 0
    discounted: list[tuple[RoleTokens, dict[str, Any]]] = []
    shares: list[PrefixShare] = []
    anchor_calls: dict[str, dict[str, int]] = {}
    for task in plan.tasks:
        watched = (task.metadata or {}).get(ANCHORS_OF)
        if watched is not None:  # a judged sub-task's anchor items (run/anchors.py): its judge's calls only
            r = _Replay(ctx, settings.expected, tokenizers, mode, False)
            for sample in task.dataset:
                replay_single(r, plan.subtasks[watched], Item(**sample.metadata[ITEM_KEY]), 1, model, 0)
            for t in r.tallies.values():
                all_tallies.append((task_key(task.metadata), t))
                seen = anchor_calls.setdefault(t.model, {"calls": 0, "input_tokens": 0})
                seen["calls"], seen["input_tokens"] = seen["calls"] + t.calls_min, seen["input_tokens"] + t.input_min
                tokens = RoleTokens(t.role, t.model, False, t.input_min, t.input_max, t.output_expected,
                                    t.output_max, t.cached_read, t.cache_write, t.calls_min, t.calls_max)  # all scenarios
                discounted.append((tokens, scenario_costs(tokens, settings.prices.get(t.model), mode)))
            continue
        sid = (task.metadata or {}).get("trustmh_subtask")
        subtask = plan.subtasks[sid]
        r = _Replay(ctx, settings.expected, tokenizers, mode, isinstance(subtask, ConversationSubtask))
        cap = int(plan.generation[sid]["max_tokens"])
        epochs = int(plan.generation[sid]["samples"])
        n_items = 0
        planned: list[Item] = []
        for sample in task.dataset:
            item = Item(**sample.metadata[ITEM_KEY])
            planned.append(item)
            n_items += 1
            for epoch in range(1, epochs + 1):
                before, batched_before = sum(t.calls_min for t in r.tallies.values()), r.batched_calls
                if isinstance(subtask, ConversationSubtask):
                    replay_conversation(r, subtask, item, epoch, model, cap)
                else:
                    replay_single(r, subtask, item, epoch, model, cap)
                chain = max(chain, sum(t.calls_min for t in r.tallies.values()) - before)
                batched_rounds = max(batched_rounds, r.batched_calls - batched_before)
        items_per[sid] = n_items
        units, sizes = planned_units(sid, subtask, planned)
        primary_per.update(units)
        stimuli_per.update(sizes)
        samples_per[sid] = n_items * epochs
        all_tallies.extend((sid, t) for t in r.tallies.values())
        sub_shares = [tracker.share(f"{sid}:{template}", who, r.tokenizer(who).count)
                      for (role, who, template), tracker in r.prefixes.items()]
        shares.extend(sub_shares)
        roles = []
        for t in r.tallies.values():
            mine = [x for x, key in zip(sub_shares, r.prefixes, strict=True) if key[:2] == (t.role, t.model)]
            tokens = RoleTokens(t.role, t.model, isinstance(subtask, ConversationSubtask), t.input_min,
                                t.input_max, t.output_expected, t.output_max,
                                t.cached_read + sum(x.cached_read for x in mine),
                                t.cache_write + sum(x.cache_write for x in mine), t.calls_min, t.calls_max)
            scenarios = scenario_costs(tokens, settings.prices.get(t.model), mode)
            roles.append(_role_estimate(t, settings.prices, tokenizers, CostScenarios.of(scenarios),
                                        batched(tokens, mode)))
            discounted.append((tokens, scenarios))
        subtasks[sid] = SubtaskEstimate(items=n_items, samples=n_items * epochs, roles=tuple(roles))
    for sid in plan.hidden:
        if sid in subtasks:
            subtasks[sid] = replace(subtasks[sid], note="run only for a derived sub-task")
    for sid, derived in plan.derived.items():
        if sid not in subtasks:
            subtasks[sid] = SubtaskEstimate(items=items_per.get(derived.derived_from or "", 0), samples=0,
                                            note=f"scored from the calls of {derived.derived_from}")
    totals = _totals(all_tallies, settings.prices, CostScenarios.of(scenario_totals(discounted)),
                     [costs["batch"] for _, costs in discounted] if settings.batch is not None else None)
    connections = spec.execution.max_connections or DEFAULT_CONNECTIONS
    wall = wall_time(int(totals.calls.min), int(totals.calls.max), chain, connections, settings.latency)
    models = sorted({t.model for _, t in all_tallies})
    asks_power = settings.target_width is not None or settings.detect_difference is not None
    return PlanEstimate(
        model=model, suite=spec.suite, mode=ctx.mode, seed=ctx.seed, limit=ctx.limit, judges=tuple(ctx.judges),
        patient=spec.patient,
        assumptions=Assumptions(expected_output_tokens=settings.expected, latency_seconds=settings.latency,
                                max_connections=connections,
                                tokenizers={m: t.note for m, t in sorted(tokenizers.items())}),
        priced=bool(settings.prices), subtasks=subtasks, totals=totals, wall_seconds=MinMax(**wall),
        batch=BatchOutlook(on=settings.batch is not None, conversations=mode.conversations, size=mode.size,
                           live_providers=tuple(live_providers(models)), batched_rounds=batched_rounds,
                           wall_seconds=MinMax(**batch_wall_time(wall, batched_rounds))),
        prompt_cache=tuple(shares), anchor_calls_by_model=anchor_calls,
        not_run={sid: res.reason for sid, res in plan.results.items()},
        gate=gate_outlook(samples_per, items_per, settings, ctx, primary_per, stimuli_per),
        power=power(plan, items_per, settings) if asks_power else None)


def _role_estimate(t: RoleTally, prices: Mapping[str, Price], tokenizers: Mapping[str, Tokenizer],
                   scenarios: CostScenarios, is_batched: bool) -> RoleEstimate:
    price = prices.get(t.model)
    return RoleEstimate(
        role=t.role, model=t.model, samples=t.samples, calls=MinMax(t.calls_min, t.calls_max),
        input_tokens=MinMax(t.input_min, t.input_max), output_tokens=ExpectedMax(t.output_expected, t.output_max),
        tokenizer=tokenizers[t.model].note if t.model in tokenizers else APPROXIMATE,
        cost=ExpectedMax(cost(price, t.input_min, t.output_expected, calls=t.calls_min),
                         cost(price, t.input_max, t.output_max, calls=t.calls_max)) if price else None,
        cost_scenarios=scenarios, batched=is_batched)


def _totals(tallies: Sequence[tuple[str, RoleTally]], prices: Mapping[str, Price],
            scenarios: CostScenarios, batch_costs: Sequence[Mapping[str, float | None]] | None = None) -> Totals:
    """The run's totals; with --batch (`batch_costs`: each tally's batch-scenario cost) the headline cost is the
    batch one and the live one stands beside it, so the figure a user reads is the run they asked for."""
    unknown = sorted({t.model for _, t in tallies if t.model not in prices})
    exp = sum(cost(prices[t.model], t.input_min, t.output_expected, calls=t.calls_min) or 0 for _, t in tallies if t.model in prices)
    top = sum(cost(prices[t.model], t.input_max, t.output_max, calls=t.calls_max) or 0 for _, t in tallies if t.model in prices)
    known = bool(tallies) and not unknown
    used = {t.model for _, t in tallies}
    live = CostTotals(expected=exp if known else None, max=top if known else None,
                      known_part=ExpectedMax(exp, top), price_unknown=tuple(unknown))
    headline = live
    if batch_costs is not None:
        b_exp = sum(c["expected"] or 0 for c in batch_costs)
        b_top = sum(c["max"] or 0 for c in batch_costs)
        headline = CostTotals(expected=b_exp if known else None, max=b_top if known else None,
                              known_part=ExpectedMax(b_exp, b_top), price_unknown=tuple(unknown), basis="batch")
    return Totals(
        calls=MinMax(sum(t.calls_min for _, t in tallies), sum(t.calls_max for _, t in tallies)),
        input_tokens=MinMax(sum(t.input_min for _, t in tallies), sum(t.input_max for _, t in tallies)),
        output_tokens=ExpectedMax(sum(t.output_expected for _, t in tallies), sum(t.output_max for _, t in tallies)),
        cost=headline, cost_live=live if batch_costs is not None else None,
        cost_scenarios=scenarios,
        rate_fallbacks={m: p.fallbacks() for m, p in sorted(prices.items()) if m in used and p.fallbacks()})


def wall_time(calls_min: int, calls_max: int, chain: int, connections: int, latency: float) -> dict[str, float]:
    """Seconds: the calls spread over the connections, never less than one sample's chain of calls."""
    return {"min": max(chain, math.ceil(calls_min / connections)) * latency,
            "max": max(chain, math.ceil(calls_max / connections)) * latency}


def to_json(data: PlanEstimate) -> str:
    """plan.json's text."""
    return json.dumps(data.to_json(), indent=2, default=str) + "\n"
