"""Inspect glue shared by single-turn tasks and conversations: bounded, seeded, cached model calls.

Every generate request of a run is sent from here, one attempt at a time: the model under test's
(`generate_once`), a judge's (`judge_once`) and the simulated patient's (`patient_once`); the loops around
them (re-asks, turns, ensemble members) are the run's steps (`trustmh.steps`). `bounded_config` bounds each
call (per-attempt timeout, retries, a ceiling on the whole retry loop) and `cache_policy` gives each attempt
its own response-cache entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from inspect_ai.model import (
    CachePolicy,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import SampleScore, metric
from inspect_ai.solver import Generate, TaskState
from inspect_ai.util import JSONSchema

from trustmh.core import MAX_ATTEMPTS, Item, JudgeRequest, Record, RunContext, Subtask, judge_tokens, notice
from trustmh.inspect_compat import checked_before_each_attempt
from trustmh.invalid import aggregate_records
from trustmh.judges.schema import judge_json_mode as schema_json_mode
from trustmh.models.batch import batching, call_settings
from trustmh.models.http import last_failure
from trustmh.models.providers import provider_of
from trustmh.run.usage import held, note_call, note_judge_reported

ITEM_KEY = "trustmh_item"


DISPLAY_N_BOOT = 20


SCORER_NAME = "trustmh_scorer"


def item_from_metadata(metadata: dict[str, Any]) -> Item:
    return Item(**metadata[ITEM_KEY])


async def generate_once(state: TaskState, generate: Generate, ctx: RunContext, reask: int = 0,
                        conversation: bool = False, max_tokens: int | None = None,
                        answer_format: ResponseSchema | None = None) -> TaskState:
    """One reply of the model under test, cached. A provider that answers 200 with no choices at all
    (Inspect raises IndexError on it) is asked again, each attempt under its own cache entry: Inspect has
    already cached the empty answer, which would otherwise come back on every retry, now and on resume.
    `reask` k > 0: the k-th re-ask of the same messages (an empty reply), under cache entries of its own.
    In batch mode a single-turn reply is batched; a conversation's turn only with --batch-conversations.
    `answer_format`: the schema the reply is held to (`answer_format`), else free text."""
    fields: dict[str, Any] = call_settings(str(ctx.model or ""), conversation)
    if answer_format is not None:
        fields = {**fields, "response_schema": answer_format}
    for attempt in range(1 + reask * MAX_ATTEMPTS, (reask + 1) * MAX_ATTEMPTS + 1):
        before = state.output
        try:
            # the call's planned upper cost is reserved before it is sent (`--budget`; `max_tokens`: its cap)
            name = str(ctx.model or get_model())
            with held(name, [{"role": m.role, "content": m.text} for m in state.messages], max_tokens) as hold:
                with batching("batch" in fields):
                    state = await generate(state, cache=cache_policy(ctx, attempt), **fields)
                note_call("model", str(ctx.model or state.output.model), state.output, batched="batch" in fields,
                          hold=hold)
            return state
        except IndexError:
            # the provider answered (and billed) an attempt with no choices: its usage is counted, once, as it
            # reported it (docs/cost.md#usage), before the attempt is asked again
            if state.output is not before and not state.output.choices:
                note_call("model", str(ctx.model or state.output.model), state.output,
                          batched="batch" in fields)
            if attempt == (reask + 1) * MAX_ATTEMPTS:
                raise
        except Exception as exc:  # retries used up (RetryError): report what the last attempt met, by name
            if last_failure(exc, get_model().api) is exc:
                raise
            # named by its endpoint: "20 sample(s) errored" must say which endpoint stopped answering
            raise named_failure(exc, "model under test", get_model()) from None
    raise AssertionError("unreachable")


def answer_format(subtask: Subtask, item: Item, ctx: RunContext) -> ResponseSchema | None:
    """The sub-task's answer schema for this item (`Subtask.answer_schema`) under `-O answer_schema=1`, where the
    model's server holds a reply to a schema (a gguf model: llama.cpp compiles it to a grammar); else None."""
    if not ctx.flag("answer_schema") or not provider_of(str(ctx.model or "")).json_schema:
        return None
    schema = subtask.answer_schema(item, ctx)
    return None if schema is None else ResponseSchema(name="answer", json_schema=JSONSchema.model_validate(schema))


