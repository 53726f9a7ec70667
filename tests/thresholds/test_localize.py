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
import statistics
from pathlib import Path

import pytest

from aibench.model import FrozenDims, Measurement, Run, StepResult, StepStatus
from aibench.thresholds.localize import localize, pair_values, run_suspects
from tests.thresholds.helpers import replace_execution

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


# ---------------------------------------------- comparable series of a whole run


def _ib(a: str, b: str, value: float, *, size: int, test: str = "write", device: str = "mlx5_0",
        unit: str = "Gbit/s", step_name: str = "ib-write-bw", repeat: int = 0) -> StepResult:  # fmt: skip
    dims = FrozenDims({"test": test, "size_bytes": size, "device": device, "side": "client"})
    ms = (Measurement("perftest", "bw_avg", value, unit, dims, (a, b), step_name, repeat),)
    return StepResult(
        f"{step_name}/{a}+{b}/{test}/{device}/{size}/r{repeat}",
        step_name,
        "perftest",
        (a, b),
        repeat,
        StepStatus.OK,
        measurements=ms,
    )


def _perftest_run(bad: str | None, bad_device: str | None = None) -> Run:
    """8 nodes, every pair, two rails, write and read tests, three message sizes.

    Small messages run far below line rate on every pair; only the largest size shows
    the slow node. Generated here (not a measurement).
    """
    nodes = [f"g{i}" for i in range(8)]
    rnd = random.Random(2)
    steps = []
    for a, b in itertools.combinations(nodes, 2):
        for device in ("mlx5_0", "mlx5_1"):
            for test, line in (("write", 392.0), ("read", 380.0)):
                for size, frac in ((4096, 0.12), (65536, 0.7), (8388608, 1.0)):
                    v = line * frac * (1 + rnd.uniform(-0.01, 0.01))
                    if bad in (a, b) and size == 8388608 and device == (bad_device or device):
                        v *= 0.6
                    steps.append(_ib(a, b, v, size=size, test=test, device=device))
    inv = {"nodes": [{"name": n} for n in nodes]}
    return Run(id="r", suite="s", spec="t", inventory=inv, steps=tuple(steps))


def test_run_suspects_use_the_largest_size_per_test_and_rail() -> None:
    assert run_suspects(_perftest_run(None)) == []
    ((tool, s),) = run_suspects(_perftest_run("g5"))
    assert tool == "perftest"
    assert (s.kind, s.name) == ("node", "g5")
    assert 0.55 < s.median_ratio < 0.65
    assert sorted(s.series) == [
        "ib-write-bw test=read device=mlx5_0 size_bytes=8388608",
        "ib-write-bw test=read device=mlx5_1 size_bytes=8388608",
        "ib-write-bw test=write device=mlx5_0 size_bytes=8388608",
        "ib-write-bw test=write device=mlx5_1 size_bytes=8388608",
    ]
    assert s.unit == "Gbit/s"


def test_a_bad_rail_is_named_on_that_rail_only() -> None:
    ((_, s),) = run_suspects(_perftest_run("g2", bad_device="mlx5_1"))
    assert (s.kind, s.name) == ("node", "g2")
    assert all("device=mlx5_1" in label for label in s.series)


def test_the_old_median_over_everything_hid_the_slow_node() -> None:
    # one median per pair over every size, test and rail: the small messages dominate
    r = _perftest_run("g5")
    acc: dict[tuple[str, str], list[float]] = {}
    for m in r.measurements:
        acc.setdefault(tuple(sorted(m.nodes)), []).append(m.value)  # type: ignore[arg-type]
    mixed = {p: statistics.median(v) for p, v in acc.items()}
    assert localize(mixed) == []  # what the run-wide median saw: nothing


def test_units_are_converted_within_a_series() -> None:
    """Half the pairs reported in MB/s (perftest without --report_gbits), half in Gbit/s."""
    nodes = [f"g{i}" for i in range(6)]
    steps = []
    for i, (a, b) in enumerate(itertools.combinations(nodes, 2)):
        gbit = 390.0 * (0.55 if "g3" in (a, b) else 1.0)
        if i % 2:
            steps.append(_ib(a, b, gbit * 1000 / 8, size=65536, unit="MB/s"))
        else:
            steps.append(_ib(a, b, gbit, size=65536))
    r = Run(id="r", suite="s", spec="t", inventory={"nodes": [{"name": n} for n in nodes]},
            steps=tuple(steps))  # fmt: skip
    ((_, s),) = run_suspects(r)
    assert (s.kind, s.name) == ("node", "g3")
    assert s.fleet_median == pytest.approx(390.0)


