"""Numbers made JSON-safe: what could not be computed (NaN, inf) is null, numpy values are plain Python."""

from __future__ import annotations

import math
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
