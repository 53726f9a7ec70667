"""The metadata-failover runner: it plans only when the suite opts in, runs the stop
command on the MDS host as a server of the step and the workload on a client, and reads
both outputs (real captures in tests/fixtures/metadata-failover)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from aibench.errors import ToolFailure
from aibench.inventory import Node
from aibench.runners.base import Output, Slot
from aibench.runners.metadata_failover import READY, RUNNER, MetadataFailoverOptions

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "metadata-failover"
GOOD = {"allow_disruption": True, "directory": "/mnt/cephfs", "mds_host": "mds1",
        "stop_command": ["systemctl", "kill", "-s", "KILL", "ceph-mds@mds1"]}  # fmt: skip
NODES = [Node("c1", "10.0.0.1"), Node("mds1", "10.0.0.9"), Node("c2", "10.0.0.2")]


def _options(**over: object) -> MetadataFailoverOptions:
    return MetadataFailoverOptions.model_validate({**GOOD, **over})


@pytest.mark.parametrize(
    "over",
    [{"allow_disruption": False}, {"allow_disruption": None}, {"stop_command": []},
     {"directory": "mnt"}, {"mds_host": "-x"}, {"stop_command": ["kill", "a\nb"]}],
)  # fmt: skip
def test_the_step_is_refused_unless_it_opts_in_with_a_command(over: dict[str, object]) -> None:
    data = {**GOOD, **over}
    if over.get("allow_disruption") is None:
        data.pop("allow_disruption")
    with pytest.raises(ValidationError) as e:
        MetadataFailoverOptions.model_validate(data)
    if "allow_disruption" in over:
        assert "allow_disruption: true" in str(e.value)


def test_plan_stops_on_the_mds_host_and_loads_from_the_first_client() -> None:
    (inv,) = RUNNER.invocations("fo", _options(stop_after=3), NODES, Slot(repeat=2))
    assert inv.nodes == ("c1",)
    (stop,) = inv.servers
    assert stop.host == "mds1"
    assert stop.role == "server"
    assert stop.argv[3:] == ("aibench-failover", "3", *GOOD["stop_command"])  # type: ignore[misc]
    assert stop.ready is not None
    assert stop.ready.pattern == READY
    assert inv.client.host == "c1"
    assert inv.client.argv[0] == "python3"
    assert inv.client.argv[3:] == ("/mnt/cephfs/aibench-failover-fo-r2", "120", "6", "1", "3")


def test_plan_needs_the_mds_host_and_a_client_among_the_nodes() -> None:
    with pytest.raises(ValueError, match="not one of the step's nodes"):
        RUNNER.invocations("fo", _options(mds_host="mds9"), NODES, Slot())
    with pytest.raises(ValueError, match="client node"):
        RUNNER.invocations("fo", _options(), [NODES[1]], Slot())


def _collect(tmp_path: Path, name: str) -> list[object]:
    (inv,) = RUNNER.invocations("fo", _options(), NODES, Slot())
    client, stop = (FIX / name).read_text().split("\n\n", 1)
    (tmp_path / "c1.r0.server-mds1.stdout").write_text(stop)
    return list(RUNNER.collect(inv, Output(client, "", 0, tmp_path)))


def test_collect_reads_the_stop_from_the_servers_output(tmp_path: Path) -> None:
    got = {r.metric: r.value for r in _collect(tmp_path, "cephfs-kill9-active.out")}  # type: ignore[attr-defined]
    assert got["stall"] == pytest.approx(42.42, abs=0.01)
    assert got["takeover"] == pytest.approx(42.36, abs=0.01)


def test_collect_without_the_stop_output_fails(tmp_path: Path) -> None:
    (inv,) = RUNNER.invocations("fo", _options(), NODES, Slot())
    client = (FIX / "cephfs-kill9-active.out").read_text().split("\n\n", 1)[0]
    with pytest.raises(ToolFailure, match="the stop command never ran"):
        RUNNER.collect(inv, Output(client, "", 0, tmp_path))


def test_the_ceph_example_loads_and_plans_the_failover_on_the_mds_host() -> None:
    from aibench.inventory_file import load_inventory
    from aibench.plan import build_plan
    from aibench.suite import load_suite
    from aibench.thresholds import load_spec

    examples = Path(__file__).resolve().parents[2] / "examples"
    plan = build_plan(load_suite(str(examples / "suite-ceph.yaml")),
                      load_inventory(examples / "inventory-ceph.yaml"))  # fmt: skip
    (fo,) = [i for i in plan.invocations if i.step == "mds-failover"]
    assert fo.servers[0].host == "mds01"
    assert fo.client.host == "client01"
    rados = {i.nodes[0] for i in plan.invocations if i.step == "rados"}
    assert rados == {f"client{k:02d}" for k in range(1, 9)}
    sweep = [i for i in plan.invocations if i.step == "cephfs-read-sweep"]
    assert "/mnt/cephfs/aibench/aibench-cephfs-read-sweep-" in " ".join(sweep[0].client.argv)
    spec = load_spec(str(examples / "spec-ceph.yaml"))
    assert {c.select.tool for c in spec.checks if c.select} == {
        "rados-bench", "fio-cluster", "metadata-failover"}  # fmt: skip
