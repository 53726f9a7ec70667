"""Fault localization on a simulated 64-node pairwise data set (generated here).

The data set: 64 nodes on 8 leaf switches (8 nodes each), every unordered pair measured
(2016 pairs) at 390 Gbit/s ± 1.5% noise, with three faults planted:

* node n13 (leaf l1) has a bad NIC: every pair with it runs at ~55%;
* the link n40-n51 is bad: that one pair runs at ~40%;
* leaf l6 (n48..n55) has slow uplinks: pairs leaving the leaf run at ~60%, pairs
  inside it are fine.

Localization must name exactly those three suspects (and nothing else).
"""

from __future__ import annotations

import itertools
import random

from aibench.model import FrozenDims, Measurement, StepResult, StepStatus
from aibench.thresholds.localize import localize, pair_values

NODES = [f"n{i:02d}" for i in range(64)]
LEAF = {n: f"l{i // 8}" for i, n in enumerate(NODES)}


def simulate(seed: int = 7) -> dict[tuple[str, str], float]:
    rnd = random.Random(seed)
    values = {}
    for a, b in itertools.combinations(NODES, 2):
        v = 390.0 * (1 + rnd.uniform(-0.015, 0.015))
        if "n13" in (a, b):
            v *= 0.55
        if {a, b} == {"n40", "n51"}:
            v *= 0.40
        if (LEAF[a] == "l6") != (LEAF[b] == "l6"):
            v *= 0.60
        values[(a, b)] = v
    return values


def test_names_exactly_the_bad_node_link_and_leaf() -> None:
    suspects = localize(simulate(), labels={n: {"leaf": LEAF[n]} for n in NODES})
    assert [(s.kind, s.name) for s in suspects] == [
        ("group", "leaf=l6 (uplinks)"),
        ("node", "n13"),
        ("link", "n40+n51"),
    ]
    group, node, link = suspects
    assert group.pairs == 8 * 56
    assert node.slow_pairs == 63  # with l6 members: slower than the group explains
    assert link.evidence[0][:2] == ("n40", "n51")
    assert 0.35 < link.median_ratio < 0.45
    assert "pairs slow" in node.text


def test_noise_alone_names_nobody() -> None:
    rnd = random.Random(3)
    values = {p: 390.0 * (1 + rnd.uniform(-0.03, 0.03)) for p in itertools.combinations(NODES, 2)}
    assert localize(values, labels={n: {"leaf": LEAF[n]} for n in NODES}) == []


def test_without_labels_the_group_shows_as_its_nodes() -> None:
    names = {(s.kind, s.name) for s in localize(simulate())}
    assert ("node", "n13") in names
    assert {f"n{i}" for i in range(48, 56)} <= {n for k, n in names if k == "node"}


def test_pair_values_from_measurements() -> None:
    steps = []
    for r, (a, b) in enumerate([("x", "y"), ("y", "x"), ("x", "y")]):
        ms = (
            Measurement(
                "iperf3", "throughput", 9e9 + r, "bit/s", FrozenDims({"side": "receiver"}), (a, b)
            ),
            Measurement(
                "iperf3", "throughput", 1.0, "bit/s", FrozenDims({"side": "sender"}), (a, b)
            ),
        )
        steps.append(StepResult(f"t/{r}", "t", "iperf3", (a, b), r, StepStatus.OK, measurements=ms))
    values = pair_values(
        [m for s in steps for m in s.measurements],
        tool="iperf3",
        metric="throughput",
        dims={"side": "receiver"},
    )
    assert values == {("x", "y"): 9e9 + 1}
