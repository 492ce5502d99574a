"""Inspect glue: one generic Task built from any `trustmh.core.Subtask`. Thin by design.

The steps mirror `trustmh.core.run_offline` exactly (generate → up to two re-asks on unparseable replies →
judge calls in the `grader` role (and `grader_2`… for an ensemble) at temperature 0, seeded and bounded by
the run's timeout/retries, up to three attempts each → plain `Subtask.score`, combined across an ensemble),
so a live run and a rescore of imported outputs are scored by the same code.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    CachePolicy,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import JSONSchema

from trustmh.catalogue import BY_ID, get_subtask
from trustmh.core import (
    MAX_ATTEMPTS,
    Item,
    JudgeRequest,
    Record,
    RunContext,
    Subtask,
    TrustmhError,
    fans_out,
    judged_score,
    make_record,
    max_reasks,
)

ITEM_KEY = "trustmh_item"
DISPLAY_N_BOOT = 20
SCORER_NAME = "trustmh_scorer"


def item_to_sample(item: Item) -> Sample:
    messages: list[Any] = []
    for turn in item.history or []:
        cls = ChatMessageAssistant if turn["role"] == "assistant" else ChatMessageUser
        messages.append(cls(content=turn["content"]))
    messages.append(ChatMessageUser(content=item.prompt))
    return Sample(id=item.id, input=messages, target=target_text(item.target), metadata={ITEM_KEY: asdict(item)})


def target_text(target: Any) -> str:
    """The gold answer as Inspect View shows it (TARGET); "" where the sub-task has none (judged replies)."""
    if target is None:
        return ""
    return target if isinstance(target, str) else json.dumps(target, ensure_ascii=False)


# Where sub-tasks keep the answer they read from a reply, in order of preference (Inspect View's ANSWER).
ANSWER_KEYS = ("parsed", "pred", "choice", "label", "level", "rating", "verdict", "list")


def answer_text(score: dict[str, Any]) -> str:
    for key in ANSWER_KEYS:
        if score.get(key) is not None:
            value = score[key]
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "" if score.get("valid", True) else "(invalid: no answer could be read)"


def explanation_text(score: dict[str, Any], judge_raw: dict[str, str]) -> str:
    """Why the sample scored as it did: the judge's rationale or its raw reply, else the rule."""
    for key in ("rationale", "explanation"):
        if isinstance(score.get(key), str) and score[key]:
            return score[key]
    if judge_raw:
        return "\n\n".join(f"[{name}] {text}" for name, text in judge_raw.items())
    return "scored by rule"


def item_from_metadata(metadata: dict[str, Any]) -> Item:
    return Item(**metadata[ITEM_KEY])


@solver
def generate_with_reask(subtask: Subtask, ctx: RunContext) -> Solver:
    """Generate; while the reply does not parse, ask again with the sub-task's format reminder (up to
    MAX_ATTEMPTS in all)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.metadata["reasks"] = 0
        if state.metadata[ITEM_KEY]["metadata"].get("skip_generation"):
            # items that only carry a reply to be judged (e.g. a human reference response)
            state.output = ModelOutput.from_content(model="none", content="")
            return state
        state = await generate_once(state, generate, ctx)
        if subtask.format_reminder is None:
            return state
        item = item_from_metadata(state.metadata)
        while (state.metadata["reasks"] < max_reasks(ctx.options)
               and not subtask.parse_valid(item, state.output.completion, ctx)):
            state.messages.append(ChatMessageUser(content=subtask.format_reminder))
            state.metadata["reasks"] += 1
            state = await generate_once(state, generate, ctx)
        return state

    return solve


async def generate_once(state: TaskState, generate: Generate, ctx: RunContext) -> TaskState:
    """One reply of the model under test, cached. A provider that answers 200 with no choices at all
    (Inspect raises IndexError on it) is asked again, each attempt under its own cache entry: Inspect has
    already cached the empty answer, which would otherwise come back on every retry, now and on resume."""
    for attempt in range(1, MAX_ATTEMPTS + 1):
        try:
            return await generate(state, cache=cache_policy(ctx, attempt))
        except IndexError:
            if attempt == MAX_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def cache_policy(ctx: RunContext, attempt: int = 1, repeat: int = 1) -> CachePolicy | bool:
    """Inspect's response cache (never expiring, one entry per epoch so sampled repeats stay independent,
    per attempt for a re-asked request, and per repeat of a judge's test-retest); False with `--no-cache`."""
    if not ctx.cache:
        return False
    scopes = {"attempt": str(attempt)} if attempt > 1 else {}
    if repeat > 1:
        scopes["repeat"] = str(repeat)
    return CachePolicy(expiry=None, per_epoch=True, scopes=scopes)


