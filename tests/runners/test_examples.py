"""The example GPU suites load, validate and plan over the example inventories."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from aibench.errors import UserError
from aibench.inventory import Inventory
from aibench.inventory_file import load_inventory
from aibench.plan import build_plan
from aibench.suite import load_suite

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SUITES = sorted(EXAMPLES.glob("suite-gpu-*.yaml"))


def test_there_are_gpu_example_suites() -> None:
    assert [p.name for p in SUITES] == ["suite-gpu-acceptance.yaml", "suite-gpu-slurm.yaml"]


def login_node_view(inv: Inventory) -> Inventory:
    """The Slurm inventory as seen from a login node: launchers run here (executor local)."""
    return replace(inv, nodes=tuple(replace(n, executor="local") for n in inv.nodes))


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.name)
@pytest.mark.parametrize("inventory", ["inventory-ssh.yaml", "inventory-slurm.yaml"])
def test_example_suite_plans(path: Path, inventory: str) -> None:
    suite = load_suite(str(path))
    inv = load_inventory(EXAMPLES / inventory)
    if inventory == "inventory-slurm.yaml":
        inv = login_node_view(inv)
    plan = build_plan(suite, inv)
    tools = {r.tool for r in plan.rounds}
    assert tools <= {"nccl-tests", "perftest", "mlperf-inference", "mlperf-training"}
    for i in plan.invocations:
        assert i.client.argv
        assert all("{" not in a for a in i.client.argv if i.tool == "nccl-tests")
        assert len({(s.host, s.argv) for s in i.servers}) == len(i.servers)
    # concurrent perftest servers on one host never share a port
    for r in plan.rounds:
        ports = [
            (s.host, s.argv[s.argv.index("-p") + 1])
            for i in r.invocations
            for s in i.servers
            if i.tool == "perftest"
        ]
        assert len(ports) == len(set(ports))


def test_acceptance_example_over_the_ssh_inventory() -> None:
    suite = load_suite(str(EXAMPLES / "suite-gpu-acceptance.yaml"))
    inv = load_inventory(EXAMPLES / "inventory-ssh.yaml")
    plan = build_plan(suite, inv)
    by_step: dict[str, list[object]] = {}
    for i in plan.invocations:
        by_step.setdefault(i.step, []).append(i)
    n = len([x for x in inv.nodes if x.labels.get("role") == "compute"])
    assert n == 8
    assert len(by_step["nccl-all-reduce-intra"]) == n
    assert len(by_step["nccl-all-reduce-all"]) == 1
    assert len(by_step["nccl-sendrecv-pairs"]) == n * (n - 1) // 2
    assert len(by_step["ib-write-bw"]) == 2 * n * (n - 1) // 2  # two rails per pair
    (train,) = by_step["training-llama31-8b"]
    argv = train.client.argv  # type: ignore[attr-defined]
    assert argv[argv.index("--runs") + 1] == "10"


def test_a_multi_node_launcher_inside_a_slurm_job_step_is_refused_with_a_hint() -> None:
    suite = load_suite(str(EXAMPLES / "suite-gpu-slurm.yaml"))
    inv = load_inventory(EXAMPLES / "inventory-slurm.yaml")  # executor: slurm
    with pytest.raises(UserError, match="inside a Slurm job step") as exc:
        build_plan(suite, inv)
    assert "executor: local" in (exc.value.hint or "")
