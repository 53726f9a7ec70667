"""Table tests of the thresholds engine: outcomes, tiers, scopes, waivers, units, facts."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from aibench.model import Fact, FrozenDims, Outcome, StepStatus
from aibench.thresholds import judge
from tests.thresholds.helpers import HEADER, NOW, m, run, spec_from, step

BW_CHECK = """\
  - id: bw
    select: {{tool: fio, metric: bw, dims: {{direction: read}}}}
    unit: {unit}
{bounds}
"""


def _fio_run(values_kib: list[float], nodes: tuple[str, ...] = ("n1",)):  # type: ignore[no-untyped-def]
    steps = [
        step("seq", "fio", (n,), [m("fio", "bw", v, "KiB/s", (), direction="read")], repeat=i)
        for n in nodes
        for i, v in enumerate(values_kib)
    ]
    return run(steps, nodes)


# (bounds yaml, unit, repeat values in KiB/s, expected outcome)
TIERS = [
    ("    min: 100", "MB/s", [200_000, 210_000, 190_000], Outcome.PASS),
    ("    min: 300", "MB/s", [200_000, 210_000, 190_000], Outcome.FAIL),
    ("    min: 100\n    warn: {min: 250}", "MB/s", [200_000, 210_000, 190_000], Outcome.WARN),
    ("    max: 100", "MB/s", [200_000, 210_000, 190_000], Outcome.FAIL),
    ("    reference: 204.8\n    lower: -0.05", "MB/s", [200_000, 200_000], Outcome.PASS),
    ("    reference: 300\n    lower: -0.1", "MB/s", [200_000], Outcome.FAIL),
    (
        "    reference: 204.8\n    lower: -0.2\n    upper: 0.2\n    warn: {lower: -0.01}",
        "MB/s",
        [190_000],
        Outcome.WARN,
    ),
    ("    warn: {min: 250}", "MB/s", [200_000], Outcome.WARN),
]


@pytest.mark.parametrize(("bounds", "unit", "values", "outcome"), TIERS)
def test_tiers(
    tmp_path: Path, bounds: str, unit: str, values: list[float], outcome: Outcome
) -> None:
    spec = spec_from(tmp_path, HEADER + BW_CHECK.format(unit=unit, bounds=bounds))
    (v,) = judge(spec, _fio_run(values), now=NOW)
    assert v.outcome is outcome, v
    assert v.samples == len(values)


def test_median_of_repeats_and_expected_text(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 100"))
    (v,) = judge(spec, _fio_run([100_000, 300_000, 200_000]), now=NOW)
    assert v.observed == pytest.approx(204.8)  # 200000 KiB/s = 204.8 MB/s exactly
    assert v.expected == ">= 100 MB/s"
    assert v.unit == "MB/s"
    assert v.aggregate == "median of 3 repeat(s) (102..307, CV 50.0%)"
    assert v.benchmark == "fio"
    assert v.evidence == ("seq/n1/r0", "seq/n1/r1", "seq/n1/r2")


@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        ("median", 200.0),
        ("mean", 200.0),
        ("min", 100.0),
        ("max", 300.0),
        ("sum", 600.0),
        ("p10", 120.0),
        ("p90", 280.0),
    ],
)
def test_aggregates(tmp_path: Path, aggregate: str, expected: float) -> None:
    text = (
        HEADER
        + BW_CHECK.format(unit="KiB/s", bounds="    min: 1")
        + f"    aggregate: {aggregate}\n"
    )
    (v,) = judge(spec_from(tmp_path, text), _fio_run([100, 200, 300]), now=NOW)
    assert v.observed == pytest.approx(expected)


# unit of the check, measured value and unit, value expected in the check's unit
UNITS = [
    ("Gbit/s", 1.0, "GB/s", 8.0),
    ("GB/s", 8.0, "Gbit/s", 1.0),
    ("GiB/s", 1.0, "GB/s", 1e9 / 2**30),
    ("MB/s", 1.0, "MiB/s", 1.048576),
    ("MiB/s", 1.048576, "MB/s", 1.0),
    ("kIOPS", 2500.0, "IOPS", 2.5),
    ("us", 1500.0, "ns", 1.5),
    ("ns", 2.0, "us", 2000.0),
]


@pytest.mark.parametrize(("check_unit", "value", "unit", "expected"), UNITS)
def test_unit_conversion(
    tmp_path: Path, check_unit: str, value: float, unit: str, expected: float
) -> None:
    text = (
        HEADER
        + f"""\
  - id: x
    select: {{tool: custom, metric: x}}
    unit: {check_unit}
    min: 0
