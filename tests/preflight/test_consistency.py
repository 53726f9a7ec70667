"""Golden-config consistency across the fleet: the odd node out is named, with the majority."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aibench import parsers
from aibench.consistency import check
from aibench.model import Fact, Outcome
from aibench.preflight import environment_from_facts

FIX = Path(__file__).resolve().parent.parent / "fixtures"
Q = (FIX / "nvidia-smi-q" / "h100-mig-590.48.01-load.txt").read_text()
IB = (FIX / "ibstat" / "h100-all-active-mixed-ib-ethernet.txt").read_text()


def node_facts(node: str, q: str = Q) -> list[Fact]:
    """The facts one node would report: the real captures, attributed to ``node``."""
    recs = [*parsers.parse("nvidia-smi-q", q), *parsers.parse("ibstat", IB)]
    return [dataclasses.replace(r, nodes=(node,)) for r in recs if isinstance(r, Fact)]


def fleet(n: int, odd: dict[str, str] | None = None) -> list[Fact]:
    out: list[Fact] = []
    for i in range(1, n + 1):
        name = f"gpu{i:02d}"
        q = Q
        if odd and name in odd:
            q = Q.replace(
                "Driver Version                                         : 590.48.01",
                f"Driver Version                                         : {odd[name]}",
            )
        out += node_facts(name, q)
    return out


def test_five_nodes_one_odd_driver_names_that_node_with_the_majority() -> None:
    verdicts = check(fleet(5, odd={"gpu04": "570.124.06"}))
    assert len(verdicts) == 1
    v = verdicts[0]
    assert v.check == "consistency.driver_version"
    assert v.outcome is Outcome.FAIL
    assert v.subject == ("gpu04",)
    assert v.culprits == ("gpu04",)
    assert v.observed_text == "570.124.06"
    assert v.expected == "majority: 590.48.01 (4 of 5 nodes)"


def test_identical_fleet_has_no_findings() -> None:
    assert check(fleet(5)) == []


def test_a_tie_names_every_node_outside_the_first_value() -> None:
    verdicts = check(fleet(4, odd={"gpu03": "570.124.06", "gpu04": "570.124.06"}))
    assert [v.subject for v in verdicts] == [("gpu01",), ("gpu02",)]
    assert verdicts[0].expected.startswith("no majority: 570.124.06 (2 of 4 nodes), 590.48.01")


def test_an_absent_fact_is_an_odd_value_too() -> None:
    facts = [
        *fleet(3),
        Fact(
            "nvidia-smi",
            "driver_version",
            None,
            nodes=("gpu04",),
            reason="nvidia-smi: not installed",
        ),
    ]
    verdicts = [v for v in check(facts) if v.check == "consistency.driver_version"]
    assert [(v.subject, v.observed_text) for v in verdicts] == [(("gpu04",), "absent")]
    assert verdicts[0].expected == "majority: 590.48.01 (3 of 4 nodes)"


def test_hca_firmware_mismatch_is_a_warning() -> None:
    facts = fleet(3)
    facts = [
        dataclasses.replace(f, value="28.39.2048")
        if f.nodes == ("gpu02",) and f.name == "firmware_version" and f.dims.get("hca") == "mlx5_0"
        else f
        for f in facts
    ]
    (v,) = check(facts)
    assert v.check == "consistency.hca_firmware"
    assert v.outcome is Outcome.WARN
    assert v.subject == ("gpu02",)
    assert v.observed_text == "28.39.2048, 28.41.1000, 32.38.3056"


def test_one_node_has_nothing_to_compare() -> None:
    assert check(fleet(1)) == []


def test_environment_from_facts_is_one_value_per_node_and_name() -> None:
    env = environment_from_facts(fleet(2))
    assert set(env) == {"gpu01", "gpu02"}
    assert env["gpu01"]["nvidia-smi.driver_version"] == "590.48.01"
    assert env["gpu01"]["nvidia-smi.gpu_count"] == 1
    assert env["gpu01"]["ibstat.hca_count"] == 9
    everything = environment_from_facts(fleet(1), keys=None)["gpu01"]
    assert everything["nvidia-smi.retired_pages_sbe"] is None


def test_results_give_the_reporting_steps_as_evidence() -> None:
    from aibench.consistency import check_results
    from aibench.model import StepResult, StepStatus

    results = []
    for node, driver in (("gpu01", "590.48.01"), ("gpu02", "590.48.01"), ("gpu03", "570.124.06")):
        q = Q.replace(
            "Driver Version                                         : 590.48.01",
            f"Driver Version                                         : {driver}",
        )
        facts = [dataclasses.replace(f, nodes=(node,)) for f in parsers.parse("nvidia-smi-q", q)]
        results.append(
            StepResult(
                step_id=f"preflight/{node}.gpu-q/r0",
                step="preflight",
                tool="preflight",
                nodes=(node,),
                repeat=0,
                status=StepStatus.OK,
                facts=tuple(facts),  # type: ignore[arg-type]
            )
        )
    (v,) = check_results(results)
    assert v.subject == ("gpu03",)
    assert v.evidence == ("preflight/gpu03.gpu-q/r0",)
