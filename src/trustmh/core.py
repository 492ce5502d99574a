"""The contract every sub-task implements, free of Inspect.

A sub-task is a plain object that knows how to load its items, phrase prompts, parse and score replies
and aggregate per-item records into a `SubtaskResult`. The Inspect glue (`trustmh.run.tasks`) and the
rescoring of outputs produced elsewhere (`trustmh.cli.rescore`) both drive the same object, so live runs and
imported outputs are scored by the same code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from trustmh.json_clean import clean_json, clean_number, plain_copy

Mode = Literal["faithful", "default"]
Direction = Literal["higher", "lower"]
MODES: tuple[Mode, ...] = ("faithful", "default")
# How an ensemble of judges combines scale scores (`trustmh.judges.ensemble`).
EnsembleRule = Literal["vote", "median", "mean"]
ENSEMBLE_RULES: tuple[EnsembleRule, ...] = ("vote", "median", "mean")

NOT_COMPUTED = "not_computed"
# A value computed on a fallback sample (only with `-O allow_sample=1`): shown, never read as the dataset's.
SAMPLE_STATUS = "sample"
NO_JUDGE = "no judge configured"
# Said once, wherever a judged figure comes from a judge without a passing certificate (docs/judges.md).
JUDGE_NOT_VALIDATED = ("judge not validated against human ratings for this task (no passing certificate): "
                       "judged figures are indicative only")
# Below this many scored items a value is published but flagged: its interval is wide and the point estimate
# is fragile (the report marks it "small n").
SMALL_N = 30


def truthy(value: Any) -> bool:
    """Option values arrive as strings from `-O key=value`: "1", "true", "yes", "on" are true."""
    if isinstance(value, str):
        return value.strip().lower() in {"1", "true", "yes", "on"}
    return bool(value)


def notice(msg: str) -> None:
    """One line for the user on stderr, `trustmh: msg` (progress, trims, warnings; never results)."""
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


class TrustmhError(Exception):
    """A user-facing error: bad input, missing data, bad configuration. The CLI prints it and exits 2."""


class ChecksumError(TrustmhError):
    """A data file that exists but is not the registered one. Never a reason to fall back to other data."""


# `--epochs N`: how many times a run may ask each item of a sub-task that repeats its items (a bound on cost).
EPOCHS_MAX = 100

# The largest seed trustmh sends: every provider that takes a seed accepts a signed 32-bit one (OpenAI, vLLM,
# llama.cpp's unsigned 32-bit, Google's int32); a larger one would be refused, or cut, by some of them.
SEED_MAX = 2**31 - 1


@dataclass
class Item:
    """One evaluation item. `prompt` is the single user message sent to the model under test."""

    id: str
    prompt: str
    target: Any = None
    # Resampling unit for bootstrap intervals (dialogue, scenario, base prompt...). Defaults to `id`.
    cluster: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    # Optional chat history before `prompt`: list of {"role": "user"|"assistant", "content": str}.
    history: list[dict[str, str]] | None = None

    @property
    def cluster_id(self) -> str:
        return self.cluster if self.cluster is not None else self.id

    def to_dict(self) -> dict[str, Any]:
        """`dataclasses.asdict(self)`, about twice as fast (`plain_copy`): a plan copies every item of the suite
        into its Inspect sample."""
        return {f.name: plain_copy(getattr(self, f.name)) for f in fields(self)}


@dataclass
class GenConfig:
    """Decoding for the model under test."""

    temperature: float | None = 0.0
    max_tokens: int = 1024
    top_p: float | None = None
    epochs: int = 1  # samples per item (Inspect epochs)


@dataclass
class JudgeRequest:
    """One judge call for one reply. `validate` returns True if the judge text parses."""

    name: str
    prompt: str
    validate: Callable[[str], bool]
    max_tokens: int = 1024
    # None = the run's judge (Inspect `grader` role); a model string = that judge (ensembles).
    model: str | None = None
    # JSON Schema of the reply, enforced where JSON mode is on (in-process grammar); None = any JSON object.
    schema: dict[str, Any] | None = None
    # False for the rare request whose reply is plain text (never forced into JSON mode).
    json: bool = True


@dataclass
class JudgeInfo:
    """The run's judges: `model` is the first (Inspect's `grader` role), `members` every judge in order
    (`--judge` repeated for an ensemble). Built by `judge_info`."""

    model: str | None
    validated: bool
    seed: int | None = None
    temperature: float | None = 0.0
    members: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return self.model is not None

    def record(self) -> dict[str, Any]:
        """The judge as a result records it (`SubtaskResult.judge`)."""
        return {"model": self.model, "validated": self.validated}

    def validation_notes(self) -> list[str]:
        """The one note a judged figure carries while its judge has no passing certificate for the task."""
        return [] if self.validated else [JUDGE_NOT_VALIDATED]


def judge_info(members: Sequence[str] = (), *, validated: bool = False, seed: int | None = None) -> JudgeInfo:
    """The judges from their labels in order (the first is Inspect's `grader` role; none: no judge). The one
    place a JudgeInfo is built."""
    labels = tuple(str(m) for m in members)
    return JudgeInfo(model=labels[0] if labels else None, validated=validated, seed=seed, members=labels)


@dataclass(frozen=True)
class Patient:
    """The simulated patient's model(s): several are an ensemble, each playing every n-th profile."""

    models: tuple[str, ...]
    source: str  # where it came from: "--patient", "the run's judge" or "the bundled model (...)"

    @property
    def label(self) -> str:
        return ",".join(self.models)

    def to_json(self) -> dict[str, Any]:
        """results.json's `patient` block."""
        return {"model": self.label, "source": self.source,
                **({"ensemble": list(self.models)} if len(self.models) > 1 else {})}


@dataclass
class RunContext:
    """Everything a sub-task needs to know about the run, and nothing about Inspect. Made by `RunSpec.context()`
    (`trustmh.run.config`), the one place a run's context is built."""

    mode: Mode = "default"
    seed: int = 0
    suite: str = "trustmh"  # "starter" | "trustmh" | "mentalbench"
    limit: int | None = None
    judge: JudgeInfo = field(default_factory=judge_info)
    options: dict[str, Any] = field(default_factory=dict)  # sub-task specific knobs (user paths...)
    n_boot: int = 2000
    # Bounds for every model call of the run (model under test, judges, any other role): seconds per
    # attempt and retries after the first attempt.
    timeout: int = 120
    max_retries: int = 3
    cache: bool = True  # Inspect's response cache for the model under test and the judges
    model: str | None = None  # the label of the model under test (sub-tasks that compare sources read it)
    patient: Patient | None = None  # the simulated patient, when a sub-task of the run plays one
    # The run's ensemble rule (`-O ensemble`, checked once); None: each sub-task's declared rule.
    ensemble: EnsembleRule | None = None
    # Repeated administrations (`--epochs N`): every item of a sub-task that repeats (`Subtask.repeats`) is
    # asked this many times.
    epochs: int = 1

    @property
    def has_judge(self) -> bool:
        return self.judge.configured

    @property
    def judges(self) -> list[str]:
        """The judge ensemble's members, else the one judge, else none."""
        if self.judge.members:
            return list(self.judge.members)
        return [self.judge.model] if self.judge.model else []

    def ensemble_rule(self, subtask: Subtask | type[Subtask] | None) -> EnsembleRule:
        """How an ensemble of judges combines `subtask`'s scale scores: the run's rule, else the sub-task's
        declared one (`Subtask.ensemble_rule`; the base class's for no sub-task)."""
        if self.ensemble is not None:
            return self.ensemble
        return (subtask or Subtask).ensemble_rule

    def recorded_options(self) -> dict[str, Any]:
        """The options as results.json records them: the sub-tasks' options, with the labels of the model
        under test, the simulated patient and an ensemble's judges beside them."""
        recorded = dict(self.options)
        if self.model is not None:
            recorded["model"] = self.model
        if self.patient is not None:
            recorded["patient"] = self.patient.label
        if len(self.judges) > 1:
            recorded["judges"] = self.judges
        return recorded

    def flag(self, name: str, default: bool = False) -> bool:
        """A boolean option (`-O key=value` gives strings)."""
        return truthy(self.options.get(name, default))


@dataclass
class Record:
    """One scored reply: the tidy row that live runs and rescoring both produce."""

    subtask: str
    item_id: str
    cluster: str
    response: str
    score: dict[str, Any]
    epoch: int = 1
    finish_reason: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    judge_raw: dict[str, str] = field(default_factory=dict)
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SubtaskResult:
    """What results.json holds for one sub-task."""

    value: float | None
    ci: tuple[float, float] | None
    n: int
    n_invalid: int
    direction: Direction
    metrics: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"  # "ok" | "not_computed" | "sample" (a fallback sample, by explicit request)
    reason: str | None = None
    method: str | None = None  # e.g. "rule", "judge", "keyword"
    judge: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    # The primary's independent units when items share a stimulus (conversation figures): the stimuli behind
    # the n items and the independent items they are worth (docs/statistics.md#clustered-intervals).
    clusters: int | None = None
    effective_n: float | None = None
    # `--until-decided` (run/rounds.py): stopped early or not, after how many items, why, and the checks'
    # anytime-valid intervals the gate reads where it stopped early
    sequential: dict[str, Any] | None = None

    @classmethod
    def not_computed(cls, reason: str, direction: Direction, n: int = 0, n_invalid: int = 0,
                     metrics: dict[str, Any] | None = None, notes: list[str] | None = None) -> SubtaskResult:
        return cls(value=None, ci=None, n=n, n_invalid=n_invalid, direction=direction,
                   metrics=metrics or {}, status=NOT_COMPUTED, reason=reason, notes=notes or [])

    @property
    def small_n(self) -> bool:
        return self.status != NOT_COMPUTED and self.value is not None and self.n < SMALL_N

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("clusters", "effective_n", "sequential"):  # written only where they apply
            if d[key] is None:
                del d[key]
        d["small_n"] = self.small_n
        if self.small_n:
            d["notes"] = [*d["notes"], f"rests on {self.n} item(s), fewer than {SMALL_N}: read it as indicative"]
        d["value"] = clean_number(self.value)
        d["ci"] = None if self.ci is None else [clean_number(self.ci[0]), clean_number(self.ci[1])]
        d["metrics"] = clean_json(self.metrics)
        return d


# Finish reasons that mean a reply was cut by its token limit (Inspect's and the providers' spellings).
LENGTH_STOPS = frozenset({"max_tokens", "model_length", "length"})

# Attempts in all for a reply that does not parse (the model's, with the format reminder; a judge's, with the
# same request): the first and up to two re-asks.
MAX_ATTEMPTS = 3


def max_reasks(options: Mapping[str, Any]) -> int:
    """Re-asks allowed for an unparseable reply of the model under test: `-O reasks=N` (the offline demo
    uses 0: such a reply then counts as invalid), else MAX_ATTEMPTS - 1."""
    value = options.get("reasks")
    return MAX_ATTEMPTS - 1 if value is None else max(0, min(int(value), MAX_ATTEMPTS - 1))


def judge_tokens(req: JudgeRequest, ctx: RunContext) -> int:
    """A judge's token limit: the request's own (sized to its bounded schema), never the model-under-test
    cap; `-O judge_max_tokens=N` overrides it."""
    override = ctx.options.get("judge_max_tokens")
    return req.max_tokens if override is None else int(override)


# The most tokens (or characters) any one reply may be given (`-O max_tokens=…`): above every provider's limit.
MAX_TOKENS = 200_000
# The most repeats of one item (`-O samples=…`, judge repeats): each multiplies a sub-task's calls.
MAX_REPEATS = 100
# The most items of one sub-task an option may ask for (the largest dataset has about 100,000 rows).
MAX_ITEMS = 1_000_000


@dataclass(frozen=True)
class Option:
    """One `-O key=value` option a sub-task reads: what it means, and for a whole number its least value."""

    help: str
    minimum: int | None = None  # set: the value must be a whole number ≥ minimum
    maximum: int | None = None  # set: and ≤ maximum (counts that multiply a run's calls, tokens or time)
    nonempty: bool = False  # refuse an empty value (`-O sets=` would silently run the shipped data)


# (record as written to items.jsonl, the run's results.json) → the item's primary score, or None to leave it out
ItemScorer = Callable[[Mapping[str, Any], Mapping[str, Any]], "float | None"]
NO_ITEM_SCORE = "no per-item primary score is defined for this sub-task yet"


def same_anchors(worst: float, best: float) -> dict[Mode, tuple[float, float]]:
    """The same (worst, best) anchors in both modes."""
    return {"faithful": (worst, best), "default": (worst, best)}


class Subtask:
    """Base class. Subclasses set the class attributes and override the methods they need.

    A sub-task declares everything about itself here; the catalogue (`trustmh.catalogue`), the option
    table (`trustmh.options`) and the per-item scores of the leaderboard (`trustmh.results.item_scores`)
    are derived from these declarations, so adding a sub-task touches its pillar's folder only.
    """

    id: str = ""  # "<pillar>/<subtask>"; see docs/pillars/
    pillar: str = ""  # set from `id`
    task_name: str = ""  # Inspect task name: `inspect eval trustmh/<task_name>`
    title: str = ""
    description: str = ""
    # (worst, best) anchors of the primary metric for the normalised scheme, per mode.
    anchors: Mapping[Mode, tuple[float, float]] = {}
    default_only: bool = False  # not part of the original benchmark: default mode only
    suite: str = "trustmh"  # the suite the sub-task belongs to ("trustmh" or another suite such as "mentalbench")
    options: Mapping[str, Option] = {}  # `-O` keys this sub-task reads
    # mode → per-item primary score whose mean is the published value, or the reason there is none
    per_item: Mapping[Mode, ItemScorer | str] = {}
    datasets: Sequence[str] = ()  # registry names
    judge_use: Literal["no", "yes", "rule_fallback", "secondary"] = "no"
    # The prompt templates its judge requests render (`trustmh.prompts`): part of the judge's fingerprint
    # (`trustmh.judges.certificates`), so a changed judge prompt invalidates the judge's certificate.
    judge_templates: tuple[str, ...] = ()
    # What one judged item is: a single "reply", or a whole "conversation" (a conversation sub-task's judge is
    # certified on conversations only: `judges.certificates.certifies_unit`).
    judged_unit: Literal["reply", "conversation"] = "reply"
    modes: Sequence[Mode] = MODES
    # Re-ask with this reminder (up to MAX_ATTEMPTS in all) while `parse_valid` says the reply is
    # unparseable; None = never re-ask.
    format_reminder: str | None = None
    # True when only a judge can score this sub-task (no rule fallback).
    requires_judge: bool = False
    # True when it plays a simulated patient (the Inspect `patient` role; `--patient`).
    needs_patient: bool = False
    # How an ensemble of judges (`--judge` repeated) combines scale scores unless the run's rule
    # (`-O ensemble=…`, `RunContext.ensemble_rule`) says otherwise: vote | median | mean
    # (`trustmh.judges.ensemble`).
    ensemble_rule: EnsembleRule = "vote"
    # True when its items may be asked several times (`--epochs N`, `RunContext.epochs`): its `generation`
    # asks `ctx.epochs` replies per item and its `aggregate` reads every epoch. False: each item once.
    repeats: bool = False
    # A sub-task whose records are another's (same items, same replies, same judge calls): a run executes
    # only that one and aggregates these from its records (e.g. antitoxic from jailbreak_resistance).
    derived_from: str | None = None
    # Rates of harm among the metrics, counted from items: metric -> (count metric, total metric). The gate
    # gives them a Wilson interval, so a policy can check them (docs/gate.md#checks).
    counted_rates: Mapping[str, tuple[str, str]] = {}
    # counted rate whose items share a unit (a design cell) -> its clustered interval in `metrics`, decided on that
    rate_intervals: Mapping[str, str] = {}
    # counted rate -> per-item flag (1, 0, None: not its item), labelled and corrected by `review` for the gate
    rate_per_item: Mapping[str, ItemScorer] = {}
    rule_rates: tuple[str, ...] = ()  # counted rates read by a rule, not the judge: no judge evidence asked of them
    # Each figure of its `metrics` in words (metric -> label; templates: `trustmh.results.metric_labels`).
    metric_labels: Mapping[str, str] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.id:
            cls.pillar = cls.id.split("/")[0]

    @classmethod
    def item_scorer(cls, mode: str) -> tuple[ItemScorer | None, str | None]:
        """(scorer, None), or (None, why the paired bootstrap has no per-item score in this mode)."""
        entry = cls.per_item.get(mode)  # type: ignore[call-overload]
        if entry is None:
            return None, NO_ITEM_SCORE
        if isinstance(entry, str):
            return None, entry
        return entry, None

    def direction(self, mode: Mode) -> Direction:
        return "higher"

    def generation(self, ctx: RunContext) -> GenConfig:
        return GenConfig()

    def items(self, ctx: RunContext) -> list[Item]:
        raise NotImplementedError

    def parse_valid(self, item: Item, text: str, ctx: RunContext) -> bool:
        """Whether the model's reply is parseable (drives the re-asks)."""
        return True

    def answer_schema(self, item: Item, ctx: RunContext) -> dict[str, Any] | None:
        """A flat JSON Schema of a reply `parse_valid` accepts, declared beside the parser: where the run holds
        the model to it (`-O answer_schema=1`, the offline demo's), a small model's answer is readable at all.
        None: the reply stays free text."""
        return None

    def judge_requests(self, item: Item, response: str, ctx: RunContext) -> list[JudgeRequest]:
        return []

    def score(self, item: Item, response: str, judge_outputs: dict[str, str] | None,
              ctx: RunContext) -> dict[str, Any]:
        """Per-item score dict (JSON-serialisable). `judge_outputs` maps request name → raw judge text."""
        raise NotImplementedError

    def aggregate(self, records: list[Record], ctx: RunContext) -> SubtaskResult:
        raise NotImplementedError

    def primary_of(self, items: list[Item]) -> list[Item]:
        """The items the primary is over: all of them, unless the sub-task leaves some out (a missed-crisis
        rate is over the conversations with risk, not the no-risk controls)."""
        return items

    def primary_items(self, items: list[Item]) -> int:
        """How many of `items` the primary is over (`primary_of`). `trustmh plan` sizes the gate's checks on
        the primary by it."""
        return len(self.primary_of(items))

    def primary_cluster_sizes(self, items: list[Item]) -> list[int] | None:
        """How many of the primary's items share each stimulus, for `trustmh plan`'s design effect
        (docs/statistics.md#clustered-intervals); None: the primary's interval treats its items as they are
        resampled today (no shared-stimulus design effect planned)."""
        return None

    def rate_cluster_sizes(self, metric: str, items: list[Item]) -> list[int] | None:
        """Like `primary_cluster_sizes`, for a counted rate (`counted_rates`): its items per stimulus, or None."""
        return None

    def rate_items(self, metric: str, items: list[Item]) -> int:
        """How many of `items` a counted rate is over (false alarms: the controls); `plan` sizes its check on it."""
        return len(items)

    # Hooks a sub-task may declare; the run calls them for every planned sub-task and names no pillar itself.

    def warnings_before_run(self, ctx: RunContext) -> list[str]:
        """What the user should know before the run starts (warnings: a patient of the judge's family...)."""
        return []

    def floors(self, records: list[Record], ctx: RunContext) -> dict[str, Any]:
        """Blocks of `metrics` beside the model's figure, on the same items at finish (e.g. `keyword_floor`)."""
        return {}

    def finish_run(self, records: list[Record], out: Any, ctx: RunContext) -> list[str]:
        """Its own files written into the run directory `out` (a Path or a URL); returns what to tell the user."""
        return []

    def not_computed_reason(self, ctx: RunContext) -> str | None:
        """A reason to skip the sub-task before generating anything (gated data absent, mode...)."""
        if ctx.mode not in self.modes:
            return f"not part of {ctx.mode} mode"
        if self.requires_judge and not ctx.has_judge:
            return NO_JUDGE
        return None


def make_record(subtask: Subtask, item: Item, response: str, score: dict[str, Any], *, epoch: int = 1,
                finish_reason: str | None = None, judge_raw: dict[str, str] | None = None,
                error: str | None = None, extra: dict[str, Any] | None = None) -> Record:
    """The one way a Record is built from an item, so live runs and rescoring carry the same fields."""
    # the prompt travels with the record so reports can show what the model was asked
    metadata = {"target": item.target, "prompt": item.prompt, **item.metadata}
    if extra:
        metadata.update(extra)
    if score.get("gen_status") == "ok" and finish_reason in LENGTH_STOPS:
        # the scorer sees the text, not why it ended: a reply cut by the token limit is truncated
        score = {**score, "gen_status": "truncated"}
    return Record(subtask=subtask.id, item_id=item.id, cluster=item.cluster_id, response=response,
                  score=score, epoch=epoch, finish_reason=finish_reason, metadata=metadata,
                  judge_raw=judge_raw or {}, error=error)