"""
    )
    r = run([step("s", "custom", ("n1",), [m("custom", "x", value, unit, ())])])
    (v,) = judge(spec_from(tmp_path, text), r, now=NOW)
    assert v.observed == pytest.approx(expected, rel=1e-12)
    assert v.outcome is Outcome.PASS


def test_unit_of_another_dimension_is_error_not_a_number(tmp_path: Path) -> None:
    text = HEADER + "  - id: x\n    select: {tool: custom, metric: x}\n    unit: GB/s\n    min: 1\n"
    r = run([step("s", "custom", ("n1",), [m("custom", "x", 5, "IOPS", ())])])
    (v,) = judge(spec_from(tmp_path, text), r, now=NOW)
    assert v.outcome is Outcome.ERROR
    assert "cannot convert IOPS" in v.reason
    assert v.observed is None


def test_nothing_measured_is_missing(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 1"))
    (v,) = judge(spec, run([]), now=NOW)
    assert v.outcome is Outcome.MISSING
    assert "no fio step" in v.reason
    # a step that ran but produced nothing matching is MISSING as well
    r = run([step("seq", "fio", ("n1",), [m("fio", "bw", 5, "KiB/s", (), direction="write")])])
    (v,) = judge(spec, r, now=NOW)
    assert v.outcome is Outcome.MISSING
    assert "none with a measurement" in v.reason


def test_failed_step_is_error_with_its_reason(tmp_path: Path) -> None:
    spec = spec_from(tmp_path, HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 1"))
    bad = step(
        "seq",
        "fio",
        ("n1",),
        [m("fio", "bw", 9e9, "KiB/s", (), direction="read")],
        status=StepStatus.FAILED,
        reason="fio: O_DIRECT not supported",
    )
    (v,) = judge(spec, run([bad]), now=NOW)
    assert v.outcome is Outcome.ERROR  # the partial measurement is not used
    assert "O_DIRECT not supported" in v.reason
    assert v.evidence == ("seq/n1/r0",)
    # one failed repeat among good ones: still ERROR, never PASS
    good = step(
        "seq", "fio", ("n1",), [m("fio", "bw", 9e9, "KiB/s", (), direction="read")], repeat=1
    )
    (v,) = judge(spec, run([bad, good]), now=NOW)
    assert v.outcome is Outcome.ERROR


def test_scopes(tmp_path: Path) -> None:
    base = "    select: {tool: perftest, metric: bw_avg}\n    unit: Gbit/s\n    min: 350\n"
    text = HEADER + "".join(
        f"  - id: {scope}\n    scope: {scope}\n" + base
        for scope in ("node", "pair", "rail", "fleet")
    )
    steps = []
    for a, b, dev, val in [
        ("a", "b", "mlx5_0", 390),
        ("a", "b", "mlx5_1", 300),
        ("a", "c", "mlx5_0", 395),
        ("b", "c", "mlx5_0", 392),
    ]:
        steps.append(
            step("ib", "perftest", (a, b), [m("perftest", "bw_avg", val, "Gbit/s", (), device=dev)])
        )
    vs = judge(spec_from(tmp_path, text), run(steps, ("a", "b", "c")), now=NOW)
    by = {(v.check, v.subject): v for v in vs}
    assert {s for c, s in by if c == "node"} == {("a",), ("b",), ("c",)}
    assert {s for c, s in by if c == "pair"} == {("a", "b"), ("a", "c"), ("b", "c")}
    assert by[("pair", ("a", "b"))].observed == pytest.approx(345)  # median of two rails
    assert by[("pair", ("a", "b"))].outcome is Outcome.FAIL
    assert by[("rail", ("a", "device=mlx5_1"))].outcome is Outcome.FAIL
    assert by[("rail", ("a", "device=mlx5_1"))].culprits == ("a",)
    assert by[("rail", ("c", "device=mlx5_0"))].outcome is Outcome.PASS
    (fleet,) = [v for v in vs if v.check == "fleet"]
    assert fleet.subject == ()
    assert fleet.samples == 4


def test_coverage_lists_what_is_missing(tmp_path: Path) -> None:
    text = HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 1") + "    require: every_node\n"
    r = _fio_run([200_000], nodes=("n1", "n3"))
    r = r.replace(inventory={"nodes": [{"name": n} for n in ("n1", "n2", "n3", "n4")]})
    vs = judge(spec_from(tmp_path, text), r, now=NOW)
    (cov,) = [v for v in vs if v.check == "bw.coverage"]
    assert cov.outcome is Outcome.FAIL
    assert cov.culprits == ("n2", "n4")
    assert cov.observed_text == "2 of 4 nodes measured"


def test_pair_coverage(tmp_path: Path) -> None:
    text = (
        HEADER
        + """\
  - id: tcp
    select: {tool: iperf3, metric: throughput, dims: {side: receiver}}
    scope: pair
    unit: Gbit/s
    min: 1
    require: every_pair
