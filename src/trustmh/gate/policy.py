"""Release-gate policies: loading and validation (docs/gate.md#policy-format).

A policy is a TOML file written before the results are seen. Everything in it is checked when it is loaded,
so a typo is a one-line error naming the file and the key, never a check that silently reads "not in this
run": types (a boolean is `true`/`false`, never the string "false"), ranges (rates in [0, 1], a mean within
its sub-task's scale, severities > 0, `min_n` a whole number ≥ 1, no NaN or infinity), sub-tasks of the
policy's suite, metrics that carry an interval, unique ids, and a limit on the side that matches the metric's
direction.

Plain Python; no Inspect.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from trustmh.catalogue import catalogue
from trustmh.core import TrustmhError
from trustmh.data.files import MAX_CONFIG_BYTES, read_text_bounded
from trustmh.stats.judge_agreement import JUDGE_METRICS

LABEL_TYPES = tuple(JUDGE_METRICS)
_TOP_KEYS = {"version", "note", "suite", "min_n", "require_validated_judge", "require_probe", "judge_min", "judge_max", "check",
             "rule", "clause"}  # rule and clause: policy packs mapped to a law (trustmh.gate.clauses)
_CHECK_KEYS = {"id", "title", "subtask", "metric", "max", "min", "severity", "count", "total", "rate", "min_n",
               "judge_min", "judge_max", "personas"}


@dataclass
class Check:
    """One check of a policy: a limit on one metric of one sub-task, applied to the protective bound."""

    id: str
    subtask: str
    metric: str = "value"
    title: str = ""
    max: float | None = None
    min: float | None = None
    severity: float = 1.0
    count: str | None = None  # a counted rate's count and total fields (a Wilson interval)
    total: str | None = None
    rate: bool = False  # the metric is a share of items in [0, 1]: errored samples count against the model
    min_n: int | None = None  # overrides the policy's min_n for this check
    judge_min: dict[str, float] = field(default_factory=dict)  # judge thresholds for this check (lower bound)
    judge_max: dict[str, float] = field(default_factory=dict)  # (upper bound), e.g. mae
    # A jurisdiction's check: decided on the conversations whose persona lives there (their counts in the
    # sub-task's metrics.by_locale), the other countries' figures shown beside, deciding nothing.
    personas: tuple[str, ...] = ()
    # A counted rate whose items share a unit: the key of its clustered interval in the sub-task's metrics
    # (`Subtask.rate_intervals`), decided on instead of the counts' Wilson interval (docs/statistics.md#the-unit).
    interval_key: str | None = None

    @property
    def kind(self) -> str:
        return "max" if self.max is not None else "min"

    @property
    def limit(self) -> float:
        return float(self.max if self.max is not None else self.min)  # type: ignore[arg-type]

    @property
    def counted(self) -> bool:
        return bool(self.count and self.total)


@dataclass
class Policy:
    version: str
    note: str
    min_n: int
    require_validated_judge: bool  # judge-based checks need a matching judge certificate
    checks: list[Check] = field(default_factory=list)
    source: str = ""
    suite: str = "trustmh"
    # judge thresholds by certificate label type: {"binary": {"sensitivity": 0.9}, ...}
    judge_min: dict[str, dict[str, float]] = field(default_factory=dict)
    judge_max: dict[str, dict[str, float]] = field(default_factory=dict)
    # a judge's certificate counts only with a passing bias battery beside it (docs/judge-probes.md#the-gate)
    require_probe: bool = False


# The shipped policies and packs: every `<name>.toml` here is one (`--policy NAME`); nothing else lists them.
POLICIES_DIR: Traversable = resources.files("trustmh.gate.policies")


def shipped_policies() -> list[str]:
    """Names of the policies trustmh ships (`--policy NAME`)."""
    return sorted(p.name.removesuffix(".toml") for p in POLICIES_DIR.iterdir() if p.name.endswith(".toml"))


def shipped_policy_text(name: str) -> str:
    return POLICIES_DIR.joinpath(f"{name}.toml").read_text(encoding="utf-8")


def load_policy(path: str | Path | None = None) -> Policy:
    """The policy at `path` (a file, or the name of a shipped policy), else the shipped default.

    Raises TrustmhError with one line naming the file and the key on anything malformed."""
    if path is None or (not Path(path).exists() and str(path) in shipped_policies()):
        name = "default" if path is None else str(path)
        text = shipped_policy_text(name)
        source = f"trustmh {name} policy"
    else:
        try:
            text, source = read_text_bounded(path, MAX_CONFIG_BYTES, f"--policy {path}"), str(path)
        except TrustmhError as exc:
            raise TrustmhError(f"{exc}; shipped policies: {', '.join(shipped_policies())}") from None
    return parse_policy(text, source)


def parse_policy(text: str, source: str) -> Policy:
    """Parse and validate a policy's TOML text; `source` names it in errors."""
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TrustmhError(f"{source}: not valid TOML ({' '.join(str(exc).split())})") from None
    v = _Validator(source)
    v.unknown(raw, _TOP_KEYS, "")
    suite = v.string(raw, "suite", "", default="trustmh")
    known = _known_subtasks(suite)
    if known is None:
        raise TrustmhError(f"{source}: key 'suite': unknown suite {suite!r}")
    policy = Policy(version=v.string(raw, "version", "", default="unversioned"),
                    note=v.string(raw, "note", "", default=""),
                    min_n=v.whole(raw, "min_n", "", default=30),
                    require_validated_judge=v.boolean(raw, "require_validated_judge", "", default=True),
                    require_probe=v.boolean(raw, "require_probe", "", default=False),
                    source=source, suite=suite,
                    judge_min=v.judge_by_type(raw, "judge_min"), judge_max=v.judge_by_type(raw, "judge_max"))
    for kind in sorted(set(policy.judge_min) & set(policy.judge_max)):
        v.interval(policy.judge_min[kind], policy.judge_max[kind], "", f"judge_min.{kind}", f"judge_max.{kind}")
    checks = raw.get("check", [])
    if not isinstance(checks, list) or not checks or not all(isinstance(c, dict) for c in checks):
        raise TrustmhError(f"{source}: no [[check]] tables (each check is a [[check]] table)")
    seen: set[str] = set()
    for i, c in enumerate(checks):
        check = v.check(c, i, known)
        if check.id in seen:
            raise TrustmhError(f"{source}: check {i + 1} key 'id': duplicate id {check.id!r}")
        seen.add(check.id)
        policy.checks.append(check)
    return policy


