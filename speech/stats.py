"""The one percentile of the project: benchmarks, `speech eval` and the server's /metrics use it."""

from __future__ import annotations

import math
from typing import Iterable


def percentile(values: Iterable[float], q: float) -> float | None:
    """Linear-interpolation percentile (numpy's default method), `q` in [0, 100].

    None when there are no values: a figure that cannot be measured is reported as absent, never as 0.
    NaN values are an error (they would sort anywhere and give a meaningless figure).
    """
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be in [0, 100], got {q}")
    data = sorted(float(v) for v in values)
    if not data:
        return None
    if any(math.isnan(v) for v in data):
        raise ValueError("percentile of values containing NaN")
    pos = (len(data) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)