def bounded_config(ctx: RunContext, **fields: Any) -> GenerateConfig:
    """A GenerateConfig carrying the run's bounds: `attempt_timeout` abandons a hung request, `max_retries`
    caps the retries and `timeout` the whole retry loop (so a dead endpoint costs at most about
    timeout × (retries + 1) plus back-off). Used for every role: judges, ensemble members, patients."""
    return GenerateConfig(max_retries=ctx.max_retries, attempt_timeout=ctx.timeout,
                          timeout=ctx.timeout * (ctx.max_retries + 2), **fields)


def judge_role(index: int) -> str:
    """The Inspect model role of the ensemble's index-th member (the first is Inspect's `grader`)."""
    return "grader" if index == 0 else f"grader_{index + 1}"


def judge_model(ctx: RunContext, index: int = 0) -> Model:
    """A judge: bound to temperature 0, the run's seed and its timeout/retries (Inspect's grader default
    is unseeded and unbounded)."""
    members = ctx.judges
    default = members[index] if index < len(members) else ctx.judge.model
    return get_model(role=judge_role(index), default=default, config=bounded_config(ctx, temperature=0.0,
                                                                                     seed=ctx.seed))


def judge_tokens(req: JudgeRequest, ctx: RunContext) -> int:
    """A judge's token limit: the request's own (sized to its bounded schema), never the model-under-test
    cap; `-O judge_max_tokens=N` overrides it."""
    override = ctx.options.get("judge_max_tokens")
    return req.max_tokens if override is None else int(override)


async def _ask_judge(model: Model, req: JudgeRequest, ctx: RunContext, repeat: int = 1) -> str:
    config = bounded_config(ctx, temperature=0.0, seed=ctx.seed, max_tokens=judge_tokens(req, ctx))
    if req.json and judge_json_mode(req.model or ctx.judge.model, ctx):
        config.response_schema = judge_response_schema(req, ctx)
    text = (await model.generate(req.prompt, config=config, cache=cache_policy(ctx, 1, repeat))).completion
    for attempt in range(2, MAX_ATTEMPTS + 1):
        if req.validate(text):
            break
        # a re-ask must reach the judge again, not the cached invalid reply: each attempt has its own
        # cache entry (same prompt, same seed)
        text = (await model.generate(req.prompt, config=config, cache=cache_policy(ctx, attempt, repeat))).completion
    return text


async def call_judge(ctx: RunContext, subtask: Subtask, item: Item, response: str) -> dict[str, dict[str, str]]:
    """Raw judge outputs per ensemble member (request name → text); the same steps as `run_offline`."""
    requests = subtask.judge_requests(item, response, ctx)
    outputs: dict[str, dict[str, str]] = {}
    if fans_out(requests, ctx):
        for index, member in enumerate(ctx.judges):
            model = judge_model(ctx, index)
            outputs[member] = {req.name: await _ask_judge(model, req, ctx) for req in requests}
        return outputs
    default = judge_model(ctx)
    got: dict[str, str] = {}
    for req in requests:
        # a request that names its judge (MentalBench's own ensembles) gets that model, equally bounded
        model = default if req.model is None else get_model(req.model, config=bounded_config(
            ctx, temperature=0.0, seed=ctx.seed))
        got[req.name] = await _ask_judge(model, req, ctx)
    outputs[ctx.judge.model or "judge"] = got
    return outputs


# Every judge answers with one JSON object; where a provider can enforce that, ask it to.
JUDGE_JSON = ResponseSchema(name="judgement", json_schema=JSONSchema(type="object"))


def judge_response_schema(req: JudgeRequest, ctx: RunContext | None = None) -> ResponseSchema:
    """The request's exact schema (keys and values its parser accepts), else any JSON object.
    `-O judge_text_chars=N` shortens its free-text fields (the offline demo: scores, little prose)."""
    if req.schema is None:
        return JUDGE_JSON
    schema = req.schema
    chars = ctx.options.get("judge_text_chars") if ctx is not None else None
    if chars is not None:
        schema = shorten_free_text(schema, int(chars))
    return ResponseSchema(name="judgement", json_schema=JSONSchema.model_validate(schema))


def shorten_free_text(schema: dict[str, Any], chars: int) -> dict[str, Any]:
    """A copy of a judge schema whose free-text string properties (not enums) allow at most `chars`."""
    props = {}
    for key, prop in (schema.get("properties") or {}).items():
        if prop.get("type") == "string" and "enum" not in prop:
            prop = prop | {"maxLength": min(int(prop.get("maxLength", chars)), chars)}
        props[key] = prop
    return schema | {"properties": props}


