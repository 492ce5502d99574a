"""A certification as a run's request: the typed part of `RunOptions`/`RunSpec` that says which reference set's
fixed replies the run judges (`trustmh judge certify`, docs/judges.md#certify)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trustmh.flag_values import FlagValue

# What stands where a model under test would in a certification: the replies are fixed, none is generated.
FIXED_REPLIES = "mockllm/model"


@dataclass(frozen=True)
class ReferenceRun:
    """A judge certified on a reference set (`trustmh judge certify`, docs/judges.md#certify): the run judges the
    reference's fixed replies (no generation, no model under test: `FIXED_REPLIES`) with the spec's judges, through
    the run's stages (`select.plan_reference`, the one Inspect call, `collect`)."""

    name: str  # `--reference NAME` (or the CSV file)
    subtask: str  # the sub-task whose judge is certified
    path: str | None = None  # `--reference-path`: where the reference's files are (None: the data registry's)
    # The sub-task option that folder fills, as the reference declares it (`ReferenceSource.path_option`).
    path_option: str | None = None

    def folder_options(self) -> dict[str, Any]:
        """What the sub-task reads of `--reference-path` (`ctx.options`; it wins over a `-O` key of that name)."""
        # the value remembers its flag: a message about the folder names `--reference-path`, not the option
        return {self.path_option: FlagValue(self.path, "--reference-path")} if self.path_option and self.path else {}