def test_nccl_pairs_one_placement_and_type_per_op() -> None:
    nodes = [f"g{i}" for i in range(6)]
    steps = []
    for a, b in itertools.combinations(nodes, 2):
        ms = []
        for op, bw in (("all_reduce", 180.0), ("all_gather", 160.0)):
            for placement in ("out_of_place", "in_place"):
                for dtype in ("float", "half"):
                    v = bw * (0.5 if "g1" in (a, b) and op == "all_gather" else 1.0)
                    d = {"op": op, "placement": placement, "dtype": dtype, "size_bytes": 2**30,
                         "count": 2**28, "redop": "sum"}  # fmt: skip
                    ms.append(
                        Measurement(
                            "nccl-tests", "busbw", v, "GB/s", FrozenDims(d), (a, b), "nccl-pairs"
                        )
                    )
        steps.append(StepResult(f"nccl-pairs/{a}+{b}", "nccl-pairs", "nccl-tests", (a, b), 0,
                                StepStatus.OK, measurements=tuple(ms)))  # fmt: skip
    r = Run(id="r", suite="s", spec="t", inventory={"nodes": [{"name": n} for n in nodes]},
            steps=tuple(steps))  # fmt: skip
    ((tool, s),) = run_suspects(r)
    assert tool == "nccl-tests"
    assert (s.kind, s.name) == ("node", "g1")
    assert s.series == ("nccl-pairs op=all_gather size_bytes=1073741824",)
    assert s.to_dict("nccl-tests", "busbw")["series"] == list(s.series)


def test_pair_values_refuses_to_mix_series() -> None:
    r = _perftest_run(None)
    with pytest.raises(ValueError, match="not comparable"):
        pair_values(r.measurements, tool="perftest", metric="bw_avg")


def test_aibench_run_stores_the_suspects_in_run_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aibench run` end to end with the execution replaced by generated iperf3 results
    (6 nodes on loopback cannot show a slow node): run.json carries the suspects."""
    import json

    import yaml

    from aibench.cli import main

    nodes = [f"n{i}" for i in range(6)]
    inv = tmp_path / "inv.yaml"
    inv.write_text(yaml.safe_dump({"name": "six", "defaults": {"executor": "local"},
                                   "nodes": [{"name": n} for n in nodes]}))  # fmt: skip
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"schema_version": 1, "name": "tcp", "spec": "default",
        "steps": [{"name": "iperf3-tcp", "tool": "iperf3", "placement": "pairs"}]}))  # fmt: skip
    results = []
    for a, b in itertools.combinations(nodes, 2):
        bps = (2.0 if "n4" in (a, b) else 9.4) * 1e9
        d = FrozenDims({"side": "receiver", "streams": 1, "reverse": False, "protocol": "tcp"})
        results.append(StepResult(f"iperf3-tcp/{a}+{b}/r0", "iperf3-tcp", "iperf3", (a, b), 0,
            StepStatus.OK, measurements=(Measurement("iperf3", "throughput", bps, "bit/s", d,
            (a, b), "iperf3-tcp"),)))  # fmt: skip

    replace_execution(monkeypatch, results)
    out = tmp_path / "runs"
    main(["run", "--suite", str(suite), "--inventory", str(inv), "--output-dir", str(out),
          "--quiet"])  # fmt: skip
    (run_dir,) = out.iterdir()
    data = json.loads((run_dir / "run.json").read_text())
    (s,) = data["suspects"]
    assert s["tool"] == "iperf3"
    assert s["metric"] == "throughput"
    assert (s["kind"], s["name"]) == ("node", "n4")
    assert (s["slow_pairs"], s["pairs"]) == (5, 5)
    assert s["unit"] == "bit/s"
    assert s["fleet_median"] == pytest.approx(9.4e9)
    assert s["series"] == ["iperf3-tcp reverse=False streams=1 protocol=tcp"]
    assert s["evidence"][0][2] == pytest.approx(2e9)
    assert s["text"].startswith("node n4: 5 of 5 pairs slow, at 21% of the fleet median")
    assert Run.from_dict(data).suspects[0]["name"] == "n4"
