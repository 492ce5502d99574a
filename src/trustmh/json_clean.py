"""Numbers made JSON-safe: what could not be computed (NaN, inf) is null, numpy values are plain Python; and
plain copies of JSON-like values (`plain_copy`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any


def clean_number(x: Any) -> Any:
    """NaN/inf are not JSON: a metric that could not be computed is None."""
    if x is None:
        return None
    if isinstance(x, bool):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        return x
    if math.isnan(f) or math.isinf(f):
        return None
    if isinstance(x, int) or (hasattr(x, "dtype") and getattr(x.dtype, "kind", "") in "iu"):
        return int(x)
    return f


def clean_json(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): clean_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [clean_json(v) for v in obj]
    if hasattr(obj, "tolist"):
        return clean_json(obj.tolist())
    if isinstance(obj, str | bool) or obj is None:
        return obj
    return clean_number(obj)


_ATOMS = (str, int, float, bool, type(None))


@dataclass
class _Boxed:
    value: Any


def plain_copy(value: Any) -> Any:
    """What `dataclasses.asdict` makes of a field's value: a deep copy with dataclasses as dicts. Dicts, lists,
    tuples and atoms (the items' JSON-like metadata) are copied here; anything else as `asdict` would."""
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {plain_copy(k): plain_copy(v) for k, v in value.items()}
    if kind is list:
        return [plain_copy(v) for v in value]
    if kind is tuple:
        return tuple(plain_copy(v) for v in value)
    return asdict(_Boxed(value))["value"]
