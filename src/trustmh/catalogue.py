"""The catalogue of pillars and sub-tasks, derived from the pillar packages (`trustmh/pillars/<pillar>/`).

Each pillar package declares its `TITLE`, its `SUBTASKS` (the classes, in report order), whether it is one of
the original benchmark's eight (`FAITHFUL`) and its `POSITION` in reports; a suite of its own (MentalBench)
declares `SUITE` instead. A pillar may also declare `REFERENCES`: the human-labelled reference sets its
judges are certified on (`trustmh.judges.references.ReferenceSource`), found by name. Everything here is computed from those declarations and from the classes' own
attributes (id, task name, title, anchors): nothing about a sub-task is written twice.

The catalogue is built on first use (module `__getattr__`), so importing this module stays cheap.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cache
from typing import Any

import trustmh.pillars
from trustmh.core import Mode, Subtask, TrustmhError
from trustmh.judges.references import ReferenceSource

# Bump when an anchor changes; written into every results.json.
ANCHORS_VERSION = "2026-11-22.1"

SubtaskInfo = type[Subtask]  # a catalogue entry is the sub-task's class: its declarations are the entry


@dataclass(frozen=True)
class Catalogue:
    pillars: tuple[str, ...]  # TrustMH-Bench pillars, in report order
    faithful_pillars: tuple[str, ...]  # the original's eight (faithful mode has no Conversation pillar)
    pillar_titles: dict[str, str]
    subtasks: tuple[type[Subtask], ...]  # every TrustMH-Bench sub-task, in report order
    suite_tasks: dict[str, tuple[type[Subtask], ...]]  # suites other than TrustMH-Bench
    # every pillar's reference sets for certifying its judges (`REFERENCES`), by name
    references: dict[str, ReferenceSource]


@cache
def catalogue() -> Catalogue:
    """Walk `trustmh.pillars` and collect every pillar's declarations."""
    pillars: list[tuple[int, str, Any]] = []
    suites: dict[str, tuple[type[Subtask], ...]] = {}
    titles: dict[str, str] = {}
    references: dict[str, ReferenceSource] = {}
    for info in pkgutil.iter_modules(trustmh.pillars.__path__):
        module = importlib.import_module(f"trustmh.pillars.{info.name}")
        titles[info.name] = module.TITLE
        for source in getattr(module, "REFERENCES", ()):
            if source.name in references:
                raise TrustmhError(f"two certification references are named {source.name!r}")
            references[source.name] = source
        if module.SUITE == "trustmh":
            pillars.append((module.POSITION, info.name, module))
        else:
            suites[module.SUITE] = tuple(module.SUBTASKS)
    pillars.sort(key=lambda entry: entry[0])
    subtasks = tuple(cls for _, _, module in pillars for cls in module.SUBTASKS)
    for cls in subtasks + tuple(c for cs in suites.values() for c in cs):
        if not (cls.id and cls.task_name and cls.title and set(cls.anchors) >= {"faithful", "default"}):
            raise TypeError(f"{cls.__name__} must declare id, task_name, title and anchors for both modes")
    by_id = {cls.id: cls for cls in subtasks + tuple(c for cs in suites.values() for c in cs)}
    for source in references.values():
        _check_reference(source, by_id)
    return Catalogue(pillars=tuple(name for _, name, _ in pillars),
                     faithful_pillars=tuple(name for _, name, m in pillars if m.FAITHFUL),
                     pillar_titles=titles, subtasks=subtasks, suite_tasks=suites,
                     references=dict(sorted(references.items())))


def _check_reference(source: ReferenceSource, subtasks: dict[str, type[Subtask]]) -> None:
    """A declared reference names sub-tasks of the catalogue whose judges can be fingerprinted (their
    `judge_templates`)."""
    for sid in (source.subtask, *source.also):
        cls = subtasks.get(str(sid))
        if cls is None or not cls.judge_templates:
            raise TypeError(f"reference {source.name!r}: {sid!r} is not a sub-task with judge_templates")


def __getattr__(name: str) -> Any:
    """The catalogue's tables under their familiar names, computed on first use."""
    c = catalogue()
    all_tasks = c.subtasks + tuple(t for ts in c.suite_tasks.values() for t in ts)
    tables = {
        "PILLARS": c.pillars,
        "FAITHFUL_PILLARS": c.faithful_pillars,
        "PILLAR_TITLES": {p: c.pillar_titles[p] for p in c.pillars},
        "SUBTASKS": c.subtasks,
        "SUITE_TASKS": c.suite_tasks,
        "ALL_TASKS": all_tasks,
        "BY_ID": {s.id: s for s in all_tasks},
        "BY_TASK_NAME": {s.task_name: s for s in all_tasks},
    }
    if name not in tables:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return tables[name]


def pillars_for_mode(mode: Mode) -> tuple[str, ...]:
    """The pillars of a mode: default mode adds Conversation to the original eight."""
    c = catalogue()
    return c.pillars if mode == "default" else c.faithful_pillars


def subtasks_for_mode(mode: Mode) -> list[type[Subtask]]:
    return [s for s in catalogue().subtasks if mode == "default" or not s.default_only]


def lookup(name: str) -> type[Subtask] | None:
    """The sub-task class for an id ("pillar/name") or an Inspect task name, else None."""
    by_id = __getattr__("BY_ID")
    return by_id.get(name) or __getattr__("BY_TASK_NAME").get(name)


def is_implemented(subtask_id: str) -> bool:
    return lookup(subtask_id) is not None


def get_subtask(subtask_id: str) -> Subtask:
    """Instantiate the implementation of a sub-task id ("pillar/name") or Inspect task name."""
    cls = lookup(subtask_id)
    if cls is None:
        known = ", ".join(s.id for s in catalogue().subtasks)
        raise TrustmhError(f"unknown sub-task {subtask_id!r}; known: {known}")
    return cls()


def select(pillars: list[str] | None, subtasks: list[str] | None, mode: Mode,
           suite: str = "trustmh") -> list[type[Subtask]]:
    """The sub-tasks a run covers, in catalogue order, with clear errors for unknown names."""
    c = catalogue()
    if suite in c.suite_tasks:
        if pillars:
            raise TrustmhError(f"--pillars does not apply to the {suite} suite")
        return list(c.suite_tasks[suite])
    chosen = subtasks_for_mode(mode)
    if pillars:
        unknown = [p for p in pillars if p not in c.pillars]
        if unknown:
            raise TrustmhError(f"unknown pillar(s) {unknown}; known: {', '.join(c.pillars)}")
        absent = [p for p in pillars if p not in pillars_for_mode(mode)]
        if absent:
            raise TrustmhError(f"pillar(s) {absent} exist in default mode only (faithful mode keeps the "
                               "original's eight)")
        chosen = [s for s in chosen if s.pillar in pillars]
    if subtasks:
        wanted = []
        for name in subtasks:
            info = lookup(name)
            if info is None:
                raise TrustmhError(f"unknown sub-task {name!r}; see `trustmh list`")
            wanted.append(info.id)
        chosen = [s for s in chosen if s.id in wanted]
    return chosen
