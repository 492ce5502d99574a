"""What a run is asked (`RunOptions`) and what it resolves to (`RunSpec`), once.

`RunOptions` is the request as the command line (`cli/run.py`), a library caller or a shard manifest
(`options_from_manifest`) gives it: unresolved, possibly Inspect `Model` objects where tests pass canned
models. `resolve` turns it, the same way for all three, into a frozen `RunSpec`: the model and its label, the
suite, the chosen sub-tasks, the judges (typed, with the ensemble's members), the simulated patient, the
product endpoint, the offline demo's trims and reply caps, the Inspect roles, and the user's own `-O` keys
(never written to). Every later stage reads the spec; `RunSpec.context()` is the one `RunContext` of a run.

Adding a setting of how a run is made, paid or written: a field on its part in `run/parts.py` and the command-line
argument (module docstring there). A setting that `resolve` must check or turn into something else (the model,
the judges, the patient, the selection): a field on `RunOptions`, the same on `RunSpec` or its part, and one
line in `resolve`. Either way, if it changes what a run computes, the manifest (`run_manifest`).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import trustmh
from trustmh.catalogue import get_subtask, is_implemented, select
from trustmh.core import (
    EPOCHS_MAX,
    SEED_MAX,
    EnsembleRule,
    JudgeInfo,
    Mode,
    Patient,
    RunContext,
    TrustmhError,
    judge_info,
)
from trustmh.inspect_compat import model_provider_known
from trustmh.judges.ensemble import ensemble_option
from trustmh.models import BUNDLED_MODEL
from trustmh.models.endpoint import ENDPOINT_ENV, load_endpoint
from trustmh.models.providers import provider_of
from trustmh.options import check_options
from trustmh.run.calls import judge_role, patient_role
from trustmh.run.parts import PARTS, CostSettings, Execution, Output, part_of
from trustmh.run.reference import FIXED_REPLIES, ReferenceRun
from trustmh.storage import Url

DEMO_LIMIT = 2
DEMO_MAX_TOKENS = 192  # the bundled model's reply cap in any run
# The offline demo only (bundled model, starter suite): see `demo_trims`.
DEMO_REPLY_CAP = 64
DEMO_JUDGE_TEXT_CHARS = 80
DEMO_FAIRNESS_VALUES = 2  # identity values per attribute: 9 fairness variants instead of 17


@dataclass(init=False)
class RunOptions:
    """The request: what the caller asked for, before defaults and checks (`resolve`). A keyword that names a
    field of a part (`run/parts.py`: `timeout=`, `out=`, `budget=`…) goes to that part; a part may also be given
    whole (`execution=Execution(...)`)."""

    model: Any = None  # `--model`: a model string, or an Inspect `Model` object (tests pass canned models)
    suite: str | None = None  # `--suite` (None: starter for the bundled model, else trustmh)
    pillars: list[str] | None = None  # `--pillars`
    subtasks: list[str] | None = None  # `--subtasks`
    limit: int | None = None  # `--limit`: items per sub-task
    epochs: int = 1  # `--epochs N`: repeated administrations of the sub-tasks that repeat their items
    judge: Any = None  # `--judge`: the first judge (a model string or Model object)
    more_judges: list[Any] = field(default_factory=list)  # further ensemble members after `judge`
    no_judge: bool = False  # `--no-judge`
    judge_validated: bool = False  # `--judge-validated`: the judge has a certificate
    mode: Mode = "default"  # `--mode`
    seed: int = 0  # `--seed`
    n_boot: int = 2000  # `--n-boot`: bootstrap resamples
    options: dict[str, Any] = field(default_factory=dict)  # the user's own `-O` keys
    # `--patient`: the simulated patient (conversation sub-tasks; Inspect role `patient`): a model string or
    # Model object, a comma-separated string or a list for an ensemble.
    patient: Any = None
    endpoint: Path | None = None  # `--endpoint FILE`: the product's API for `--model http/<name>`
    execution: Execution = field(default_factory=Execution)
    cost: CostSettings = field(default_factory=CostSettings)
    output: Output = field(default_factory=Output)
    reference: ReferenceRun | None = None  # a certification (`trustmh judge certify`): no model under test

    def __init__(self, **settings: Any) -> None:
        own = {f.name: f for f in fields(self)}
        for f in own.values():
            setattr(self, f.name, f.default_factory() if f.default is MISSING else f.default)
        by_part: dict[str, dict[str, Any]] = {name: {} for name in PARTS}
        for key, value in settings.items():
            if key in own:
                setattr(self, key, value)
            elif (part := part_of(key)) is not None:
                by_part[part][key] = value
            else:
                raise TypeError(f"RunOptions: no setting {key!r}")
        for name, given in by_part.items():
            if given:
                setattr(self, name, replace(getattr(self, name), **given))


@dataclass(frozen=True)
class ModelUnderTest:
    """The model under test, resolved."""

    # its name as reported (a model string; the bundled model when none was given); None only in a spec given
    # whole for `inspect eval trustmh/<task>` (`run/direct.py`), where Inspect's --model is the model
    label: str | None
    target: Any  # what Inspect is given: the label, or the Model object a caller passed
    endpoint: dict[str, Any] | None = None  # {url, send, session} of `--endpoint` (a product's API)


@dataclass(frozen=True)
class Judges:
    """The judges, resolved."""

    info: JudgeInfo  # first member, every member, validated
    # How an ensemble of judges combines scores (`-O ensemble`, checked); None: each sub-task's declared rule
    # (`RunContext.ensemble_rule` gives the rule of a sub-task).
    ensemble: EnsembleRule | None = None


@dataclass(frozen=True)
class RunSpec:
    """A run, resolved: every stage reads this and nothing else of the request. Composed of typed parts (the model,
    the judges, the patient, and `run/parts.py`'s execution, cost and output) beside what selects the items."""

    model: ModelUnderTest
    judges: Judges
    patient: Patient | None  # the simulated patient, when a chosen sub-task plays one
    suite: str
    mode: Mode
    seed: int
    limit: int | None  # after the offline demo's default
    subtasks: tuple[str, ...]  # the chosen sub-task ids, in catalogue order
    roles: dict[str, Any]  # Inspect model roles: grader, grader_2…, patient, patient_2…
    options: dict[str, Any]  # the user's own `-O` keys, as given
    trims: dict[str, Any]  # the offline demo's trims and the bundled model's reply cap (a user key wins)
    n_boot: int = 2000
    epochs: int = 1  # `--epochs N`, 1..EPOCHS_MAX: for the sub-tasks that repeat their items (`Subtask.repeats`)
    execution: Execution = field(default_factory=Execution)
    cost: CostSettings = field(default_factory=CostSettings)
    output: Output = field(default_factory=Output)
    reference: ReferenceRun | None = None  # a certification: its fixed replies are judged, none generated

    @property
    def sub_task_options(self) -> dict[str, Any]:
        """What sub-tasks read as `ctx.options`: the demo's trims, overridden by the user's own keys."""
        return {**self.trims, **self.options, **(self.reference.folder_options() if self.reference else {})}

    def context(self) -> RunContext:
        """The run's one RunContext (what a sub-task knows of the run): the only place one is made (a spec given
        whole, `run/direct.py`, comes here too). The judges judge with the run's seed."""
        judge = self.judges.info
        return RunContext(mode=self.mode, seed=self.seed, suite=self.suite, limit=self.limit,
                          judge=judge_info(judge.members, validated=judge.validated, seed=self.seed),
                          options=self.sub_task_options, n_boot=self.n_boot, timeout=self.execution.timeout,
                          max_retries=self.execution.max_retries, cache=self.execution.cache,
                          model=self.model.label, patient=self.patient, ensemble=self.judges.ensemble,
                          epochs=self.epochs)

    def recorded_options(self) -> dict[str, Any]:
        """The options as results.json and run.json record them: the sub-tasks' options with the labels of
        the roles (and the product's URL) beside them."""
        recorded = self.context().recorded_options()
        if self.model.endpoint is not None:
            recorded["endpoint"] = self.model.endpoint["url"]
        return recorded


def _log(msg: str) -> None:
    print(f"trustmh: {msg}", file=sys.stderr, flush=True)


def use_endpoint(model: Any, endpoint: Path | None) -> dict[str, Any] | None:
    """Check `--endpoint` against `--model` and the file itself (before any call), and hand the file to the
    `http` provider (and to every --workers shard) through the environment; {url, send, file} for run.json."""
    is_http = isinstance(model, str) and provider_of(model).endpoint_file
    if endpoint is None:
        if is_http and not os.environ.get(ENDPOINT_ENV):
            raise TrustmhError(f"--model {model}: needs --endpoint FILE (the product's API; see docs/products.md)")
        if not is_http:
            return None
        endpoint = Path(os.environ[ENDPOINT_ENV])
    elif not is_http:
        raise TrustmhError("--endpoint goes with --model http/<name>")
    parsed = load_endpoint(endpoint)
    os.environ[ENDPOINT_ENV] = str(Path(endpoint).expanduser().resolve())
    return {"url": parsed.url, "send": parsed.send, "session": parsed.session.start}


def check_model_name(name: Any, what: str) -> None:
    """A clear error for a model string whose provider Inspect does not know (instead of Inspect's
    exception group deep inside the eval)."""
    if not isinstance(name, str):
        return  # an Inspect Model object (tests, library use)
    provider = name.split("/", 1)[0] if "/" in name else None
    # trustmh's own providers register when their module is imported: here, and only the one the name asks
    # for (the bundled provider loads llama.cpp and the OpenAI SDK, about a second of a plan's start-up)
    if provider == "gguf":
        import trustmh.models.gguf  # noqa: F401  (imported on use: start-up)
    elif provider == "http":
        import trustmh.models.http  # noqa: F401  (imported on use: start-up)
    if provider is None:
        raise TrustmhError(f"{what} {name!r}: expected PROVIDER/MODEL, e.g. openai/gpt-4o-mini or gguf/smollm2")
    if not model_provider_known(provider):
        raise TrustmhError(f"{what} {name!r}: unknown model provider {provider!r} (Inspect providers include "
                           "openai, anthropic, google, vllm, ollama, hf, openai-api/<service>, and gguf for the "
                           "bundled model)")


def patient_names(patient: Any) -> list[Any]:
    """`--patient a,b,c`: an ensemble of patient models (each plays every n-th profile); a Model object or a
    list of them (tests, library use) as given."""
    if isinstance(patient, str):
        return [p.strip() for p in patient.split(",") if p.strip()]
    return list(patient) if isinstance(patient, list | tuple) else [patient]


def resolve_judges(opts: RunOptions, model: str) -> tuple[JudgeInfo, list[Any]]:
    """The judges (typed) and what Inspect is given for each member. No --model means the bundled model,
    judged by itself as an unvalidated demo judge."""
    if opts.no_judge:
        return judge_info(seed=opts.seed), []
    if opts.judge:
        targets = [opts.judge, *opts.more_judges]
    elif model == BUNDLED_MODEL:
        targets = [BUNDLED_MODEL]
    else:
        return judge_info(seed=opts.seed), []
    for target in targets:
        check_model_name(target, "--judge")
    members = tuple(str(t) for t in targets)
    if len(set(members)) != len(members):
        raise TrustmhError(f"a judge is listed twice in the ensemble: {', '.join(members)}")
    validated = opts.judge_validated and members[0] != BUNDLED_MODEL
    return judge_info(members, validated=validated, seed=opts.seed), targets


def resolve_patient(opts: RunOptions, judge: JudgeInfo, judge_targets: list[Any], subtask_ids: list[str]
                    ) -> tuple[Patient | None, list[Any]]:
    """The simulated patient, when a chosen sub-task plays one: --patient, else the run's judge, else the
    bundled model; where it came from is recorded in results.json. Also what Inspect is given for it."""
    needs = [s for s in subtask_ids if is_implemented(s) and get_subtask(s).needs_patient]
    if opts.patient is not None and not needs:
        raise TrustmhError("--patient applies only to conversation/simulated_patient, which is not selected")
    if not needs:
        return None, []
    if opts.patient is not None:
        names = patient_names(opts.patient)
        for name in names:
            check_model_name(name, "--patient")
        if len(set(map(str, names))) != len(names):
            raise TrustmhError(f"--patient lists a model twice: {opts.patient}")
        return Patient(models=tuple(str(n) for n in names), source="--patient"), names
    if judge.model:
        # the judge's own model object where one was given (tests)
        return Patient(models=(judge.model,), source="the run's judge"), judge_targets[:1]
    return Patient(models=(BUNDLED_MODEL,), source="the bundled model (no --patient, no judge)"), [BUNDLED_MODEL]


def check_epochs(epochs: int, subtask_ids: list[str]) -> None:
    """`--epochs N`: a whole number from 1 to EPOCHS_MAX, and above 1 only where a chosen sub-task repeats its
    items (said once, with the sub-tasks it applies to)."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or not 1 <= epochs <= EPOCHS_MAX:
        raise TrustmhError(f"--epochs {epochs!r}: must be a whole number from 1 to {EPOCHS_MAX}")
    if epochs == 1:
        return
    repeating = [s for s in subtask_ids if is_implemented(s) and get_subtask(s).repeats]
    if not repeating:
        everywhere = [s.id for s in select(None, None, "default", "trustmh") if is_implemented(s.id)
                      and get_subtask(s.id).repeats]
        raise TrustmhError(f"--epochs {epochs}: none of the chosen sub-tasks repeats its items (those that do: "
                           f"{', '.join(everywhere)})")
    _log(f"--epochs {epochs}: every item asked {epochs} times in {', '.join(repeating)} (the other sub-tasks "
         "ask each item once)")


def demo_trims(model: str, suite: str, judge: JudgeInfo) -> dict[str, Any]:
    """The offline demo (the bundled model on the starter suite): minutes, not hours (benchmarks/demo.py
    times it); and the bundled model's reply cap in any run; a certification of the bundled judge keeps its
    free text as short as the demo's. The user's own `-O` keys win."""
    trims: dict[str, Any] = {}
    if model == FIXED_REPLIES and judge.model == BUNDLED_MODEL:
        return {"judge_text_chars": DEMO_JUDGE_TEXT_CHARS}
    if model == BUNDLED_MODEL and suite == "starter":
        trims = {"max_tokens_cap": DEMO_REPLY_CAP, "robustness_grid": "quick", "fairness_contexts": 1,
                 "fairness_values": DEMO_FAIRNESS_VALUES, "fairness_escalation_items": 0, "awareness_samples": 1,
                 "reasks": 0, "anchors": 0, "answer_schema": 1}
        if judge.model == BUNDLED_MODEL:
            trims["judge_text_chars"] = DEMO_JUDGE_TEXT_CHARS
    if model == BUNDLED_MODEL:
        # A 135M-parameter model on two CPU cores: keep replies short.
        trims.setdefault("max_tokens_cap", DEMO_MAX_TOKENS)
    return trims


def _announce(spec: RunSpec, demo: bool) -> None:
    """Each trim said once, on stderr, with how to override it."""
    options = spec.sub_task_options
    if demo:
        _log(f"offline demo: at most {spec.limit} items per sub-task; robustness_grid={options['robustness_grid']} "
             f"(cascade at 2 intensities); fairness_contexts={options['fairness_contexts']} x "
             f"fairness_values={options['fairness_values']} per attribute (neutral + the first values listed), "
             f"fairness_escalation_items={options['fairness_escalation_items']}; "
             f"awareness_samples={options['awareness_samples']}; reasks={options['reasks']} (an unparseable "
             f"reply counts as invalid); anchors={options['anchors']} (no judge drift watched); "
             f"answer_schema={options['answer_schema']} (each answer held to its sub-task's format)"
             + (f"; judge free text <= {options['judge_text_chars']} characters" if "judge_text_chars" in options
                else "")
             + " (override with --limit / -O key=value)")
    if "max_tokens_cap" in options:
        _log(f"replies capped at {options['max_tokens_cap']} tokens (-O max_tokens_cap=N to change)")
    judge = spec.judges.info
    _log(f"model={spec.model.label} suite={spec.suite} mode={spec.mode} seed={spec.seed} "
         f"judge={judge.model or 'none'}{'' if judge.validated or not judge.model else ' (unvalidated)'}")


def resolve(opts: RunOptions) -> RunSpec:
    """Defaults and checks, before any data is read or any model called: the run's `RunSpec`."""
    if isinstance(opts.seed, bool) or not isinstance(opts.seed, int) or not 0 <= opts.seed <= SEED_MAX:
        raise TrustmhError(f"--seed {opts.seed!r}: must be a whole number from 0 to {SEED_MAX}")
    if opts.execution.batch_conversations and opts.execution.batch is None:
        raise TrustmhError("--batch-conversations works only with --batch (it batches conversation turns in a "
                           "batch run); add --batch, or leave --batch-conversations out")
    model = str(opts.model or (FIXED_REPLIES if opts.reference else BUNDLED_MODEL))
    suite = opts.suite or ("starter" if model == BUNDLED_MODEL else "trustmh")
    model_target = opts.model or model
    check_model_name(model_target, "--model")
    endpoint = use_endpoint(model_target, opts.endpoint)
    judge, judge_targets = resolve_judges(opts, model)
    chosen = [info.id for info in select(opts.pillars, opts.subtasks, opts.mode, suite)]
    if not chosen:
        raise TrustmhError("no sub-task selected (check --pillars/--subtasks and --mode)")
    if opts.reference is None:  # a reference's reader reads -O keys too (moore_dir on conversation/delusion)
        check_options(opts.options, chosen)
    check_epochs(opts.epochs, chosen)
    # a certification judges stored replies: no conversation is played, so no patient
    patient, patient_targets = (None, []) if opts.reference else resolve_patient(opts, judge, judge_targets, chosen)
    roles = {judge_role(i): target for i, target in enumerate(judge_targets)}
    roles |= {patient_role(i): target for i, target in enumerate(patient_targets)}
    demo = model == BUNDLED_MODEL and suite == "starter"
    spec = RunSpec(model=ModelUnderTest(label=model, target=model_target, endpoint=endpoint),
                   judges=Judges(info=judge, ensemble=ensemble_option(opts.options)), patient=patient,
                   suite=suite, mode=opts.mode, seed=opts.seed,
                   limit=DEMO_LIMIT if demo and opts.limit is None else opts.limit, subtasks=tuple(chosen),
                   roles=roles, options=dict(opts.options), trims=demo_trims(model, suite, judge),
                   n_boot=opts.n_boot, epochs=opts.epochs, execution=opts.execution, cost=opts.cost,
                   output=opts.output, reference=opts.reference)
    if opts.reference is None:
        _announce(spec, demo)
    return spec


def run_manifest(spec: RunSpec) -> dict[str, Any]:
    """Everything that changes what a run computes, with the versions that compute it (`run.json`). Settings
    that only bound, pace or show a run (timeouts, retries, connections, tasks at once, display, cache) may
    change between invocations of one run."""
    import inspect_ai

    return json.loads(json.dumps({
        "trustmh_version": trustmh.__version__, "inspect_version": inspect_ai.__version__,
        "model": spec.model.label, "suite": spec.suite, "mode": spec.mode, "seed": spec.seed, "limit": spec.limit,
        "judges": list(spec.judges.info.members), "judge_validated": spec.judges.info.validated,
        "subtasks": list(spec.subtasks), "options": spec.recorded_options(), "n_boot": spec.n_boot,
        # one administration (the default) is left out, as manifests written before `--epochs` have it
        **({"epochs": spec.epochs} if spec.epochs != 1 else {}),
    }, default=str))


# What run.json records beside the user's own keys (`RunSpec.recorded_options`): rebuilt by `resolve`.
ROLE_KEYS = ("model", "judges", "patient", "endpoint")


def options_from_manifest(manifest: dict[str, Any], out: Path | Url) -> RunOptions:
    """The request that reproduces a run from its manifest (`run.json`), for merging its shards: resolved
    by `resolve` as a command line is."""
    judges = list(manifest.get("judges") or [])
    recorded = dict(manifest.get("options") or {})
    patient = recorded.get("patient")
    options = {k: v for k, v in recorded.items() if k not in ROLE_KEYS}
    return RunOptions(model=manifest["model"], suite=manifest["suite"], subtasks=list(manifest["subtasks"]),
                      limit=manifest.get("limit"), judge=judges[0] if judges else None,
                      more_judges=judges[1:], no_judge=not judges,
                      judge_validated=bool(manifest.get("judge_validated")), mode=manifest["mode"],
                      patient=patient, seed=int(manifest["seed"]), out=out, n_boot=int(manifest["n_boot"]),
                      epochs=int(manifest.get("epochs", 1)), options=options)
