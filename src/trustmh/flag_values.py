"""An option's value that the user gave through a command's own flag, so that a message about it names what was
typed: `--reference-path X` fills the reference's folder option (`siri2_dir`), `--tier2-limit 5` fills
`tier2_limit`; an error about either must say the flag, never `-O siri2_dir=X`, an option the user never wrote.

The value is a `str` (options are compared, recorded in results.json and fingerprinted as the plain text), and
it carries the flag along through the run's options to every reader that names it in a message (`as_typed`)."""

from __future__ import annotations

from typing import Any


class FlagValue(str):
    """A sub-task option's value given by a flag: `FlagValue("/data/x", "--reference-path")`; a switch says
    what was typed (`FlagValue("1", "--full", typed="--full")`)."""

    flag: str
    typed: str  # what the user wrote: the flag and its value

    def __new__(cls, value: object, flag: str, typed: str | None = None) -> FlagValue:
        self = super().__new__(cls, str(value))
        self.flag = flag
        self.typed = typed if typed is not None else f"{flag} {value}"
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # a run's options cross to its worker processes pickled
        return FlagValue, (str(self), self.flag, self.typed)


def as_typed(key: str, value: object) -> str:
    """The option `key` with its value as the user typed it: `--reference-path X` for a value given by a flag,
    else `-O key=X`."""
    return value.typed if isinstance(value, FlagValue) else f"-O {key}={value}"


def flag_of(key: str, value: object) -> str:
    """The name the user typed for option `key`: `--tier2-limit` for a value given by a flag, else `-O key`."""
    return value.flag if isinstance(value, FlagValue) else f"-O {key}"
