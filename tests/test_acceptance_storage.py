"""Storage in the acceptance suite: its storage steps are planned where the inventory
declares a shared file system, an object store or a cache, and not at all where it does
not (the plan is then exactly the one of the suite without them); the default spec's
storage checks are judged in the first case and not applicable in the second."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aibench.config import validate
from aibench.inventory_file import InventoryModel, build_inventory
from aibench.model import Measurement, Run, StepResult, StepStatus
from aibench.plan import build_plan, format_plan
from aibench.suite import load_suite
from aibench.suites import __file__ as suites_init
from aibench.thresholds import judge, load_spec, not_applicable

ACCEPTANCE = Path(suites_init).parent / "acceptance.yaml"
STORAGE_STEPS = {"shared-write-sweep", "shared-read-sweep", "shared-metadata",
                 "shared-checkpoint", "object-store", "cache"}  # fmt: skip
DECLARED = {
    "shared_filesystems": [{"name": "cephfs", "mount": "/mnt/cephfs", "type": "cephfs"}],
    "s3_endpoints": [{"name": "rgw", "url": "http://10.0.3.10:7480", "bucket": "handover",
                      "credentials_file": "/etc/aibench/s3-credentials"}],
    "redis_endpoints": [{"name": "cache", "host": "10.0.3.20"}],
}  # fmt: skip


def _inventory(defaults: dict[str, Any], n: int = 4) -> Any:
    data = {"name": "c", "defaults": {"executor": "local", **defaults},
            "nodes": [{"name": f"n[1-{n}]"}]}  # fmt: skip
    return build_inventory(validate(InventoryModel, data, "inv.yaml"), "inv.yaml", data)


def _without_storage(tmp_path: Path) -> Path:
    doc = yaml.safe_load(ACCEPTANCE.read_text())
    doc["steps"] = [s for s in doc["steps"] if "requires" not in s]
    path = tmp_path / "acceptance.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _shape(plan: Any) -> list[Any]:
    return [(i.step_id, i.round, i.client, i.servers, i.setup, i.expected_s)
            for i in plan.invocations]  # fmt: skip


def test_an_inventory_without_storage_plans_exactly_as_the_suite_without_its_steps(
    tmp_path: Path,
) -> None:
    suite = load_suite("acceptance")
    assert {s.name for s in suite.steps if s.model.requires} == STORAGE_STEPS
    inv = _inventory({})
    got, before = (
        build_plan(suite, inv),
        build_plan(load_suite(str(_without_storage(tmp_path))), inv),
    )
    assert _shape(got) == _shape(before)
    assert got.estimated_seconds() == before.estimated_seconds()
    assert format_plan(got).split("\n")[1:] == format_plan(before).split("\n")[1:]
    assert not {s.name for s in got.steps} & STORAGE_STEPS


def test_declared_storage_is_planned_on_the_nodes_that_declare_it() -> None:
    plan = build_plan(load_suite("acceptance"), _inventory(DECLARED))
    steps = {s.name: s for s in plan.steps}
    assert set(steps) >= STORAGE_STEPS
    sweep = [i for i in plan.invocations if i.step == "shared-write-sweep"]
    assert [len(i.nodes) for i in sweep] == [1, 2, 4]
    # fio writes under the declared mount's directory, the argv names the scratch tree
    assert any("/mnt/cephfs/aibench/aibench-shared-write-sweep-" in a for a in sweep[0].client.argv)
    s3 = next(i for i in plan.invocations if i.step == "object-store")
    assert "http://10.0.3.10:7480" in s3.client.argv
    assert "handover" in s3.client.argv  # the endpoint's bucket
    assert "rgw" in s3.client.argv
    cache = next(i for i in plan.invocations if i.step == "cache")
    assert cache.client.argv[1:3] == ("-h", "10.0.3.20")


def test_only_the_nodes_that_declare_it_run_a_storage_step() -> None:
    data = {"name": "c", "defaults": {"executor": "local"},
            "nodes": [{"name": "a1", **DECLARED}, {"name": "b1"}]}  # fmt: skip
    inv = build_inventory(validate(InventoryModel, data, "inv.yaml"), "inv.yaml", data)
    plan = build_plan(load_suite("acceptance"), inv)
    for step in ("shared-metadata", "object-store", "cache"):
        assert {n for i in plan.invocations if i.step == step for n in i.nodes} == {"a1"}
    assert {n for i in plan.invocations if i.step == "fio-seq-read" for n in i.nodes} == {
        "a1", "b1"}  # fmt: skip


def test_a_shared_file_system_needs_an_absolute_mount() -> None:
    from aibench.errors import ConfigError

    bad = {"shared_filesystems": [{"name": "fs", "mount": "mnt/fs", "type": "nfs"}]}
    with pytest.raises(ConfigError, match="absolute"):
        _inventory(bad)


def _run(defaults: dict[str, Any]) -> Run:
    inv = _inventory(defaults, n=1)
    m = Measurement("fio-cluster", "bw", 900_000.0, "KiB/s", {"client": "all", "clients": 1},
                    nodes=("n1",))  # fmt: skip
    step = StepResult(step_id="shared-read-sweep/n1/r0", step="shared-read-sweep",
                      tool="fio-cluster", nodes=("n1",), repeat=0, status=StepStatus.OK,
                      measurements=(m,))  # fmt: skip
    return Run(id="r", suite="acceptance", spec="default", inventory=inv.to_dict(), steps=(step,))


def test_the_default_specs_storage_checks_apply_only_to_declared_storage() -> None:
    spec = load_spec("default")
    storage = {c.id for c in spec.checks if c.requires}
    assert {"shared-read-aggregate", "object-store-put-large", "cache-get-rate"} <= storage
    for c in spec.checks:
        if c.requires:
            assert c.source, c.id  # an honest source on every storage row
    plain = _run({})
    assert not storage & {v.check for v in judge(spec, plain)}
    notes = not_applicable(spec, plain)
    assert any("shared-read-aggregate: not applicable: the inventory declares no shared file "
               "system" in n for n in notes)  # fmt: skip
    declared = judge(spec, _run(DECLARED))
    got = {v.check: v.outcome.value for v in declared}
    assert got["shared-read-aggregate"] == "PASS"  # 900000 KiB/s ≈ 922 MB/s
    assert got["object-store-put-large"] == "MISSING"  # declared, not measured: never a pass


def test_fio_cluster_on_a_declared_file_system_needs_it_on_every_node_at_one_path() -> None:
    from aibench.inventory import Node
    from aibench.runners.base import Slot
    from aibench.runners.fio_cluster import RUNNER, FioClusterOptions

    def node(name: str, mount: str | None) -> Node:
        fs = [{"name": "fs", "mount": mount, "type": "nfs"}] if mount else []
        return Node(name, name, facts={"shared_filesystems": fs})

    o = FioClusterOptions.model_validate({"filesystem": "fs"})
    with pytest.raises(ValueError, match="at different paths"):
        RUNNER.invocations("s", o, [node("a", "/mnt/x"), node("b", "/mnt/y")], Slot())
    with pytest.raises(ValueError, match="not in the inventory of b"):
        RUNNER.invocations("s", o, [node("a", "/mnt/x"), node("b", None)], Slot())
    with pytest.raises(ValueError, match="directory or filesystem"):
        FioClusterOptions.model_validate({"filesystem": "fs", "directory": "/mnt/x"})