"""
    )
    s = [
        step("t", "iperf3", p, [m("iperf3", "throughput", 9e9, "bit/s", (), side="receiver")])
        for p in [("a", "b"), ("c", "a")]
    ]
    vs = judge(spec_from(tmp_path, text), run(s, ("a", "b", "c")), now=NOW)
    (cov,) = [v for v in vs if v.check == "tcp.coverage"]
    assert cov.outcome is Outcome.FAIL
    assert cov.culprits == ("b+c",)


WAIVER = """\
    waiver: {{reason: "vendor replaces the drive in week 50", owner: ops, expires: {expires}}}
"""


@pytest.mark.parametrize(
    ("kib", "expires", "outcome", "state", "text"),
    [
        (50_000, "2026-12-31", Outcome.WAIVED, "active", "was FAIL"),
        (50_000, "2026-11-30", Outcome.FAIL, "expired", "waiver expired on 2026-11-30"),
        (500_000, "2026-12-31", Outcome.PASS, "not needed", "the waiver can be removed"),
        # an expired waiver fails, even over a check that passes now: renew or remove it
        (
            500_000,
            "2026-11-30",
            Outcome.FAIL,
            "expired",
            "renew or remove it; the check itself is PASS",
        ),
        # the expiry day itself still holds
        (50_000, "2026-12-02", Outcome.WAIVED, "active", "was FAIL"),
    ],
)
def test_waivers(
    tmp_path: Path, kib: float, expires: str, outcome: Outcome, state: str, text: str
) -> None:
    spec_text = (
        HEADER
        + BW_CHECK.format(unit="MB/s", bounds="    min: 100")
        + WAIVER.format(expires=expires)
    )
    (v,) = judge(spec_from(tmp_path, spec_text), _fio_run([kib]), now=NOW)
    assert v.outcome is outcome
    assert v.waiver is not None
    assert v.waiver["state"] == state
    assert v.waiver["owner"] == "ops"
    assert text in v.reason


# A warn tier over a check of a warn-only bound, the fleet scope, and waivers over WARN,
# MISSING and ERROR: (spec lines, run, outcome, text in the reason)
WARN_MAX = "    max: 500\n    warn: {max: 250}\n"


def _expiring(expires: str) -> str:
    return WAIVER.format(expires=expires)


def _missing_run():  # type: ignore[no-untyped-def]
    return run([step("seq", "fio", ("n1",), [m("fio", "bw", 5, "KiB/s", (), direction="write")])])


def _error_run():  # type: ignore[no-untyped-def]
    bad = step("seq", "fio", ("n1",), status=StepStatus.FAILED, reason="fio: ENOSPC")
    return run([bad])


MORE_CASES = [
    ("warn.max below", WARN_MAX, lambda: _fio_run([200_000]), Outcome.PASS, ""),
    ("warn.max above", WARN_MAX, lambda: _fio_run([300_000]), Outcome.WARN, "above the warn"),
    ("max above", WARN_MAX, lambda: _fio_run([600_000]), Outcome.FAIL, "is above 500"),
    (
        "waived WARN",
        WARN_MAX + _expiring("2026-12-31"),
        lambda: _fio_run([300_000]),
        Outcome.WAIVED,
        "was WARN",
    ),
    (
        "expired over WARN",
        WARN_MAX + _expiring("2026-12-01"),
        lambda: _fio_run([300_000]),
        Outcome.FAIL,
        "the check itself is WARN",
    ),
    (
        "waived MISSING",
        "    min: 1\n" + _expiring("2026-12-31"),
        _missing_run,
        Outcome.WAIVED,
        "was MISSING",
    ),
    (
        "expired over MISSING",
        "    min: 1\n" + _expiring("2026-12-01"),
        _missing_run,
        Outcome.MISSING,
        "waiver expired on 2026-12-01",
    ),
    (
        "waived ERROR",
        "    min: 1\n" + _expiring("2026-12-31"),
        _error_run,
        Outcome.WAIVED,
        "was ERROR: the measuring step did not finish",
    ),
    (
        "expired over ERROR",
        "    min: 1\n" + _expiring("2026-12-01"),
        _error_run,
        Outcome.ERROR,
        "ENOSPC",
    ),
]


@pytest.mark.parametrize(
    ("case", "lines", "make", "outcome", "text"), MORE_CASES, ids=[c[0] for c in MORE_CASES]
)
def test_more_tiers_and_waiver_states(
    tmp_path: Path, case: str, lines: str, make: object, outcome: Outcome, text: str
) -> None:
    spec = spec_from(tmp_path, HEADER + BW_CHECK.format(unit="MB/s", bounds=lines.rstrip("\n")))
    (v,) = judge(spec, make(), now=NOW)  # type: ignore[operator]
    assert v.outcome is outcome, v
    assert text in v.reason
    assert v.outcome.failing is (outcome in (Outcome.FAIL, Outcome.MISSING, Outcome.ERROR))


@pytest.mark.parametrize(
    ("values", "outcome"),
    [([390, 395, 392, 388], Outcome.PASS), ([390, 300, 310, 305], Outcome.FAIL)],
)
def test_fleet_verdict_outcome(tmp_path: Path, values: list[float], outcome: Outcome) -> None:
    text = HEADER + (
        "  - id: fleet\n    scope: fleet\n    select: {tool: perftest, metric: bw_avg}\n"
        "    unit: Gbit/s\n    min: 350\n"
    )
    pairs = [("a", "b"), ("a", "c"), ("b", "c"), ("b", "d")]
    steps = [
        step("ib", "perftest", p, [m("perftest", "bw_avg", v, "Gbit/s", (), device="mlx5_0")])
        for p, v in zip(pairs, values, strict=True)
    ]
    (v,) = judge(spec_from(tmp_path, text), run(steps, ("a", "b", "c", "d")), now=NOW)
    assert v.subject == ()
    assert v.outcome is outcome
    assert v.observed == pytest.approx(sorted(values)[1] / 2 + sorted(values)[2] / 2)
    assert v.culprits == ()  # a fleet verdict names no node


ROLE_FACTS = """\
  - id: training-cores
    fact: {source: cpu, name: cores, labels: {role: training}}
    op: ge
    value: 64
  - id: inference-cores
    fact: {source: cpu, name: cores, labels: {role: inference}}
    op: ge
    value: 32
