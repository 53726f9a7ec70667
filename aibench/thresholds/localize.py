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
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from aibench.model import Measurement, Run

Pair = tuple[str, str]


@dataclass(frozen=True)
class Suspect:
    kind: str  # "group" | "node" | "link"
    name: str  # "leaf=l03", "gpu017", "gpu003+gpu041"
    slow_pairs: int
    pairs: int
    median_ratio: float  # median value of its slow pairs / fleet median
    evidence: tuple[tuple[str, str, float], ...]  # (a, b, value), worst first, at most 10

    @property
    def text(self) -> str:
        return (
            f"{self.kind} {self.name}: {self.slow_pairs} of {self.pairs} pairs slow, "
            f"at {self.median_ratio * 100:.0f}% of the fleet median"
        )


def pair(a: str, b: str) -> Pair:
    return (a, b) if a <= b else (b, a)


def pair_values(
    measurements: Iterable[Measurement],
    *,
    tool: str,
    metric: str,
    dims: Mapping[str, object] | None = None,
) -> dict[Pair, float]:
    """Median per unordered pair of the measurements of (tool, metric) that span two nodes."""
    acc: dict[Pair, list[float]] = defaultdict(list)
    for m in measurements:
        if m.tool != tool or m.metric != metric or len(set(m.nodes)) != 2:
            continue
        if dims and any(m.dims.get(k) != v for k, v in dims.items()):
            continue
        acc[pair(m.nodes[0], m.nodes[1])].append(m.value)
    return {p: float(statistics.median(v)) for p, v in acc.items()}


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
    bar = median * (1 - min_drop)
    # what is left of each pair once the suspects found so far are divided out
    residual = dict(norm)
    suspects: list[Suspect] = []

    def slow() -> set[Pair]:
        return {p for p, v in residual.items() if v < bar}

    def convict(kind: str, name: str, total: Iterable[Pair], bad: set[Pair]) -> None:
        ev = sorted(bad, key=lambda p: residual[p])
        ratio = statistics.median(residual[p] for p in ev) / median
        suspects.append(
            Suspect(
                kind,
                name,
                len(bad),
                len(set(total)),
                ratio,
                tuple((a, b, norm[(a, b)]) for a, b in ev[:10]),
            )
        )
        for p in bad:
            residual[p] /= ratio

    # 1. groups
    groups: dict[tuple[str, str], set[str]] = defaultdict(set)
    for node, lab in (labels or {}).items():
        for k, v in lab.items():
            groups[(k, v)].add(node)
    for (k, v), members in sorted(groups.items()):
        if len(members) < 2:
            continue
        for where, inside in (("uplinks", False), ("inside", True)):
            want = 2 if inside else 1
            cat = [p for p in norm if (p[0] in members) + (p[1] in members) == want]
            if not cat:
                continue
            now_slow = slow()
            bad = {p for p in cat if p in now_slow}
            if len(bad) / len(cat) < group_fraction:
                continue
            involved = {n for p in bad for n in p if n in members}
            if len(involved) / len(members) < group_fraction:
                continue
            convict("group", f"{k}={v} ({where})", cat, bad)
    # 2. nodes
    by_node: dict[str, list[Pair]] = defaultdict(list)
    for p in norm:
        for n in set(p):
            by_node[n].append(p)
    still = slow()
    found = []
    for n in sorted(by_node):
        bad = {p for p in by_node[n] if p in still}
        if len(bad) >= 2 and len(bad) / len(by_node[n]) >= node_fraction:
            found.append((n, bad))
    for n, bad in found:
        convict("node", n, by_node[n], bad)
    # 3. links
    for p in sorted(slow(), key=lambda p: residual[p]):
        convict("link", f"{p[0]}+{p[1]}", [p], {p})
    return suspects


# The pairwise results localization reads from a run: (tool, metric, dims).
NETWORK_SERIES: tuple[tuple[str, str, Mapping[str, object] | None], ...] = (
    ("iperf3", "throughput", {"side": "receiver"}),
    ("perftest", "bw_avg", None),
    ("nccl-tests", "busbw", None),
)


def run_suspects(run: Run, *, min_pairs: int = 3) -> list[tuple[str, Suspect]]:
    """(tool, suspect) for every pairwise network series of ``run`` (OK steps only).

    The inventory's node labels (leaf, rack ...) are the candidate groups.
    """
    ok = [m for s in run.steps if s.ok for m in s.measurements]
    nodes = run.inventory.get("nodes", []) if isinstance(run.inventory, Mapping) else []
    labels = {
        str(n["name"]): {str(k): str(v) for k, v in (n.get("labels") or {}).items()}
        for n in nodes
        if isinstance(n, Mapping) and "name" in n
    }
    out: list[tuple[str, Suspect]] = []
    for tool, metric, dims in NETWORK_SERIES:
        values = pair_values(ok, tool=tool, metric=metric, dims=dims)
        if len(values) >= min_pairs:
            out += [(tool, s) for s in localize(values, labels=labels)]
    return out
