"""The covering placement for large fleets (aibench.placement.cover), the suspects it
finds, and the second phase the plan makes of them (aibench.plan)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aibench import placement
from aibench.inventory import Inventory, Limits, Node
from aibench.model import StepStatus
from tests.thresholds.helpers import m, step


def _partners(rounds: list[placement.Round]) -> dict[str, set[str]]:
    met: dict[str, set[str]] = {}
    for rnd in rounds:
        seen: set[str] = set()
        for a, b in rnd:
            assert a != b
            assert not {a, b} & seen, rnd  # disjoint pairs
            seen |= {a, b}
            met.setdefault(a, set()).add(b)
            met.setdefault(b, set()).add(a)
    return met


@pytest.mark.parametrize(("n", "k"), [(20, 3), (64, 8), (101, 5), (512, 16)])
def test_every_node_meets_k_partners_in_about_k_rounds(n: int, k: int) -> None:
    nodes = [f"n{i:03d}" for i in range(n)]
    rounds = placement.cover(nodes, k)
    met = _partners(rounds)
    assert set(met) == set(nodes)
    assert min(len(p) for p in met.values()) >= k
    assert len(rounds) <= k + 2
    assert placement.cover(nodes, k) == rounds  # the same seed, the same rounds
    assert placement.cover(nodes, k, seed=1) != rounds


def test_a_small_fleet_is_every_pair() -> None:
    nodes = [f"n{i}" for i in range(6)]
    assert placement.cover(nodes, 8) == placement.pairs(nodes)
    with pytest.raises(ValueError, match="k must be at least 1"):
        placement.cover(nodes, 0)


@pytest.mark.parametrize(("groups", "size", "k"), [(8, 16, 3), (5, 12, 8), (3, 7, 2)])
def test_every_node_has_a_partner_in_every_other_group(groups: int, size: int, k: int) -> None:
    nodes = [f"n{g}-{i}" for g in range(groups) for i in range(size)]
    labels = {n: n.split("-")[0] for n in nodes}
    met = _partners(placement.cover(nodes, k, labels))
    for n, partners in met.items():
        assert {labels[p] for p in partners} >= set(labels.values()) - {labels[n]}, n
        assert len(partners) >= k


@pytest.mark.parametrize(
    ("values", "failed", "expected"),
    [
        ({("a", "b"): 10.0, ("c", "d"): 10.0, ("e", "f"): 10.0}, [], []),
        ({("a", "b"): 10.0, ("c", "d"): 5.0, ("e", "f"): 9.9}, [], ["c", "d"]),
        ({("a", "b"): 10.0, ("c", "d"): 8.6, ("e", "f"): 10.0}, [("a", "f")], ["a", "f"]),
        ({}, [("x", "y")], ["x", "y"]),
    ],
)
def test_suspects_are_the_nodes_of_slow_and_failed_pairs(
    values: dict[tuple[str, str], float], failed: list[tuple[str, str]], expected: list[str]
) -> None:
    assert placement.suspect_nodes(values, failed) == expected


def test_at_most_limit_suspects_the_failed_and_slowest_first() -> None:
    values = {(f"a{i:02d}", f"b{i:02d}"): 10.0 - i * 0.5 for i in range(12)}
    # pairs 8..11 are under 85 % of the median (7.25): 8 nodes, and the failed pair's 2
    assert len(placement.suspect_nodes(values, [("x", "y")])) == 10
    # 5 of them: the failed pair's, then the slowest pair's, then the next slowest
    got = placement.suspect_nodes(values, [("x", "y")], limit=5)
    assert got == ["a10", "a11", "b11", "x", "y"]


def _suite(tmp_path: Path, above: int) -> Path:
    path = tmp_path / "cover.yaml"
    path.write_text(
        "schema_version: 1\nname: cover\nsteps:\n"
        f"  - {{name: net, tool: iperf3, placement: auto, cover_above: {above}, partners: 4,\n"
        "     repeats: 2, options: {duration: 5, bidir: true}}\n"
    )
    return path


def test_auto_chooses_cover_above_its_size_and_prints_why(tmp_path: Path) -> None:
    from aibench.plan import build_plan, plan_lines
    from aibench.suite import load_suite

    nodes = tuple(Node(f"n{i:03d}", labels={"leaf": f"l{i // 8}"}) for i in range(64))
    inv = Inventory("c", nodes, limits=Limits(max_parallel=1000))
    plan = build_plan(load_suite(str(_suite(tmp_path, 32))), inv)
    text = "\n".join(plan_lines(plan))
    assert (
        "placement auto: 64 nodes, more than cover_above (32): each node against 4 "
        "partners, one at least in every other leaf, then every pair among the suspects"
    ) in text
    assert "(every pair instead: 4032 runs in 126 rounds, about 13 min)" in text
    assert "step net-suspects (iperf3): planned from the results of net" in text
    assert [s.name for s in plan.steps] == ["net", "net-suspects"]
    # 8 leaves: 7 rounds cross them, each node has 7 partners >= 4
    assert plan.steps[0].round_count() == 2 * 7
    small = build_plan(load_suite(str(_suite(tmp_path, 64))), inv)
    assert [s.name for s in small.steps] == ["net"]
    assert "64 nodes, at most cover_above (64): every pair" in "\n".join(plan_lines(small))


def test_the_second_phase_is_planned_from_the_first_phases_results(tmp_path: Path) -> None:
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    nodes = tuple(Node(f"n{i:03d}") for i in range(40))
    plan = build_plan(load_suite(str(_suite(tmp_path, 32))), Inventory("c", nodes))
    first, second = plan.steps
    assert second.pending
    assert second.runs() == 0  # nothing counted before it is planned
    results = []
    for rnd in first.rounds():
        for inv in rnd.invocations:
            a, b = inv.nodes
            slow = "n007" in (a, b) or {a, b} == {"n010", "n020"}
            gbit = 3.0 if slow else 9.4
            ms = [
                m("iperf3", "throughput", gbit * 1e9, "bit/s", (), side="receiver", direction=d)
                for d in ("forward", "reverse")
            ]
            status = StepStatus.FAILED if {a, b} == {"n030", "n031"} else StepStatus.OK
            results.append(step("net", "iperf3", (a, b), ms, repeat=rnd.repeat, status=status))
    met = _partners(list(first.schedule))
    link_measured = "n020" in met["n010"]
    by_step = {"net": results}
    rounds = list(plan.iter_rounds(lambda name: by_step[name]))
    sched = second.schedule
    assert isinstance(sched, placement.SuspectRounds)
    assert sched.suspects is not None
    expected = {"n007", *met["n007"]}
    if link_measured:
        expected |= {"n010", "n020"}
    if "n031" in met["n030"]:
        expected |= {"n030", "n031"}
    assert set(sched.suspects) == expected
    chosen = {n for rnd in sched for p in rnd for n in p}
    assert len(chosen - expected) == 2  # two good references
    assert len(rounds) == 2 * 4 + 2 * len(sched)
    assert second.runs() == 2 * len(chosen) * (len(chosen) - 1) // 2


def test_the_plan_warns_past_the_suites_limit_and_names_what_shortens_it(
    tmp_path: Path,
) -> None:
    from aibench.plan import build_plan, plan_lines
    from aibench.suite import load_suite

    path = tmp_path / "long.yaml"
    path.write_text(
        "schema_version: 1\nname: long\nsettings: {max_hours: 0.5}\nsteps:\n"
        "  - {name: net, tool: iperf3, placement: pairs, repeats: 3, options: {duration: 5}}\n"
    )
    nodes = tuple(Node(f"n{i:03d}") for i in range(200))
    plan = build_plan(load_suite(str(path)), Inventory("c", nodes, limits=Limits(max_parallel=50)))
    (warning,) = [x for x in plan_lines(plan) if x.startswith("warning:")]
    # 199 rounds of 100 pairs, 50 at once: 2 waves of 6 s, 3 times
    assert "the estimate, 2.0 h, passes the suite's limit of 30 min (settings.max_hours)" in warning
    assert (
        "steps[0] (net, 2.0 h): placement: auto or cover, each node against 16 partners" in warning
    )
    assert "pairwise, about 10 min" in warning  # 16 of the 199 rounds
    assert "steps[0] (net, 2.0 h): repeats: 1, about 40 min" in warning
    assert "limits.max_parallel (50) runs the 100 runs of a round of net in waves" in warning
    path.write_text(path.read_text().replace("max_hours: 0.5", "max_hours: 8"))
    plan = build_plan(load_suite(str(path)), Inventory("c", nodes, limits=Limits(max_parallel=50)))
    assert not [x for x in plan_lines(plan) if x.startswith("warning:")]
