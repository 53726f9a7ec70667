"""A Pod per rank (the suite's ``settings.kubernetes.pods: per_rank``) for an mpirun launch
across Kubernetes nodes: the shares of the node's resources, the rank Pods, the launcher
alone, the ssh aliases and the plan's refusals, as data (no cluster)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from aibench.executors.base import Command
from aibench.executors.kubernetes_mpi import MPI_DIR, share
from aibench.inventory import Inventory
from tests.test_kubernetes_mpi import inventory_of

BLOCK = {
    "namespace": "aibench",
    "image": "registry.example/nccl-tests:2.13",
    "resources": {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "8", "memory": "1Ti"},
                  "requests": {"cpu": "96", "memory": "512Gi"}},
    "shm_size": "64Gi",
    "annotations": {"k8s.v1.cni.cncf.io/networks": "rdma-net"},
    "mpi_launch": "ssh",
    "mpi_ssh_port": 2022,
}  # fmt: skip
ARGV = ("mpirun", "--host", "10.0.0.1:2,10.0.0.2:2", "-np", "4", "--map-by", "ppr:2:node",
        "-x", "NCCL_DEBUG", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G")  # fmt: skip


def _inventory(tmp_path: Path, **change: object) -> Inventory:
    return inventory_of(tmp_path, BLOCK, **change)


def test_a_nodes_resources_divide_among_its_ranks() -> None:
    res = {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "8", "memory": "1Ti", "cpu": "2"},
           "requests": {"cpu": "96", "memory": "100G", "ephemeral-storage": "1e9"}}  # fmt: skip
    assert share(res, 8) == {
        "limits": {"nvidia.com/gpu": "1", "rdma/ib": "1", "memory": "128Gi", "cpu": "250m"},
        "requests": {"cpu": "12", "memory": "12500M", "ephemeral-storage": "125M"},
    }
    assert share(res, 1) == {
        "limits": {"nvidia.com/gpu": "8", "rdma/ib": "8", "memory": "1Ti", "cpu": "2"},
        "requests": {"cpu": "96", "memory": "100G", "ephemeral-storage": "1G"},
    }
    assert share({"limits": {"memory": "3Gi"}}, 2) == {"limits": {"memory": "1536Mi"}}
    assert share({"limits": {"memory": "1.5Gi", "cpu": "0.5"}}, 2) == {
        "limits": {"memory": "768Mi", "cpu": "250m"}
    }
    with pytest.raises(
        ValueError,
        match=r"^limits.nvidia.com/gpu: 8 over 3 ranks is not a whole number of devices$",
    ):
        share(res, 3)
    with pytest.raises(ValueError, match="cpu: 1 over 3 ranks is not a whole number of millicores"):
        share({"requests": {"cpu": "1"}}, 3)
    with pytest.raises(ValueError, match="is not a Kubernetes quantity"):
        share({"limits": {"memory": "lots"}}, 2)


class _Api:
    """The objects a launch creates and deletes, recorded."""

    def __init__(self) -> None:
        self.made: list[dict[str, Any]] = []
        self.deleted: list[str] = []

    def create_namespaced_secret(self, _ns: str, body: Any, **_k: Any) -> None:
        self.made.append(body)

    create_namespaced_config_map = create_namespaced_secret

    def delete_namespaced_secret(self, name: str, *_a: Any, **_k: Any) -> None:
        self.deleted.append(name)

    delete_namespaced_config_map = delete_namespaced_secret


def _launch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[_Api, Any]:
    """A per-rank launch of ARGV against a recording API; mpirun's exit 0."""
    from aibench.executors import kubernetes as k8s

    inv = _inventory(tmp_path)
    head = inv.nodes[0]
    assert head.kubernetes is not None
    ex = k8s.KubernetesExecutor(head.kubernetes, nodes={n.name: n for n in inv.nodes})
    api = _Api()

    async def submit(name: str, body: Any) -> None:
        api.made.append(body)

    async def ensure_lease() -> str:
        ex._lease_uid = "u"
        return "u"

    async def run_pod(*_a: Any) -> Any:
        return _a[-1](exit_code=0)

    async def delete(name: str) -> None:
        api.deleted.append(name)

    for attr, fn in (("_core", lambda: api), ("_submit", submit), ("_run_pod", run_pod),
                     ("_ensure_lease", ensure_lease), ("_delete", delete),
                     ("_wait_started", lambda *_a: asyncio.sleep(0))):  # fmt: skip
        monkeypatch.setattr(ex, attr, fn)
    cmd = Command(ARGV, role="launch", hosts=("gpu01", "gpu02"), timeout=60, per_rank=True,
                  shm_size="16Gi")  # fmt: skip
    try:
        res = asyncio.run(ex.run(head, cmd, tmp_path / "o", tmp_path / "e"))
    finally:
        ex._pool.shutdown(wait=False)
    return api, res


