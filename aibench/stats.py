"""The project's one definition of each statistic: percentile, median absolute deviation
(and its scale), coefficient of variation, the aggregates a spec names.

Used by the thresholds engine, the outlier rule, the history's bands and the soak's
series alike. Pure functions over sequences of floats; no numpy (the inputs are a handful
of repeats or a few thousand pairs). Percentiles interpolate linearly between closest
ranks (the "linear" method of numpy.percentile): never outside the values, so a p99 never
exceeds the hottest sample. The MAD is scaled by 1.4826 so that it estimates the standard
deviation of normally distributed data. A parser that reads a statistic a tool computed
its own way keeps the tool's number (its module says which definition the tool used).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

MAD_SCALE = 1.4826


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        raise ValueError("percentile of no values")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    if lo == hi:
        return xs[lo]
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def aggregate(name: str, values: Sequence[float]) -> float:
    """median, mean, min, max, sum, p10, p90 of ``values`` (non-empty)."""
    if not values:
        raise ValueError("aggregate of no values")
    if name == "median":
        return float(statistics.median(values))
    if name == "mean":
        return float(statistics.fmean(values))
    if name == "min":
        return min(values)
    if name == "max":
        return max(values)
    if name == "sum":
        return float(math.fsum(values))
    if name.startswith("p") and name[1:].isdigit():
        return percentile(values, float(name[1:]))
    raise ValueError(f"unknown aggregate {name!r}")


def mad(values: Sequence[float]) -> float:
    """Scaled median absolute deviation (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    m = statistics.median(values)
    return float(statistics.median([abs(v - m) for v in values])) * MAD_SCALE


def cv(values: Sequence[float]) -> float:
    """Coefficient of variation (sample stdev / |mean|); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0 if all(v == 0 for v in values) else math.inf
    return statistics.stdev(values) / abs(mean)