class ModelCallError(Exception):
    """A call of a judge, a patient or another helper model that failed for good, named by role and model (an
    Inspect `AttemptTimeoutError("attempt_timeout '5' exceeded.")` alone names neither)."""


def named_failure(exc: Exception, role: str, model: Model) -> Exception:
    """The error a failed call of `role` is reported with: what its last attempt met (`last_failure`), prefixed
    with the role and the model."""
    failure = last_failure(exc, model.api)
    detail = str(failure) or type(failure).__name__
    return ModelCallError(f"the {role} ({model}) failed: {type(failure).__name__}: {detail}")


# A judge whose calls failed for good (retries used up) this many times in a row, with no answer between, is
# known dead for the rest of the run: its later calls fail at once instead of each paying the timeout and retries.
DEAD_AFTER = 2


class JudgeNotAsked(ModelCallError):
    """A call of a judge known dead (`JudgeWatch`), stopped before its next attempt was sent."""


class JudgeWatch:
    """The run's judges that are known dead (`DEAD_AFTER`); reset around each Inspect call (`watching`). A judge
    call checks it before each of its attempts (`judge_once`), so calls already in flight when their judge is
    declared dead send no retry."""

    def __init__(self) -> None:
        self.failures: dict[str, int] = {}
        self.dead: dict[str, str] = {}

    def check(self, role: str, model: str) -> None:
        why = self.dead.get(model)
        if why is not None:
            raise JudgeNotAsked(f"the {role} ({model}) is not asked: it failed for good {DEAD_AFTER} times in a row "
                                 f"in this run (last: {why[:200]}); check its endpoint and run the same command again")

    def failed(self, model: str, why: str) -> None:
        self.failures[model] = self.failures.get(model, 0) + 1
        if self.failures[model] >= DEAD_AFTER and model not in self.dead:
            self.dead[model] = why
            notice(f"judge {model}: {DEAD_AFTER} calls in a row failed for good; its later calls in this run are not "
                   "sent (the run ends incomplete, exit 5)")

    def answered(self, model: str) -> None:
        self.failures[model] = 0

    @contextmanager
    def watching(self) -> Iterator[None]:
        self.failures.clear()
        self.dead.clear()
        try:
            yield
        finally:
            self.failures.clear()
            self.dead.clear()


JUDGE_WATCH = JudgeWatch()


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


def patient_role(index: int) -> str:
    """The Inspect model role of the index-th patient of an ensemble (the first is `patient`)."""
    return "patient" if index == 0 else f"patient_{index + 1}"


def judge_model(ctx: RunContext, index: int = 0) -> Model:
    """A judge: bound to temperature 0, the run's seed and its timeout/retries (Inspect's grader default
    is unseeded and unbounded)."""
    members = ctx.judges
    default = members[index] if index < len(members) else ctx.judge.model
    return get_model(role=judge_role(index), default=default, config=bounded_config(ctx, temperature=0.0,
                                                                                     seed=ctx.seed))


async def judge_once(model: Model, req: JudgeRequest, ctx: RunContext, attempt: int, repeat: int = 1,
                     role: str = "judge") -> str:
    """One attempt of a judge request (the re-ask loop is the run's step, `trustmh.steps`): temperature 0,
    seeded, bounded, its own cache entry per attempt (and per repeat of a test-retest), batched in batch mode
    (a judge waits for its verdict anyway). A judge declared dead while this call is in flight is not asked
    again: the watch is checked before each attempt Inspect sends, its retries included."""
    JUDGE_WATCH.check(role, str(model))
    fields = call_settings(str(model))
    config = bounded_config(ctx, temperature=0.0, seed=ctx.seed, max_tokens=judge_tokens(req, ctx)).merge(
        GenerateConfig(**fields))
    if req.json and judge_json_mode(req.model or ctx.judge.model, ctx):
        config.response_schema = judge_response_schema(req, ctx)
    with held(str(model), req.prompt, config.max_tokens) as hold:
        try:
            with batching("batch" in fields), checked_before_each_attempt(partial(JUDGE_WATCH.check, role, str(model))):
                output = await model.generate(req.prompt, config=config, cache=cache_policy(ctx, attempt, repeat))
        except JudgeNotAsked:  # declared dead between two attempts: said once already, not a failure of its own
            raise
        except Exception as exc:  # retries used up (RetryError): report what the last attempt met, by role
            failure = named_failure(exc, role, model)
            JUDGE_WATCH.failed(str(model), str(failure))
            raise failure from None
        JUDGE_WATCH.answered(str(model))
        note_call(role, str(model), output, batched="batch" in fields, hold=hold)
        note_judge_reported(str(model), output)
    return judge_reply_capped(output.completion, str(model), config.max_tokens or req.max_tokens)