"""


def _cores_run(labels: dict[str, dict[str, str]]):  # type: ignore[no-untyped-def]
    nodes = tuple(labels)
    steps = [
        step("pre", "preflight", (n,), facts=[Fact("cpu", "cores", 96, "count", nodes=(n,))])
        for n in nodes
    ]
    return run(steps, nodes, labels=labels)


def test_role_check_without_nodes_of_that_role_does_not_apply(tmp_path: Path) -> None:
    from aibench.thresholds.engine import not_applicable

    spec = spec_from(tmp_path, HEADER + ROLE_FACTS)
    r = _cores_run({"g1": {"role": "training"}, "g2": {"role": "training"}})
    vs = judge(spec, r, now=NOW)
    assert {(v.check, v.subject, v.outcome) for v in vs} == {
        ("training-cores", ("g1",), Outcome.PASS),
        ("training-cores", ("g2",), Outcome.PASS),
    }
    assert not_applicable(spec, r) == [
        "inference-cores: not applicable: no node is labelled role=inference "
        "(the inventory has role=training)"
    ]


def test_role_check_on_an_unlabelled_cluster_is_missing(tmp_path: Path) -> None:
    from aibench.thresholds.engine import not_applicable

    spec = spec_from(tmp_path, HEADER + ROLE_FACTS)
    r = _cores_run({"g1": {}, "g2": {"rack": "r1"}})
    vs = judge(spec, r, now=NOW)
    assert [(v.check, v.outcome) for v in vs] == [
        ("training-cores", Outcome.MISSING),
        ("inference-cores", Outcome.MISSING),
    ]
    assert "no node of the inventory has a role label" in vs[0].reason
    assert not_applicable(spec, r) == []


def test_role_metric_check_follows_the_same_rule(tmp_path: Path) -> None:
    text = HEADER + (
        "  - id: inference-read\n"
        "    select: {tool: fio, metric: bw, labels: {role: inference}}\n"
        "    unit: MB/s\n    min: 1\n"
    )
    spec = spec_from(tmp_path, text)
    r = _fio_run([200_000], nodes=("g1",))
    assert (
        judge(
            spec,
            r.replace(inventory={"nodes": [{"name": "g1", "labels": {"role": "training"}}]}),
            now=NOW,
        )
        == []
    )
    (v,) = judge(spec, r, now=NOW)  # no labels at all
    assert v.outcome is Outcome.MISSING
    mixed = {"nodes": [{"name": "g1", "labels": {"role": "inference"}}]}
    (v,) = judge(spec, r.replace(inventory=mixed), now=NOW)
    assert v.outcome is Outcome.PASS


def test_waiver_for_some_subjects_only(tmp_path: Path) -> None:
    spec_text = (
        HEADER
        + BW_CHECK.format(unit="MB/s", bounds="    min: 100")
        + (
            "    waiver: {reason: known slow disk, owner: ops, expires: 2027-01-31, subjects: [n2]}\n"
        )
    )
    vs = judge(spec_from(tmp_path, spec_text), _fio_run([50_000], nodes=("n1", "n2")), now=NOW)
    assert {v.subject: v.outcome for v in vs} == {("n1",): Outcome.FAIL, ("n2",): Outcome.WAIVED}


def test_unstable_repeats_warn(tmp_path: Path) -> None:
    text = HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 1") + "    max_cv: 0.1\n"
    (v,) = judge(spec_from(tmp_path, text), _fio_run([100_000, 200_000, 300_000]), now=NOW)
    assert v.outcome is Outcome.WARN
    assert "unstable" in v.reason
    (v,) = judge(spec_from(tmp_path, text), _fio_run([200_000, 201_000, 199_000]), now=NOW)
    assert v.outcome is Outcome.PASS


def test_fleet_outlier_warns_a_node_that_passes(tmp_path: Path) -> None:
    text = HEADER + BW_CHECK.format(unit="MB/s", bounds="    min: 100") + "    outliers: {}\n"
    nodes = tuple(f"n{i:02d}" for i in range(12))
    steps = [
        step(
            "seq",
            "fio",
            (n,),
            [
                m(
                    "fio",
                    "bw",
                    (2_000_000 if n != "n07" else 1_200_000) + i * 1000,
                    "KiB/s",
                    (),
                    direction="read",
                )
            ],
        )
        for i, n in enumerate(nodes)
    ]
    vs = judge(spec_from(tmp_path, text), run(steps, nodes), now=NOW)
    warn = [v for v in vs if v.outcome is Outcome.WARN]
    assert [v.subject for v in warn] == [("n07",)]
    assert "MADs" in warn[0].reason
    assert "below the fleet median" in warn[0].reason
    assert all(v.outcome is Outcome.PASS for v in vs if v.subject != ("n07",))


def test_largest_and_node_count(tmp_path: Path) -> None:
    text = (
        HEADER
        + """\
  - id: ar
    select: {tool: nccl-tests, metric: busbw, dims: {op: all_reduce}, largest: size_bytes,
             node_count: 1}
    unit: GB/s
    min: 460
