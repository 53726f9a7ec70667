"""Fleet-relative outliers and repeat stability.

A node can pass the absolute bar and still be the slowest of 64 by a wide margin: a
degraded DIMM, a PCIe link trained at x8, a cable at a lower rate. :func:`fleet_outliers`
flags the subjects (nodes, pairs, rails) whose value sits both

* more than ``mads`` scaled MADs (median absolute deviation × 1.4826) below the fleet
  median, and
* more than ``min_drop`` (a fraction) below it,

so that a very tight fleet (MAD near 0) does not flag noise, and a noisy fleet does not
flag a node that is only a little slow. Fewer than ``min_subjects`` subjects: nothing is
flagged (a median of three means little). For metrics where lower is better (latency),
"below" reads "above".

:func:`summarize` describes the repeats of one series: median, spread (MAD and min..max)
and whether the coefficient of variation is above a threshold (unstable).
"""

from __future__ import annotations

import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from aibench import stats

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class Outlier:
    value: float
    median: float
    mads: float  # how many scaled MADs away (inf when the MAD is 0)
    drop: float  # fraction away from the median, positive = worse
    text: str


def fleet_outliers(
    values: Mapping[K, float],
    *,
    mads: float = 3.5,
    min_drop: float = 0.05,
    min_subjects: int = 5,
    higher_is_better: bool = True,
) -> dict[K, Outlier]:
    """The subjects of ``values`` that sit far on the bad side of the fleet median."""
    if len(values) < min_subjects:
        return {}
    xs = list(values.values())
    med = float(statistics.median(xs))
    spread = stats.mad(xs)
    if med == 0:
        return {}
    out: dict[K, Outlier] = {}
    for key, x in values.items():
        worse = (med - x) if higher_is_better else (x - med)
        drop = worse / abs(med)
        n_mads = worse / spread if spread > 0 else (float("inf") if worse > 0 else 0.0)
        if worse > 0 and n_mads > mads and drop > min_drop:
            where = "below" if higher_is_better else "above"
            shown = "many" if spread == 0 else f"{n_mads:.1f}"
            out[key] = Outlier(
                value=x,
                median=med,
                mads=n_mads,
                drop=drop,
                text=(
                    f"fleet outlier: {shown} MADs / {drop * 100:.1f}% {where} the fleet "
                    f"median {med:.4g} of {len(values)}"
                ),
            )
    return out


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mad: float
    low: float
    high: float
    cv: float
    unstable: bool

    @property
    def text(self) -> str:
        flag = " UNSTABLE" if self.unstable else ""
        return (
            f"median {self.median:.4g} (MAD {self.mad:.3g}, {self.low:.4g}..{self.high:.4g}, "
            f"CV {self.cv * 100:.1f}%, n={self.n}){flag}"
        )


def summarize(values: Sequence[float], *, max_cv: float = 0.05) -> Summary:
    """Median and spread of the repeats of one series; unstable when CV > ``max_cv``."""
    if not values:
        raise ValueError("summarize of no values")
    c = stats.cv(values)
    return Summary(
        n=len(values),
        median=float(statistics.median(values)),
        mad=stats.mad(values),
        low=min(values),
        high=max(values),
        cv=c,
        unstable=c > max_cv,
    )
