"""Statistics: seeded bootstrap intervals and agreement measures. numpy-vectorised; no Inspect imports."""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np


def mean_or_none(values: Iterable[float | None]) -> float | None:
    """The mean of the values that are numbers (None and NaN left out); None when none is."""
    kept = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    return float(np.mean(kept)) if kept else None