def judge_json_mode(judge: str | None, ctx: RunContext) -> bool:
    """`-O judge_json_mode=1|0`; by default on for the in-process model, whose grammar guarantees JSON
    (hosted providers differ in how they treat a schema, so they are left to the prompt)."""
    if "judge_json_mode" in ctx.options:
        return ctx.flag("judge_json_mode")
    return bool(judge and judge.startswith("gguf/"))


def capped(max_tokens: int, ctx: RunContext) -> int:
    """`-O max_tokens_cap=N` bounds the model under test's replies (the offline demo uses it to stay quick);
    judges have their own limit (`judge_tokens`)."""
    cap = ctx.options.get("max_tokens_cap")
    return max_tokens if cap is None else min(max_tokens, int(cap))


def records_from_scores(scores: list[SampleScore]) -> list[Record]:
    return [Record(**s.score.metadata["record"]) for s in scores
            if s.score.metadata and "record" in s.score.metadata]


def _primary_metric(subtask: Subtask, ctx: RunContext):  # type: ignore[no-untyped-def]
    # Inspect recomputes this for its progress display; only the point value is shown, so a token bootstrap
    # keeps that cheap. The published intervals come from `trustmh.run`, with the run's full n_boot.
    display_ctx = replace(ctx, n_boot=DISPLAY_N_BOOT)

    @metric(name=subtask.id.replace("/", "_"))
    def primary() -> Any:
        def compute(scores: list[SampleScore]) -> float:
            result = subtask.aggregate(records_from_scores(scores), display_ctx)
            return float("nan") if result.value is None else float(result.value)

        return compute

    return primary()


def _inspect_value(score: dict[str, Any]) -> float:
    """A per-sample number for Inspect's own display: correctness if the sub-task has it, else validity."""
    for key in ("correct", "inspect_value"):
        v = score.get(key)
        if isinstance(v, bool | int | float):
            return float(v)
    return 1.0 if score.get("valid", True) else 0.0


def trustmh_scorer(subtask: Subtask, ctx: RunContext) -> Any:
    @scorer(metrics=[_primary_metric(subtask, ctx)], name=SCORER_NAME)
    def make() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            item = item_from_metadata(state.metadata)
            response = state.output.completion
            outputs = await call_judge(ctx, subtask, item, response) if ctx.has_judge else None
            result, judge_raw = judged_score(subtask, item, response, outputs, ctx)
            reasks = int(state.metadata.get("reasks", 0))
            record = make_record(subtask, item, response, result, epoch=state.epoch,
                                 finish_reason=state.output.stop_reason, judge_raw=judge_raw,
                                 extra={"reasked": reasks > 0, "reasks": reasks,
                                        "model_reported": state.output.model})
            return Score(value=_inspect_value(result), answer=answer_text(result),
                         explanation=explanation_text(result, judge_raw), metadata={"record": record.to_dict()})

        return score

    return make()


def build_task(subtask_id: str, ctx: RunContext) -> Task:
    """The Inspect Task for one sub-task under one run context."""
    subtask = get_subtask(subtask_id)
    reason = subtask.not_computed_reason(ctx)
    if reason is not None:
        raise TrustmhError(f"{subtask.id}: {reason}")
    items = subtask.items(ctx)
    if not items:
        raise TrustmhError(f"{subtask.id}: no items to evaluate")
    gen = subtask.generation(ctx)
    config = GenerateConfig(temperature=gen.temperature, max_tokens=capped(gen.max_tokens, ctx),
                            top_p=gen.top_p, seed=ctx.seed)
    info = BY_ID[subtask.id]
    from trustmh.conversation.contract import ConversationSubtask

    if isinstance(subtask, ConversationSubtask):
        from trustmh.tasks.conversation import conversation_scorer, play_conversation

        solver, scorer_ = play_conversation(subtask, ctx), conversation_scorer(subtask, ctx)
    else:
        solver, scorer_ = generate_with_reask(subtask, ctx), trustmh_scorer(subtask, ctx)
    return Task(
        name=info.task_name,
        dataset=MemoryDataset([item_to_sample(i) for i in items], name=subtask.id),
        solver=solver,
        scorer=scorer_,
        config=config,
        epochs=gen.epochs,
        metadata={"trustmh_subtask": subtask.id, "trustmh_context": context_to_dict(ctx)},
    )


def context_to_dict(ctx: RunContext) -> dict[str, Any]:
    return asdict(ctx)


def context_from_dict(d: dict[str, Any]) -> RunContext:
    from trustmh.core import JudgeInfo

    d = dict(d)
    d["judge"] = JudgeInfo(**d["judge"])
    return RunContext(**d)