"""
    )
    single = step(
        "nccl",
        "nccl-tests",
        ("g1",),
        [
            m("nccl-tests", "busbw", 100, "GB/s", (), op="all_reduce", size_bytes=1024),
            m("nccl-tests", "busbw", 478, "GB/s", (), op="all_reduce", size_bytes=2**34),
        ],
    )
    multi = step(
        "nccl2",
        "nccl-tests",
        ("g1", "g2"),
        [m("nccl-tests", "busbw", 300, "GB/s", (), op="all_reduce", size_bytes=2**34)],
    )
    (v,) = judge(spec_from(tmp_path, text), run([single, multi], ("g1", "g2")), now=NOW)
    assert v.subject == ("g1",)
    assert v.observed == 478
    assert v.outcome is Outcome.PASS


FACTS = """\
  - id: driver
    fact: {source: nvidia-smi, name: driver_version}
    op: version_ge
    value: "550"
  - id: swappiness
    fact: {source: sysctl, name: vm.swappiness}
    op: eq
    value: 10
  - id: persistence
    fact: {source: nvidia-smi, name: persistence_mode}
    op: in
    value: [Enabled]
  - id: thp
    fact: {source: thp, name: enabled}
    op: present
    allow_absent: true
  - id: kernel
    fact: {source: environment, name: tools.fio}
    op: version_ge
    value: "3.30"