# A judge reply is read up to this many characters per token of its limit (a token is about 4 characters): an
# endpoint that ignores max_tokens and answers megabytes is cut, not parsed whole, and the cut is said once.
JUDGE_CHARS_PER_TOKEN = 8
_CUT_SAID: set[str] = set()


def judge_reply_capped(text: str, model: str, max_tokens: int) -> str:
    """The judge's reply, cut to JUDGE_CHARS_PER_TOKEN characters per token of its limit (said once per judge)."""
    cap = max(int(max_tokens), 1) * JUDGE_CHARS_PER_TOKEN
    if len(text) <= cap:
        return text
    if model not in _CUT_SAID:
        _CUT_SAID.add(model)
        notice(f"judge {model}: a reply of {len(text):,} characters cut to {cap:,} (its limit of {max_tokens:,} "
               f"tokens × {JUDGE_CHARS_PER_TOKEN}); the endpoint ignores max_tokens, and a cut reply is read as "
               "unparseable")
    return text[:cap]


def chat_messages(messages: list[dict[str, str]]) -> list[ChatMessage]:
    """Plain `{role, content}` messages as Inspect's."""
    kinds = {"system": ChatMessageSystem, "assistant": ChatMessageAssistant, "user": ChatMessageUser}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


async def patient_once(model: Model, messages: list[dict[str, str]], ctx: RunContext, attempt: int,
                       max_tokens: int) -> ModelOutput:
    """One attempt of the simulated patient's next line (the re-ask loop is the run's step, `trustmh.steps`):
    its own cache entry per attempt (a cached empty line must not come back), batched only with
    --batch-conversations, its planned cost (`max_tokens`) reserved against the budget first."""
    fields = call_settings(str(model), conversation=True)
    with held(str(model), list(messages), max_tokens) as hold:
        try:
            with batching("batch" in fields):
                out = await model.generate(chat_messages(messages), cache=cache_policy(ctx, attempt),
                                           config=GenerateConfig(**fields))
        except Exception as exc:  # retries used up: named by role and model
            raise named_failure(exc, "patient", model) from None
        note_call("patient", str(model), out, batched="batch" in fields, hold=hold)
    return out


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
    """`-O judge_json_mode=1|0`, else on for the bundled model (`trustmh.judges.schema.judge_json_mode`)."""
    return schema_json_mode(judge, ctx.options)


def capped(max_tokens: int, ctx: RunContext) -> int:
    """`-O max_tokens_cap=N` bounds the model under test's replies (the offline demo uses it to stay quick);
    judges have their own limit (`judge_tokens`)."""
    cap = ctx.options.get("max_tokens_cap")
    return max_tokens if cap is None else min(max_tokens, int(cap))


def primary_metric(subtask: Subtask, ctx: RunContext):  # type: ignore[no-untyped-def]
    # Inspect recomputes this for its progress display; only the point value is shown, so a token bootstrap
    # keeps that cheap. The published intervals come from `trustmh.run.execute`, with the run's full n_boot.
    display_ctx = replace(ctx, n_boot=DISPLAY_N_BOOT)

    @metric(name=subtask.id.replace("/", "_"))
    def primary() -> Any:
        def compute(scores: list[SampleScore]) -> float:
            result = aggregate_records(subtask, records_from_scores(scores), display_ctx)
            return float("nan") if result.value is None else float(result.value)

        return compute

    return primary()


def inspect_display_value(score: dict[str, Any]) -> float:
    """A per-sample number for Inspect's own display: correctness if the sub-task has it, else validity."""
    for key in ("correct", "inspect_value"):
        v = score.get(key)
        if isinstance(v, bool | int | float):
            return float(v)
    return 1.0 if score.get("valid", True) else 0.0

def records_from_scores(scores: list[SampleScore]) -> list[Record]:
    return [Record(**s.score.metadata["record"]) for s in scores
            if s.score.metadata and "record" in s.score.metadata]
