"""Fault localization: from pairwise network results to a list of suspects (the RMA list).

Input: one value per unordered pair of nodes (iperf3 throughput, ib_write_bw, NCCL
between two nodes), optionally node labels (leaf switch, rack). A pair is *slow* when it
sits more than ``min_drop`` below the median of all pairs. The evidence is then explained
in order, each step only with what the earlier ones left unexplained:

1. **group**: for a label value (``leaf: l03``), the pairs leaving the group, or the
   pairs inside it, are mostly slow (>= ``group_fraction``) *and* most members
   (>= ``group_fraction``) take part: a switch or its uplinks, not one node in it.
2. **node**: at least ``node_fraction`` of a node's remaining pairs are slow (and at
   least two): the node's NIC, cable or PCIe link.
3. **link**: every slow pair still unexplained: one port, cable or transceiver.

Each suspect divides its own slowdown (the median ratio of its slow pairs) out of the
pairs it explains; a pair still slow after that has a second fault of its own (a bad
cable out of a slow leaf) and is explained by the next step, so both faults are named.
Each :class:`Suspect` carries the pairs and values that convicted it.

:func:`run_suspects` reads a run's pairwise results as *comparable series* only, so that a
pair's value is never a median over things that differ by design:

* measurements spanning exactly two nodes, of OK steps;
* one group per step and per value of every dimension but the message size (so per
  collective ``op``, per perftest ``test`` type, per rail ``device`` / ``server_device``,
  per iperf3 direction and stream count), each at its own largest ``size_bytes``;
* where a run has several values of a dimension that does not change what the link
  carries (nccl-tests ``placement``, ``dtype``, ``redop``; iperf3 ``side``), one value:
  out_of_place, float, sum, receiver (else the most common one);
* values converted to one unit per group (a unit of another dimension is left out).

Every group is localized on its own; a suspect found in several groups (a bad node seen
on every rail, by ib_write_bw and NCCL) is named once per tool, with the groups listed in
``series`` and the worst ratio kept.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from aibench import tools, units
from aibench.model import Measurement, Run, StepResult

Pair = tuple[str, str]


@dataclass(frozen=True)
class Suspect:
    kind: str  # "group" | "node" | "link"
    name: str  # "leaf=l03", "gpu017", "gpu003+gpu041"
    slow_pairs: int
    pairs: int
    median_ratio: float  # median value of its slow pairs / fleet median
    evidence: tuple[tuple[str, str, float], ...]  # (a, b, value), worst first, at most 10
    series: tuple[str, ...] = ()  # the comparable series it was found in (run_suspects)
    unit: str = ""  # of the evidence values
    fleet_median: float | None = None  # of the series it was convicted in

    @property
    def text(self) -> str:
        where = f" ({'; '.join(self.series)})" if self.series else ""
        return (
            f"{self.kind} {self.name}: {self.slow_pairs} of {self.pairs} pairs slow, "
            f"at {self.median_ratio * 100:.0f}% of the fleet median{where}"
        )

    def to_dict(self, tool: str = "", metric: str = "") -> dict[str, Any]:
        """The suspect as stored in run.json (``Run.suspects``)."""
        return {
            "tool": tool,
            "metric": metric,
            "kind": self.kind,
            "name": self.name,
            "slow_pairs": self.slow_pairs,
            "pairs": self.pairs,
            "median_ratio": round(self.median_ratio, 4),
            "fleet_median": self.fleet_median,
            "unit": self.unit,
            "series": list(self.series),
            "evidence": [[a, b, v] for a, b, v in self.evidence],
            "text": self.text,
        }


def pair(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def localize(
    values: Mapping[Pair, float],
    *,
    labels: Mapping[str, Mapping[str, str]] | None = None,
    min_drop: float = 0.15,
    node_fraction: float = 0.5,
    group_fraction: float = 0.6,
) -> list[Suspect]:
    """The suspects explaining the slow pairs of ``values`` (higher is better)."""
    if not values:
        return []
    norm = {pair(*p): v for p, v in values.items()}
    median = float(statistics.median(norm.values()))
    if median <= 0:
        return []
    found = _Suspects(norm, median, median * (1 - min_drop))
    found.groups(labels or {}, group_fraction)  # 1. groups
    found.nodes(node_fraction)  # 2. nodes
    for p in sorted(found.slow(), key=lambda p: found.residual[p]):  # 3. links
        found.convict("link", f"{p[0]}+{p[1]}", [p], {p})
    return found.suspects


class _Suspects:
    """The suspects found so far, and what is left of each pair once they are divided out."""

    def __init__(self, norm: dict[Pair, float], median: float, bar: float) -> None:
        self.norm = norm
        self.median = median
        self.bar = bar
        self.residual = dict(norm)
        self.suspects: list[Suspect] = []

    def slow(self) -> set[Pair]:
        return {p for p, v in self.residual.items() if v < self.bar}

    def convict(self, kind: str, name: str, total: Iterable[Pair], bad: set[Pair]) -> None:
        ev = sorted(bad, key=lambda p: self.residual[p])
        ratio = statistics.median(self.residual[p] for p in ev) / self.median
        self.suspects.append(
            Suspect(
                kind,
                name,
                len(bad),
                len(set(total)),
                ratio,
                tuple((a, b, self.norm[(a, b)]) for a, b in ev[:10]),
            )
        )
        for p in bad:
            self.residual[p] /= ratio

    def groups(self, labels: Mapping[str, Mapping[str, str]], fraction: float) -> None:
        """A label's group whose uplinks (pairs with one end in it) or inside (both ends)
        are slow for most of its pairs and nodes."""
        groups: dict[tuple[str, str], set[str]] = defaultdict(set)
        for node, lab in labels.items():
            for k, v in lab.items():
                groups[(k, v)].add(node)
        for (k, v), members in sorted(groups.items()):
            if len(members) < 2:
                continue
            for where, inside in (("uplinks", False), ("inside", True)):
                want = 2 if inside else 1
                cat = [p for p in self.norm if (p[0] in members) + (p[1] in members) == want]
                if not cat:
                    continue
                now_slow = self.slow()
                bad = {p for p in cat if p in now_slow}
                if len(bad) / len(cat) < fraction:
                    continue
                involved = {n for p in bad for n in p if n in members}
                if len(involved) / len(members) < fraction:
                    continue
                self.convict("group", f"{k}={v} ({where})", cat, bad)

    def nodes(self, fraction: float) -> None:
        """A node slow with at least two of its pairs and ``fraction`` of them."""
        by_node: dict[str, list[Pair]] = defaultdict(list)
        for p in self.norm:
            for n in set(p):
                by_node[n].append(p)
        still = self.slow()
        found = []
        for n in sorted(by_node):
            bad = {p for p in by_node[n] if p in still}
            if len(bad) >= 2 and len(bad) / len(by_node[n]) >= fraction:
                found.append((n, bad))
        for n, bad in found:
            self.convict("node", n, by_node[n], bad)


# Dimensions that vary with the message size within one series.
SIZE_DIMS = ("size_bytes", "count")
# Dimensions named in a series label, in this order.
LABEL_DIMS = ("op", "test", "device", "server_device", "reverse", "streams", "protocol")


@dataclass(frozen=True)
class Series:
    """One comparable series: its label, unit and the median per pair."""

    tool: str
    metric: str
    label: str
    unit: str
    values: dict[Pair, float]


def comparable_series(
    measurements: Iterable[Measurement],
    *,
    tool: str,
    metric: str,
    dims: Mapping[str, object] | None = None,
) -> list[Series]:
    """The pairwise measurements of (tool, metric) split into comparable series."""
    groups: dict[tuple[Any, ...], list[Measurement]] = defaultdict(list)
    for m in _selected(measurements, tool, metric, dims):
        rest = tuple(sorted((k, v) for k, v in m.dims.items() if k not in SIZE_DIMS))
        groups[(m.step, rest)].append(m)
    return [
        _one_series(tool, metric, step, rest, items)
        for (step, rest), items in sorted(groups.items(), key=lambda kv: repr(kv[0]))
    ]


def _selected(
    measurements: Iterable[Measurement],
    tool: str,
    metric: str,
    dims: Mapping[str, object] | None,
) -> list[Measurement]:
    """The measurements of (tool, metric) between two nodes with ``dims``; of a dim the
    tool keeps one value of (its traits' ``keep_one``), that value only."""
    sel = [
        m
        for m in measurements
        if m.tool == tool
        and m.metric == metric
        and len(set(m.nodes)) == 2
        and not (dims and any(m.dims.get(k) != v for k, v in dims.items()))
    ]
    for dim, preferred in tools.traits(tool).keep_one.items():
        seen = Counter(m.dims[dim] for m in sel if dim in m.dims)
        if len(seen) > 1:
            keep = preferred if preferred in seen else seen.most_common(1)[0][0]
            sel = [m for m in sel if m.dims.get(dim, keep) == keep]
    return sel


def _one_series(
    tool: str, metric: str, step: str, rest: tuple[Any, ...], items: list[Measurement]
) -> Series:
    """One series of a step and dims (``rest``): the median per pair at the largest message
    size, in the unit of its first measurement, labelled by step, dims and size."""
    sizes = [
        float(v)
        for m in items
        if isinstance(v := m.dims.get("size_bytes"), int | float) and not isinstance(v, bool)
    ]
    top = max(sizes) if sizes else None
    if top is not None:
        items = [m for m in items if m.dims.get("size_bytes") == top]
    unit = items[0].unit
    acc: dict[Pair, list[float]] = defaultdict(list)
    for m in items:
        try:
            acc[pair(m.nodes[0], m.nodes[1])].append(units.convert(m.value, m.unit, unit))
        except units.UnitError:
            continue
    named = dict(rest)
    label = " ".join(
        [step or tool]
        + [f"{k}={named[k]}" for k in LABEL_DIMS if k in named]
        + ([f"size_bytes={_size(top)}"] if top is not None else [])
    )
    values = {p: float(statistics.median(v)) for p, v in acc.items()}
    return Series(tool, metric, label, unit, values)


def _size(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def run_suspects(run: Run, *, min_pairs: int = 3) -> list[tuple[str, Suspect]]:
    """(tool, suspect) for the pairwise network results of ``run`` (OK steps only).

    Each comparable series (see the module docstring) is localized on its own; the
    inventory's node labels (leaf, rack ...) are the candidate groups. A suspect named by
    several series of one tool is given once, with its series listed and the worst ratio.
    """
    return [(tool, s) for tool, _, s in suspects_of(run, min_pairs=min_pairs)]


def suspects_of(run: Run, *, min_pairs: int = 3) -> list[tuple[str, str, Suspect]]:
    """(tool, metric, suspect), as :func:`run_suspects`, with the metric."""
    ok = _pairwise(run.steps)
    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    labels = {
        str(n["name"]): {str(k): str(v) for k, v in (n.get("labels") or {}).items()}
        for n in nodes
        if isinstance(n, Mapping) and "name" in n
    }
    out: list[tuple[str, str, Suspect]] = []
    # only the run's own tools: reading every tool's traits imports every plug-in
    for tool, metric, dims in tools.pair_series(among={m.tool for m in ok}):
        merged: dict[tuple[str, str], Suspect] = {}
        for series in comparable_series(ok, tool=tool, metric=metric, dims=dims):
            if len(series.values) < min_pairs:
                continue
            median = float(statistics.median(series.values.values()))
            for s in localize(series.values, labels=labels):
                s = dataclasses.replace(
                    s, series=(series.label,), unit=series.unit, fleet_median=median
                )
                key = (s.kind, s.name)
                if key not in merged:
                    merged[key] = s
                    continue
                old = merged[key]
                worst = s if s.median_ratio < old.median_ratio else old
                merged[key] = dataclasses.replace(worst, series=old.series + s.series)
        out += [(tool, metric, s) for s in merged.values()]
    return out


def _pairwise(steps: Iterable[StepResult]) -> list[Measurement]:
    """The measurements of the OK steps that some pairwise series reads (one pass: the
    steps of a large run are not held, and only these of their measurements)."""
    metrics: dict[str, frozenset[str]] = {}  # tool -> the metrics of its pair series
    out = []
    for s in steps:
        if not s.ok:
            continue
        for m in s.measurements:
            read = metrics.get(m.tool)
            if read is None:
                read = metrics[m.tool] = frozenset(x[1] for x in tools.pair_series([m.tool]))
            if m.metric in read:
                out.append(m)
    return out


def pair_values(
    measurements: Iterable[Measurement],
    *,
    tool: str,
    metric: str,
    dims: Mapping[str, object] | None = None,
) -> dict[Pair, float]:
    """Median per unordered pair of one comparable series of (tool, metric).

    A convenience for a run with a single series (one step, one size); with several, the
    series are :func:`comparable_series` and this refuses to mix them.
    """
    found = comparable_series(measurements, tool=tool, metric=metric, dims=dims)
    if not found:
        return {}
    if len(found) > 1:
        labels = ", ".join(s.label for s in found)
        raise ValueError(f"{tool} {metric}: {len(found)} series ({labels}): not comparable")
    return found[0].values


def suspect_records(run: Run, *, min_pairs: int = 3) -> tuple[dict[str, Any], ...]:
    """The suspects of ``run`` in the form stored in run.json (``Run.suspects``)."""
    return tuple(
        s.to_dict(tool, metric) for tool, metric, s in suspects_of(run, min_pairs=min_pairs)
    )