"""


def test_fact_checks(tmp_path: Path) -> None:
    def facts(node: str, driver: str, swap: str, persist: list[str]) -> list[Fact]:
        out = [
            Fact("nvidia-smi", "driver_version", driver, nodes=(node,)),
            Fact("sysctl", "vm.swappiness", swap, nodes=(node,)),
            Fact("thp", "enabled", None, nodes=(node,), reason="no such file"),
        ]
        out += [
            Fact("nvidia-smi", "persistence_mode", p, dims=FrozenDims({"gpu": i}), nodes=(node,))
            for i, p in enumerate(persist)
        ]
        return out

    steps = [
        step("pre", "preflight", ("a",), facts=facts("a", "550.54.15", "10", ["Enabled"] * 2)),
        step(
            "pre", "preflight", ("b",), facts=facts("b", "535.86.10", "60", ["Enabled", "Disabled"])
        ),
        step("pre", "preflight", ("c",), status=StepStatus.UNREACHABLE, reason="ssh: timed out"),
    ]
    env = {
        "a": {"tools": {"fio": "3.33"}},
        "b": {"tools": {"fio": "3.28"}},
        "c": {"unreachable": "ssh: timed out"},
    }
    r = run(steps, ("a", "b", "c", "d"), environment=env)
    vs = judge(spec_from(tmp_path, HEADER + FACTS), r, now=NOW)
    got = {(v.check, v.subject[0]): v for v in vs}
    assert got[("driver", "a")].outcome is Outcome.PASS
    assert got[("driver", "b")].outcome is Outcome.FAIL
    assert "535.86.10" in got[("driver", "b")].reason
    assert got[("driver", "c")].outcome is Outcome.MISSING  # preflight is not the fact's source
    assert got[("swappiness", "a")].outcome is Outcome.PASS  # "10" read from text equals 10
    assert got[("swappiness", "b")].outcome is Outcome.FAIL
    assert got[("persistence", "b")].outcome is Outcome.FAIL
    assert "gpu=1" in got[("persistence", "b")].reason
    assert got[("thp", "a")].outcome is Outcome.PASS  # absent, allowed
    assert got[("kernel", "a")].outcome is Outcome.PASS
    assert got[("kernel", "b")].outcome is Outcome.FAIL
    assert got[("kernel", "d")].outcome is Outcome.MISSING
    assert got[("kernel", "c")].outcome is Outcome.ERROR
    assert "unreachable" in got[("kernel", "c")].reason


def test_absent_fact_fails_unless_allowed(tmp_path: Path) -> None:
    text = (
        HEADER + "  - id: d\n    fact: {source: nvidia-smi, name: driver_version}\n"
        "    op: version_ge\n    value: '550'\n"
    )
    r = run(
        [
            step(
                "pre",
                "nvidia-smi",
                ("a",),
                facts=[
                    Fact(
                        "nvidia-smi",
                        "driver_version",
                        None,
                        nodes=("a",),
                        reason="nvidia-smi not found",
                    )
                ],
            )
        ],
        ("a",),
    )
    (v,) = judge(spec_from(tmp_path, text), r, now=NOW)
    assert v.outcome is Outcome.FAIL
    assert "nvidia-smi not found" in v.reason
    failed = step("pre", "nvidia-smi", ("a",), status=StepStatus.TIMEOUT, reason="timed out")
    (v,) = judge(spec_from(tmp_path, text), run([failed], ("a",)), now=NOW)
    assert v.outcome is Outcome.ERROR


@pytest.mark.parametrize(
    ("op", "value", "fact", "ok"),
    [
        ("version_ge", "550", "550.54.15", True),
        ("version_ge", "550.60", "550.54.15", False),
        ("version_le", "560", "560.0.0", True),
        ("version_le", "560", "570.1", False),
        ("ne", "Disabled", "Enabled", True),
        ("ge", 1024, "2015.5", True),
        ("lt", 5, "7", False),
        ("absent", None, None, True),
        ("version_ge", "550", "N/A", False),
    ],
)
def test_fact_operators(tmp_path: Path, op: str, value: object, fact: object, ok: bool) -> None:
    val = "" if value is None else f"    value: {value!r}\n".replace("'", '"')
    text = HEADER + f"  - id: f\n    fact: {{source: s, name: n}}\n    op: {op}\n{val}"
    r = run([step("p", "s", ("a",), facts=[Fact("s", "n", fact, nodes=("a",))])], ("a",))  # type: ignore[arg-type]
    (v,) = judge(spec_from(tmp_path, text), r, now=NOW)
    assert v.outcome is (Outcome.PASS if ok else Outcome.FAIL)


def test_dim_operators(tmp_path: Path) -> None:
    text = (
        HEADER
        + """\
  - id: p99
    select: {tool: fio, metric: clat_percentile, dims: {percentile: 99.0, rw: [randread, read],
             iodepth: {ge: 16}}}
    unit: us
    max: 500
