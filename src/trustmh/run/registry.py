"""One Inspect `@task` per sub-task, so `inspect eval trustmh/<task_name>` works.

Task arguments (`-T name=value`): mode, suite, limit, seed, judge (a model string; enables judge scoring),
judge_validated, epochs (repeated administrations, as `trustmh run --epochs`), and any sub-task option (e.g.
`-T swmh_path=/data/swmh.csv`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from inspect_ai import Task, task

from trustmh.catalogue import ALL_TASKS, SubtaskInfo
from trustmh.core import TrustmhError
from trustmh.inspect_compat import prerequisite_error
from trustmh.judges.ensemble import ensemble_option
from trustmh.run.config import check_epochs
from trustmh.run.direct import direct_spec
from trustmh.run.tasks import build_task


def _make(info: SubtaskInfo) -> Callable[..., Task]:
    def subtask_task(mode: str = "default", suite: str = "trustmh", limit: int | None = None, seed: int = 0,
                     judge: str | None = None, judge_validated: bool = False, epochs: int = 1,
                     **options: Any) -> Task:
        try:
            ctx = direct_spec(mode=mode, seed=int(seed), suite=suite,  # type: ignore[arg-type]
                              limit=None if limit is None else int(limit), subtasks=[info.id],
                              judges=[judge] if judge else [], judge_validated=bool(judge_validated),
                              options=options, ensemble=ensemble_option(options), epochs=int(epochs)).context()
            check_epochs(ctx.epochs, [info.id])
            return build_task(info.id, ctx)
        except TrustmhError as exc:
            # Inspect prints a PrerequisiteError as its message alone: one clear line, not a traceback
            raise prerequisite_error(f"trustmh: error: {exc}") from None

    subtask_task.__name__ = info.task_name
    subtask_task.__doc__ = f"{info.title} ({info.id})"
    return task(name=info.task_name)(subtask_task)


TASKS: dict[str, Callable[..., Task]] = {info.task_name: _make(info) for info in ALL_TASKS}
globals().update(TASKS)