def test_a_pod_per_rank_with_its_share_and_port_and_mpirun_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    api, res = _launch(tmp_path, monkeypatch)
    assert res.exit_code == 0
    secret, hosts, *pods, launcher = api.made
    base = secret["metadata"]["name"].removesuffix("-ssh")
    ranks = [f"{base}-r0-0", f"{base}-r0-1", f"{base}-r1-0", f"{base}-r1-1"]
    assert [p["metadata"]["name"] for p in pods] == ranks
    assert [(p["spec"]["nodeName"], p["spec"]["containers"][0]["command"][-1]) for p in pods] == [
        ("gpu01", "2022"), ("gpu01", "2023"), ("gpu02", "2022"), ("gpu02", "2023")
    ]  # fmt: skip
    for p in pods:
        c = p["spec"]["containers"][0]
        assert c["resources"] == {
            "limits": {"nvidia.com/gpu": "4", "rdma/ib": "4", "memory": "512Gi"},
            "requests": {"cpu": "48", "memory": "256Gi"},
        }
        shm = {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}
        assert shm in p["spec"]["volumes"]  # each rank's own /dev/shm, of the suite's size
        assert p["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
        assert p["metadata"]["labels"]["aibench.io/role"] == "mpi-worker"
    assert hosts["data"]["hostfile"] == "".join(f"{r} slots=1\n" for r in ranks)
    assert hosts["data"]["ssh_config"] == (
        f"Host {ranks[0]}\n  HostName 10.0.0.1\n  Port 2022\n"
        f"Host {ranks[1]}\n  HostName 10.0.0.1\n  Port 2023\n"
        f"Host {ranks[2]}\n  HostName 10.0.0.2\n  Port 2022\n"
        f"Host {ranks[3]}\n  HostName 10.0.0.2\n  Port 2023\n"
        f"Host *\n  IdentityFile {MPI_DIR}/id_ed25519\n  IdentitiesOnly yes\n"
        f"  StrictHostKeyChecking yes\n  UserKnownHostsFile {MPI_DIR}/known_hosts\n"
    )
    assert set(secret["data"]) == {"id_ed25519", "authorized_keys", "host_key", "known_hosts"}
    lc = launcher["spec"]["containers"][0]
    assert launcher["spec"]["nodeName"] == "gpu01"
    assert lc["resources"] == {}  # mpirun alone: no device
    assert "annotations" not in launcher["metadata"]
    assert all(m["mountPath"] != "/dev/shm" for m in lc["volumeMounts"])
    argv = list(ARGV)
    argv[2], argv[6] = ",".join(f"{r}:1" for r in ranks), "ppr:1:node"
    assert lc["command"][4:] == argv
    env = {e["name"]: e.get("value") for e in lc["env"]}
    assert env["OMPI_MCA_plm_rsh_args"] == f"-F {MPI_DIR}-hosts/ssh_config"
    assert env["OMPI_MCA_plm_rsh_no_tree_spawn"] == "1"
    assert env["OMPI_MCA_orte_default_hostfile"] == f"{MPI_DIR}-hosts/hostfile"
    assert sorted(api.deleted) == sorted([*ranks, f"{base}-launcher", f"{base}-ssh",
                                          f"{base}-hosts"])  # fmt: skip


def _suite(tmp_path: Path, pods: str, ranks: int, more: str = "") -> Any:
    from aibench.suite import load_suite

    path = tmp_path / "suite.yaml"
    path.write_text(f"schema_version: 1\nname: k\nsettings: {{kubernetes: {{pods: {pods}}}}}\n"
                    "steps:\n  - {name: nccl, tool: nccl-tests, placement: all, options: "
                    f"{{op: all_reduce, ranks_per_node: {ranks}{more}}}}}\n")  # fmt: skip
    return load_suite(str(path))


def test_the_plan_refuses_shares_that_are_not_whole_with_one_line(tmp_path: Path) -> None:
    from aibench.errors import UserError
    from aibench.orchestrator import _client_command
    from aibench.plan import build_plan

    inv = _inventory(tmp_path)
    with pytest.raises(UserError) as got:
        build_plan(_suite(tmp_path, "per_rank", 3), inv)
    assert "\n" not in str(got.value)
    assert got.value.message == (
        "step nccl: settings.kubernetes.pods: per_rank: node gpu01: kubernetes.resources "
        "limits.memory: 1Ti over 3 ranks is not a whole number of bytes"
    )
    with pytest.raises(UserError, match="per_rank: a Pod per rank is launched with mpi_launch"):
        build_plan(_suite(tmp_path, "per_rank", 8), _inventory(tmp_path, mpi_launch="mpijob"))
    with pytest.raises(UserError, match="--map-by ppr:4:socket places ranks inside a node's"):
        build_plan(_suite(tmp_path, "per_rank", 8, ", map_by: 'ppr:4:socket'"), inv)
    build_plan(_suite(tmp_path, "per_node", 3), inv)  # one Pod per node: nothing to divide
    for pods, per_rank in (("per_rank", True), ("per_node", False)):
        suite = _suite(tmp_path, pods, 8)
        (first,) = next(build_plan(suite, inv).iter_rounds()).invocations
        ex = SimpleNamespace(plan=SimpleNamespace(suite=suite))
        out = SimpleNamespace(command=lambda p, **kw: Command(p.argv, **kw))
        cmd = _client_command(ex, first, out)  # type: ignore[arg-type]
        assert (cmd.role, cmd.per_rank) == ("launch", per_rank)


def test_an_mpirun_on_one_node_is_a_launch_per_rank_too(tmp_path: Path) -> None:
    """``placement: each``: with ``per_rank`` the node's mpirun is a launch over that node
    (rank Pods there, mpirun in a Pod of its own); with ``per_node`` it is the step's one
    Pod, as is a tool with a process per node (iperf3) either way."""
    from aibench.orchestrator import _client_command
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    path = tmp_path / "suite.yaml"
    for pods, role in (("per_rank", "launch"), ("per_node", "work")):
        path.write_text(f"schema_version: 1\nname: k\nsettings: {{kubernetes: {{pods: {pods}}}}}\n"
                        "steps:\n  - {name: nccl, tool: nccl-tests, placement: each, options: "
                        "{op: all_reduce, ranks_per_node: 8}}\n"
                        "  - {name: net, tool: iperf3, placement: pairs}\n")  # fmt: skip
        suite = load_suite(str(path))
        plan = build_plan(suite, _inventory(tmp_path))
        ex = SimpleNamespace(plan=SimpleNamespace(suite=suite))
        out = SimpleNamespace(command=lambda p, **kw: Command(p.argv, **kw))
        nccl, net = (next(s.rounds()).invocations[0] for s in plan.steps)
        cmd = _client_command(ex, nccl, out)  # type: ignore[arg-type]
        assert (cmd.role, cmd.hosts, cmd.per_rank) == (role, nccl.nodes if pods == "per_rank"
                                                       else (), pods == "per_rank")  # fmt: skip
        cmd = _client_command(ex, net, out)  # type: ignore[arg-type]
        assert (cmd.role, cmd.per_rank) == ("work", False)