def _known_subtasks(suite: str) -> dict[str, Any] | None:
    cat = catalogue()
    if suite == "trustmh":
        return {cls.id: cls for cls in cat.subtasks}
    if suite in cat.suite_tasks:
        return {cls.id: cls for cls in cat.suite_tasks[suite]}
    return None


def value_range(cls: Any) -> tuple[float, float]:
    """The range a sub-task's primary value can take, from its anchors (0-1 at least): a limit outside it can
    never be met or never be missed, so it is a policy error."""
    ends = [float(x) for pair in dict(cls.anchors).values() for x in pair]
    return min([0.0, *ends]), max([1.0, *ends])


def score_scale(cls: Any) -> tuple[float, float]:
    """The ends of a sub-task's per-item score, from its anchors (a 1-5 rubric: (1, 5)); (0, 1) without
    anchors. What an anytime-valid interval for a mean rescales (`stats.sequential.mean_sequence`)."""
    ends = [float(x) for pair in dict(getattr(cls, "anchors", None) or {}).values() for x in pair]
    return (min(ends), max(ends)) if ends and max(ends) > min(ends) else (0.0, 1.0)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


class _Validator:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, where: str, key: str, why: str) -> TrustmhError:
        return TrustmhError(f"{self.source}: {where + ': ' if where else ''}key {key!r}: {why}")

    def unknown(self, table: dict[str, Any], allowed: set[str], where: str) -> None:
        extra = sorted(set(table) - allowed)
        if extra:
            raise self.fail(where, extra[0], f"unknown key (known: {', '.join(sorted(allowed))})")

    def string(self, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        if key not in table:
            if default is None:
                raise self.fail(where, key, "missing (a string)")
            return default
        value = table[key]
        if not isinstance(value, str) or (default is None and not value.strip()):
            raise self.fail(where, key, f"must be a non-empty string, not {value!r}")
        return value

    def boolean(self, table: dict[str, Any], key: str, where: str, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(where, key, f"must be true or false (a TOML boolean, unquoted), not {value!r}")
        return value

    def whole(self, table: dict[str, Any], key: str, where: str, default: int | None) -> int | None:
        value = table.get(key, default)
        if value is None:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise self.fail(where, key, f"must be a whole number ≥ 1, not {value!r}")
        return value

    def number(self, value: Any, where: str, key: str, lo: float, hi: float) -> float:
        if not _is_number(value) or not math.isfinite(value):
            raise self.fail(where, key, f"must be a finite number, not {value!r}")
        if not lo <= value <= hi:
            raise self.fail(where, key, f"{value!r} is outside [{lo:g}, {hi:g}]")
        return float(value)

    def interval(self, lows: dict[str, float], highs: dict[str, float], where: str, low_key: str,
                 high_key: str) -> None:
        """A metric bounded on both sides: the floor must not be above the ceiling (a reversed interval no
        figure can meet, or a typo)."""
        for metric in sorted(set(lows) & set(highs)):
            if lows[metric] > highs[metric]:
                raise self.fail(where, f"{low_key}.{metric}", f"{lows[metric]:g} is above {high_key}.{metric} = "
                                f"{highs[metric]:g} (a reversed interval)")

    def judge_table(self, value: Any, where: str, key: str, kinds: tuple[str, ...]) -> dict[str, float]:
        if not isinstance(value, dict):
            raise self.fail(where, key, f"must be a table of agreement metric = number, not {value!r}")
        ranges = {m: r for kind in kinds for m, r in JUDGE_METRICS[kind].items()}
        out = {}
        for metric, x in value.items():
            rng = ranges.get(metric)
            if rng is None and metric.startswith("recall_") and "categorical" in kinds:
                rng = (0.0, 1.0)
            if rng is None:
                raise self.fail(where, f"{key}.{metric}", f"unknown judge agreement metric (known: "
                                f"{', '.join(sorted(ranges))}, recall_<class>)")
            out[metric] = self.number(x, where, f"{key}.{metric}", *rng)
        return out

    def judge_by_type(self, raw: dict[str, Any], key: str) -> dict[str, dict[str, float]]:
        value = raw.get(key, {})
        if not isinstance(value, dict):
            raise self.fail("", key, "must be a table of label types (binary, ordinal, categorical)")
        out = {}
        for kind, table in value.items():
            if kind not in LABEL_TYPES:
                raise self.fail("", f"{key}.{kind}", f"unknown label type (known: {', '.join(LABEL_TYPES)})")
            out[kind] = self.judge_table(table, "", f"{key}.{kind}", (kind,))
        return out

    def check(self, c: dict[str, Any], i: int, known: dict[str, Any]) -> Check:
        where = f"check {i + 1}" + (f" ({c['id']})" if isinstance(c.get("id"), str) else "")
        self.unknown(c, _CHECK_KEYS, where)
        cid = self.string(c, "id", where)
        subtask = self.string(c, "subtask", where)
        cls = known.get(subtask)
        if cls is None:
            close = [s for s in known if s.split("/")[-1] == subtask.split("/")[-1]]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise self.fail(where, "subtask", f"unknown sub-task {subtask!r} for this policy's suite{hint}")
        metric = self.string(c, "metric", where, default="value")
        title = self.string(c, "title", where, default="")
        if ("max" in c) == ("min" in c):
            raise self.fail(where, "max", "give exactly one of 'max' (a harm rate's upper bound) or 'min' (a safe "
                                          "rate's lower bound)")
        kind = "max" if "max" in c else "min"
        rate = self.boolean(c, "rate", where, default=False)
        count, total = c.get("count"), c.get("total")
        declared = dict(getattr(cls, "counted_rates", {}) or {})
        if metric == "value":
            if count is not None or total is not None:
                raise self.fail(where, "count", "the primary value carries its own interval; count and total "
                                                "are for counted rates")
            lo, hi = (0.0, 1.0) if rate else value_range(cls)
            direction = _direction(cls)
            if direction is not None and (kind == "max") != (direction == "lower"):
                side = "lower is better, so the limit is a 'max'" if direction == "lower" else \
                    "higher is better, so the limit is a 'min'"
                raise self.fail(where, kind, f"{subtask}'s value: {side}")
        else:
            if metric not in declared:
                gateable = ", ".join(["value", *sorted(declared)])
                raise self.fail(where, "metric", f"{metric!r} is not a metric of {subtask} with an interval "
                                                 f"(gateable: {gateable})")
            want = declared[metric]
            if (count, total) != (None, None) and (count, total) != tuple(want):
                raise self.fail(where, "count", f"{metric!r} is counted by {want[0]!r} of {want[1]!r}")
            count, total = want
            lo, hi = 0.0, 1.0
            rate = True
            if kind != "max":
                raise self.fail(where, "min", f"{metric!r} is a rate of harm, so the limit is a 'max'")
        limit = self.number(c[kind], where, kind, lo, hi)
        severity = c.get("severity", 1.0)
        if _is_number(severity) and severity <= 0:
            raise self.fail(where, "severity", f"must be > 0, not {severity!r}")
        severity = self.number(severity, where, "severity", 0.0, 1000.0)
        every = tuple(LABEL_TYPES)
        judge_min = self.judge_table(c.get("judge_min", {}), where, "judge_min", every)
        judge_max = self.judge_table(c.get("judge_max", {}), where, "judge_max", every)
        self.interval(judge_min, judge_max, where, "judge_min", "judge_max")
        personas = c.get("personas", [])
        if not isinstance(personas, list) or not all(isinstance(x, str) and x.strip() for x in personas):
            raise self.fail(where, "personas", f"must be a list of country codes (e.g. [\"US\"]), not {personas!r}")
        if personas and count is None:
            raise self.fail(where, "personas", "only a counted rate can be decided on one jurisdiction's personas")
        return Check(id=cid, subtask=subtask, metric=metric, title=title, severity=severity, count=count,
                     total=total, rate=rate, min_n=self.whole(c, "min_n", where, default=None),
                     judge_min=judge_min, judge_max=judge_max, personas=tuple(personas),
                     interval_key=dict(getattr(cls, "rate_intervals", {}) or {}).get(metric),
                     **{kind: limit})


def _direction(cls: Any) -> str | None:
    """The sub-task's direction when both modes agree (a limit side that contradicts it is a typo)."""
    try:
        sub = cls()
        both = {sub.direction("faithful"), sub.direction("default")}
    except Exception:  # noqa: BLE001 - a sub-task that cannot say: no check
        return None
    return both.pop() if len(both) == 1 else None