"""
    )
    ms = [
        m("fio", "clat_percentile", 400_000, "ns", (), percentile=99.0, rw="randread", iodepth=32),
        m("fio", "clat_percentile", 900_000, "ns", (), percentile=99.9, rw="randread", iodepth=32),
        m("fio", "clat_percentile", 900_000, "ns", (), percentile=99.0, rw="randread", iodepth=1),
    ]
    (v,) = judge(spec_from(tmp_path, text), run([step("r", "fio", ("a",), ms)], ("a",)), now=NOW)
    assert v.observed == pytest.approx(400.0)
    assert v.outcome is Outcome.PASS
    assert v.samples == 1


def test_rail_coverage_uses_the_inventory_hcas(tmp_path: Path) -> None:
    text = (
        HEADER
        + """\
  - id: rail
    select: {tool: perftest, metric: bw_avg}
    scope: rail
    unit: Gbit/s
    min: 360
    require: every_rail
"""
    )
    steps = [
        step("ib", "perftest", ("a", "b"), [m("perftest", "bw_avg", 390, "Gbit/s", (), device=d)])
        for d in ("mlx5_0", "mlx5_1")
    ]
    r = run(steps, ("a", "b"))
    hcas = [{"name": f"mlx5_{i}"} for i in range(3)]
    r = r.replace(inventory={"nodes": [{"name": n, "facts": {"hcas": hcas}} for n in ("a", "b")]})
    vs = judge(spec_from(tmp_path, text), r, now=NOW)
    (cov,) = [v for v in vs if v.check == "rail.coverage"]
    assert cov.outcome is Outcome.FAIL
    assert cov.culprits == ("a:device=mlx5_2", "b:device=mlx5_2")
    assert cov.observed_text == "4 of 6 rails measured"


def test_every_metric_check_is_judged_in_one_pass_over_steps_read_from_disk() -> None:
    """A run's steps may stay on disk (a StepSource, read again on each pass): the metric
    and the fact checks of a spec gather what they need in one pass, and judge as the
    steps held do."""
    from aibench.model import StepResult, StepSource
    from aibench.thresholds import load_spec
    from tests.reports.gen import make_run

    class Counted(StepSource):
        def __init__(self, steps: tuple[StepResult, ...]) -> None:
            self.steps, self.passes = steps, 0

        def __len__(self) -> int:
            return len(self.steps)

        def _pick(self, indices: Iterable[int]) -> Iterator[StepResult]:
            return (self.steps[i] for i in indices)

        def __iter__(self) -> Iterator[StepResult]:
            self.passes += 1
            return iter(self.steps)

    held = make_run(8, dense=True).run
    spec = load_spec("h100-ndr")
    assert len({c.select.tool for c in spec.checks if c.select}) >= 3
    assert any(c.fact is not None and c.fact.source != "environment" for c in spec.checks)
    source = Counted(tuple(held.steps))
    on_disk = held.replace(steps=source)
    assert on_disk.steps is source
    assert judge(spec, on_disk, now=NOW) == judge(spec, held, now=NOW)
    assert source.passes == 1
