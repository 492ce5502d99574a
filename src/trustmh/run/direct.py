"""A `RunSpec` given whole by a caller that has no command line to resolve: Inspect's own `inspect eval
trustmh/<task>` (`run/registry.py`), the context a log carries (`tasks.context_from_dict`) and the rescoring
commands (`cli/rescore.py`, `cli/rescore_mentalbench.py`). They know the settings already; `resolve`'s checks
and defaults (the bundled model, the offline demo's trims, the patient) are a command line's, not theirs. Their
`RunContext` then comes from `RunSpec.context()` like a run's, so a context is made one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from trustmh.core import EnsembleRule, Mode, Patient, judge_info
from trustmh.run.calls import judge_role
from trustmh.run.config import Judges, ModelUnderTest, RunSpec
from trustmh.run.parts import Execution


def direct_spec(*, suite: str = "trustmh", mode: Mode = "default", seed: int = 0, limit: int | None = None,
                subtasks: Sequence[str] = (), judges: Sequence[Any] = (), judge_validated: bool = False,
                ensemble: EnsembleRule | None = None, options: Mapping[str, Any] | None = None,
                model: str | None = None, model_target: Any = None, patient: Patient | None = None,
                n_boot: int = 2000, epochs: int = 1, execution: Execution | None = None) -> RunSpec:
    """The spec of settings already known. `judges`: model strings or Inspect `Model` objects, in order (the
    first plays Inspect's `grader` role; their labels are what the context records); `model`: the label of
    the model under test (None: whatever model Inspect is given), `model_target` what Inspect is given for it
    (default: the label)."""
    labels = tuple(str(j) for j in judges)
    return RunSpec(model=ModelUnderTest(label=model, target=model if model_target is None else model_target),
                   judges=Judges(info=judge_info(labels, validated=judge_validated, seed=seed), ensemble=ensemble),
                   patient=patient, suite=suite, mode=mode, seed=seed, limit=limit, subtasks=tuple(subtasks),
                   roles={judge_role(i): judge for i, judge in enumerate(judges)}, options=dict(options or {}),
                   trims={}, n_boot=n_boot, epochs=epochs, execution=execution or Execution())
