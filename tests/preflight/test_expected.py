"""The inventory's declared GPUs, HCAs and data directories against the collected facts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from aibench import parsers
from aibench.inventory import Inventory, Node
from aibench.model import Fact, Outcome
from aibench.preflight.expected import check
from aibench.tools import traits

DECLARES = traits("preflight").declares

FIX = Path(__file__).resolve().parent.parent / "fixtures"


def real(parser: str, path: str, node: str) -> list[Fact]:
    recs = parsers.parse(parser, (FIX / path).read_text())
    return [dataclasses.replace(r, nodes=(node,)) for r in recs if isinstance(r, Fact)]


def outcomes(verdicts: list) -> dict[tuple[str, str], str]:  # type: ignore[type-arg]
    return {(v.check, v.subject[0]): v.outcome.value for v in verdicts}


def test_declared_gpus_hcas_and_dirs_against_the_real_captures() -> None:
    node = Node(
        name="gpu01",
        facts={
            "gpus": {"model": "H100-SXM5-80GB", "count": 8},
            "hcas": [
                {"name": "mlx5_0", "port": 1, "rate_gbps": 400},
                {"name": "mlx5_bond_0", "port": 1, "rate_gbps": 400},
                {"name": "mlx5_3", "port": 1},
            ],
            "data_dirs": ["/data"],
        },
    )
    facts = (
        real("nvidia-smi-q", "nvidia-smi-q/h100-mig-590.48.01-load.txt", "gpu01")
        + real("ibstat", "ibstat/h100-all-active-mixed-ib-ethernet.txt", "gpu01")
        + [
            Fact(
                "mount",
                "target",
                None,
                dims={"path": "/data"},
                nodes=("gpu01",),
                reason="findmnt -T /data: findmnt: can't read /data: No such file or directory",
            )
        ]
    )
    vs = check(Inventory(name="t", nodes=(node,)), facts, DECLARES)
    got = {(v.check, v.expected): (v.outcome, v.observed_text) for v in vs}
    # the capture has one GPU (MIG enabled), the inventory says 8
    assert got[("inventory.gpu_count", "8 (inventory)")] == (Outcome.FAIL, "1")
    assert got[("inventory.hca_state", "mlx5_0 port 1 Active")] == (Outcome.PASS, "Active")
    rates = [v for v in vs if v.check == "inventory.hca_rate"]
    assert [(v.outcome, v.observed_text) for v in rates] == [
        (Outcome.PASS, "400 Gbit/s"),
        (Outcome.FAIL, "200 Gbit/s"),  # the Ethernet bond runs at 200
    ]
    # mlx5_3 is not in this node's ibstat listing at all
    assert got[("inventory.hca_state", "mlx5_3 port 1 Active")] == (Outcome.FAIL, "not listed")
    data = got[("inventory.data_dir", "/data mounted")]
    assert data[0] is Outcome.FAIL
    assert "No such file or directory" in data[1]


def test_hcas_declared_but_no_tool_readable_is_missing_not_pass() -> None:
    node = Node(name="n1", facts={"hcas": [{"name": "mlx5_0"}]})
    facts = [
        Fact("ibstat", "hca_count", None, nodes=("n1",), reason="ibstat: not installed"),
        Fact("ibv_devinfo", "hca_count", None, nodes=("n1",), reason="ibv_devinfo: not installed"),
    ]
    (v,) = check(Inventory(name="t", nodes=(node,)), facts, DECLARES)
    assert v.outcome is Outcome.MISSING
    assert "ibstat: not installed" in v.observed_text


def test_ibv_devinfo_is_used_where_ibstat_is_missing() -> None:
    node = Node(name="n1", facts={"hcas": [{"name": "mlx4_0", "port": 2, "rate_gbps": 40}]})
    facts = [
        *real("ibv-devinfo", "ibv-devinfo/mlx4-2hca-2port-one-down.txt", "n1"),
        Fact("ibstat", "hca_count", None, nodes=("n1",), reason="ibstat: not installed"),
    ]
    vs = check(Inventory(name="t", nodes=(node,)), facts, DECLARES)
    assert [(v.check, v.outcome, v.observed_text) for v in vs] == [
        ("inventory.hca_state", Outcome.FAIL, "PORT_DOWN")
    ]


def test_nothing_declared_nothing_judged() -> None:
    facts = real("nvidia-smi-q", "nvidia-smi-q/h100-mig-590.48.01-load.txt", "n1")
    assert check(Inventory(name="t", nodes=(Node(name="n1"),)), facts, DECLARES) == []


def _absent(source: str, name: str, node: str) -> Fact:
    return Fact(source, name, None, nodes=(node,), reason=f"{source}: not installed")


def test_amd_and_ascend_nodes_with_the_right_count_pass() -> None:
    """The GPU count comes from whichever GPU tool the node has (real captures): an
    absent nvidia-smi on an AMD or Ascend node is not the answer."""
    cases = {
        "amd-smi": real("amd-smi-static", "amd-smi-static/mi210-gpu_data-rocm6.4.json", "n1"),
        "rocm-smi": real("rocm-smi-json", "rocm-smi-json/rx6600-showallinfo-jq.json", "n1"),
        "npu-smi": real("npu-smi-info", "npu-smi-info/910b2-23.0.7-eight-npus-idle.txt", "n1"),
    }
    for tool, facts in cases.items():
        count = next(f.value for f in facts if f.name in ("gpu_count", "npu_count"))
        node = Node(name="n1", facts={"gpus": {"model": "x", "count": count}})
        found = [_absent("nvidia-smi", "gpu_count", "n1"), *facts]
        (v,) = check(Inventory(name="t", nodes=(node,)), found, DECLARES)
        assert v.outcome is Outcome.PASS, (tool, v)
        assert v.observed_text == str(count)
        wrong = Node(name="n1", facts={"gpus": {"model": "x", "count": int(count) + 1}})
        (v,) = check(Inventory(name="t", nodes=(wrong,)), found, DECLARES)
        assert v.outcome is Outcome.FAIL
        assert tool in v.reason


def test_no_gpu_tool_readable_names_every_tool() -> None:
    node = Node(name="n1", facts={"gpus": {"model": "x", "count": 8}})
    found = [_absent("nvidia-smi", "gpu_count", "n1"), _absent("amd-smi", "gpu_count", "n1")]
    (v,) = check(Inventory(name="t", nodes=(node,)), found, DECLARES)
    assert v.outcome is Outcome.FAIL
    assert "nvidia-smi" in v.reason
    assert "amd-smi" in v.reason


def test_expected_names_no_tool() -> None:
    import aibench.preflight.expected as mod

    text = Path(mod.__file__).read_text()
    for tool in ("nvidia-smi", "amd-smi", "rocm-smi", "npu-smi", "ibstat", "ibv_devinfo"):
        assert tool not in text, tool
