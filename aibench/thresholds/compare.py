"""Comparing two runs series by series, with significance from the repeats' spread.

A *series* is (tool, metric, step, dims, nodes); each run contributes its repeats. The
delta between the medians is *significant* when it is larger than ``k`` times the larger
scaled MAD of the two repeat sets and larger than ``min_rel`` of A's median; with one
repeat on either side there is no spread to judge by and significance is ``None``.
Whether a change is better or worse follows the metric's unit (time: lower is better).

Units: B's values are converted to A's unit when the two differ (fio latencies in us
before fio 3.0, in ns after); a unit of another dimension cannot be compared and the
series is listed in :attr:`Comparison.refused` with the reason, never as a delta.
The environment lines come from :func:`aibench.history.flatten_environment` (driver, CUDA,
NCCL, HCA firmware, kernel, OS, tool versions, in both the per-run and the preflight
shapes).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from aibench import stats, units
from aibench.history import env_diff, flatten_environment, higher_is_better, series_key
from aibench.model import Run


@dataclass(frozen=True)
class Delta:
    series: str
    unit: str
    a: float
    b: float
    n_a: int
    n_b: int
    noise: float
    significant: bool | None
    better: bool

    @property
    def rel(self) -> float:
        return (self.b - self.a) / self.a if self.a else 0.0

    @property
    def text(self) -> str:
        if self.significant is None:
            sig = "n/a (single repeat)"
        elif self.significant:
            sig = "SIGNIFICANT " + ("better" if self.better else "worse")
        else:
            sig = "within noise"
        return (
            f"{self.series} [{self.unit}]: {self.a:.4g} -> {self.b:.4g} ({self.rel * 100:+.1f}%, "
            f"n={self.n_a}/{self.n_b}, noise {self.noise:.3g}) {sig}"
        )


@dataclass(frozen=True)
class Comparison:
    deltas: tuple[Delta, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    env_changes: tuple[str, ...]
    refused: tuple[str, ...] = ()  # series that cannot be compared, with the reason


def _series(run: Run) -> dict[str, tuple[str, list[float]]]:
    """series -> (unit, repeat values in that unit: the first unit seen)."""
    out: dict[str, tuple[str, list[float]]] = {}
    for s in run.steps:
        if not s.ok:
            continue
        for m in s.measurements:
            key = series_key(m.tool, m.metric, m.step, m.dims, m.nodes)
            unit, values = out.setdefault(key, (m.unit, []))
            try:
                values.append(units.convert(m.value, m.unit, unit))
            except units.UnitError:
                continue  # a value of another dimension within one series: left out
    return out


def compare_runs(a: Run, b: Run, *, k: float = 3.0, min_rel: float = 0.02) -> Comparison:
    sa, sb = _series(a), _series(b)
    deltas = []
    refused = []
    for key in sorted(set(sa) & set(sb)):
        unit, va = sa[key]
        unit_b, vb = sb[key]
        if unit_b != unit:
            try:
                vb = [units.convert(v, unit_b, unit) for v in vb]
            except units.UnitError:
                refused.append(f"{key}: A in {unit}, B in {unit_b}: not comparable")
                continue
        ma, mb = float(statistics.median(va)), float(statistics.median(vb))
        noise = max(stats.mad(va), stats.mad(vb))
        diff = mb - ma
        sig: bool | None
        if len(va) < 2 or len(vb) < 2:
            sig = None
        else:
            sig = abs(diff) > k * noise and abs(diff) > min_rel * abs(ma)
        tool, metric = key.split("|")[:2]
        better = (diff > 0) == higher_is_better(metric, unit, tool)
        deltas.append(Delta(key, unit, ma, mb, len(va), len(vb), noise, sig, better))
    env = env_diff(flatten_environment(a.environment), flatten_environment(b.environment))
    return Comparison(
        deltas=tuple(deltas),
        only_a=tuple(sorted(set(sa) - set(sb))),
        only_b=tuple(sorted(set(sb) - set(sa))),
        env_changes=tuple(env),
        refused=tuple(refused),
    )
