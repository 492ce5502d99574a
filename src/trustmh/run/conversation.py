"""Inspect glue for conversation sub-tasks: play the turns, then judge the transcript. Thin by design.

The steps mirror `trustmh.multiturn.run_conversations_offline`: for each turn the patient
speaks (a scripted line, or the `patient` role's model, bound by the run's timeout/retries and cached),
then the model under test answers through Inspect's `generate` (cached, so a resumed run does not pay
again); afterwards each judge request goes to the `grader` role (temperature 0, seeded, exact JSON schema,
up to three attempts) and the plain `score_turns` scores the transcript. An empty line (patient) or reply (model
under test) is asked again, up to MAX_ATTEMPTS in all, each time under a cache entry of its own; one that
stays empty is kept, and the conversation counts as invalid (`contract.empty_turns`). The whole conversation
is the sample's messages in the Inspect log, and `Record.metadata["turns"]` in items.jsonl.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
)
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from trustmh.core import RunContext
from trustmh.judges.reask import ask_until_valid
from trustmh.models import BUNDLED_MODEL
from trustmh.models.batch import batching, call_settings
from trustmh.multiturn import (
    PATIENT_ROLE,
    SCRIPT_MODEL,
    ConversationSubtask,
    conversation_record,
    read_system_prompt,
    said_something,
    usable_requests,
)
from trustmh.run.budget import active_budget
from trustmh.run.calls import (
    SCORER_NAME,
    ask_judge,
    bounded_config,
    cache_policy,
    capped,
    generate_once,
    item_from_metadata,
    judge_model,
    named_failure,
    patient_role,
    primary_metric,
)
from trustmh.run.usage import USAGE_KEY, held, note_call, sample_usage
from trustmh.safe_text import safe_text

TURNS_KEY = "turns"
GREETING_KEY = "greeting"
# The patient writes short chat messages; a little sampling keeps its wording natural (seeded, cached).
PATIENT_TEMPERATURE = 0.7
PATIENT_MAX_TOKENS = 160
STARTER_PATIENT_MAX_TOKENS = 48  # the offline demo's patient: a sentence or two


def patient_model(ctx: RunContext, index: int = 0) -> Model:
    """The simulated patient: the `patient` role (bound by `trustmh run` from --patient; the index-th member of
    an ensemble is `patient_<index + 1>`), bounded and seeded."""
    names = list(ctx.patient.models) if ctx.patient else [BUNDLED_MODEL]
    index = index % len(names)
    return get_model(role=patient_role(index), default=names[index],
                     config=bounded_config(ctx, temperature=PATIENT_TEMPERATURE, seed=ctx.seed,
                                           max_tokens=STARTER_PATIENT_MAX_TOKENS if ctx.suite == "starter"
                                           else PATIENT_MAX_TOKENS))


def _chat(messages: list[dict[str, str]]) -> list[ChatMessage]:
    kinds = {"system": ChatMessageSystem, "assistant": ChatMessageAssistant, "user": ChatMessageUser}
    return [kinds[m["role"]](content=m["content"]) for m in messages]


@solver
def play_conversation(subtask: ConversationSubtask, ctx: RunContext) -> Solver:
    system = read_system_prompt(ctx)
    model_label = ctx.model or "model"
    cap = capped(subtask.generation(ctx).max_tokens, ctx)  # each reply's limit, for its budget reservation
    patient_cap = STARTER_PATIENT_MAX_TOKENS if ctx.suite == "starter" else PATIENT_MAX_TOKENS

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        budget = active_budget()
        if budget is not None:
            budget.check()
        item = item_from_metadata(state.metadata)
        turns: list[dict[str, Any]] = []
        # the sample's input only names the conversation: the turns are built here, one by one
        state.messages = [ChatMessageSystem(content=system)] if system else []
        patient: Model | None = None
        for i in range(subtask.n_turns(item, ctx)):
            move = subtask.patient_turn(item, turns, ctx)
            if move.end:
                break
            if move.text is not None:
                said, who = move.text, SCRIPT_MODEL
            else:
                index = int(item.metadata.get("patient_index", 0))
                patient = patient or patient_model(ctx, index)
                said_by: list[str | None] = []

                async def patient_line(attempt: int, asked: Model = patient, messages: Any = move.messages,
                                       said_by: list[str | None] = said_by) -> str:
                    # an empty line is asked again under its own cache entry (the cached one is empty)
                    fields = call_settings(str(asked), conversation=True)
                    with held(str(asked), list(messages or []), patient_cap) as hold:
                        try:
                            with batching("batch" in fields):
                                out = await asked.generate(_chat(list(messages or [])),
                                                           cache=cache_policy(ctx, attempt),
                                                           config=GenerateConfig(**fields))
                        except Exception as exc:  # retries used up: named by role and model
                            raise named_failure(exc, "patient", asked) from None
                        note_call("patient", str(asked), out, batched="batch" in fields, hold=hold)
                    said_by.append(out.model)
                    return safe_text(out.completion)

                said = await ask_until_valid(patient_line, said_something)
                names = ctx.patient.models if ctx.patient else ()
                who = names[index % len(names)] if names else str(said_by[-1] or "patient")
            turns.append({"role": PATIENT_ROLE, "content": said, "model": who, "turn": i, "marks": {}})
            # a scripted clock rides on the message for a product that accepts one (`http` provider)
            clock = None if move.elapsed_seconds is None else {"elapsed_seconds": move.elapsed_seconds}
            state.messages.append(ChatMessageUser(content=said, metadata=clock))

            async def model_reply(attempt: int) -> str:
                nonlocal state
                if attempt > 1 and state.messages and state.messages[-1].role == "assistant":
                    state.messages.pop()  # the empty reply: the same conversation is asked again
                state = await generate_once(state, generate, ctx, reask=attempt - 1, conversation=True,
                                            max_tokens=cap)
                return state.output.completion

            await ask_until_valid(model_reply, said_something)
            greeting = (state.output.metadata or {}).get("greeting")
            if greeting and GREETING_KEY not in state.metadata:
                state.metadata[GREETING_KEY] = str(greeting)  # a product's first words (`http` provider)
            turns.append({"role": "model", "content": safe_text(state.output.completion), "model": model_label, "turn": i,
                          "marks": {}})
        state.metadata[TURNS_KEY] = turns
        return state

    return solve


def _repeat_of(name: str) -> int:
    return int(name.rsplit("#", 1)[1]) if "#" in name else 1


def conversation_scorer(subtask: ConversationSubtask, ctx: RunContext) -> Any:
    @scorer(metrics=[primary_metric(subtask, ctx)], name=SCORER_NAME)
    def make() -> Any:
        async def score(state: TaskState, target: Target) -> Score:
            item = item_from_metadata(state.metadata)
            turns = list(state.metadata.get(TURNS_KEY) or [])
            outputs: dict[str, str] | None = None
            if ctx.has_judge:
                judge = judge_model(ctx)
                outputs = {}
                for req in usable_requests(subtask.conversation_judge_requests(item, turns, ctx), turns):
                    outputs[req.name] = await ask_judge(judge, req, ctx, _repeat_of(req.name))
            record = conversation_record(subtask, item, turns, outputs, ctx, epoch=state.epoch,
                                         extra={"model_reported": state.output.model, USAGE_KEY: sample_usage(),
                                                **({GREETING_KEY: state.metadata[GREETING_KEY]}
                                                   if GREETING_KEY in state.metadata else {})})
            valid = bool(record.score.get("valid", True))
            return Score(value=1.0 if valid else 0.0, answer=f"{len(turns) // 2} turns",
                         explanation="\n\n".join(f"[{k}] {v}" for k, v in (outputs or {}).items())
                         or "scored by rule", metadata={"record": record.to_dict()})

        return score

    return make()
