"""A launch across Kubernetes nodes (mpi_launch: ssh): the worker and launcher Pods, the
Secret with the launch's keys and the hostfile ConfigMap, as data (no cluster); the MPIJob
of mpi_launch: mpijob, as data. The MPIJob against an API server, and its refusal without
the resource, are tested on the bed (tests/k8s/test_kubernetes_mpi_bed.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from aibench.executors.base import Command
from aibench.executors.kubernetes import _slots_of
from aibench.executors.kubernetes_mpi import (
    MPI_DIR,
    SSHD_WRAPPER,
    Keys,
    hostfile_configmap,
    keys_secret,
    launcher_manifest,
    worker_manifest,
)
from aibench.inventory import Inventory
from aibench.inventory_file import load_inventory

OWNER = [{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "r", "uid": "u"}]
BLOCK = {
    "namespace": "aibench",
    "image": "registry.example/nccl-tests:2.13",
    "resources": {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1"}},
    "shm_size": "64Gi",
    "annotations": {"k8s.v1.cni.cncf.io/networks": "rdma-net"},
    "mpi_launch": "ssh",
    "mpi_ssh_port": 2022,
}
ARGV = ("mpirun", "--host", "10.0.0.1:8,10.0.0.2:8", "-np", "16", "--map-by", "ppr:8:node",
        "-x", "NCCL_DEBUG", "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "8G")  # fmt: skip


def inventory_of(tmp_path: Path, block: dict[str, Any], **change: object) -> Inventory:
    """Two Kubernetes nodes, gpu01 and gpu02 at 10.0.0.1 and .2, with this ``kubernetes:``
    block (and ``change`` to it)."""
    doc = {
        "schema_version": 1,
        "kubernetes": {**block, **change},
        "nodes": [{"name": "gpu[01-02]", "address_pattern": "10.0.0.{n}"}],
    }
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(doc))
    return load_inventory(tmp_path / "inv.yaml")


def _inventory(tmp_path: Path, **change: object) -> Inventory:
    return inventory_of(tmp_path, BLOCK, **change)


def _data(obj: dict[str, Any], key: str) -> str:
    return base64.b64decode(obj["data"][key]).decode()


def test_workers_and_the_launcher_hold_the_devices_workers_run_sshd(tmp_path: Path) -> None:
    """The launcher Pod uses the first node's network, so mpirun starts that node's ranks
    itself: it holds that node's devices and /dev/shm like a worker."""
    inv = _inventory(tmp_path)
    head, other = inv.nodes
    k = head.kubernetes
    assert k is not None
    worker = worker_manifest("m-w1", other, k, "r", OWNER, 600, "m-ssh", "m-hosts")
    spec = worker["spec"]
    c = spec["containers"][0]
    assert spec["nodeName"] == "gpu02"
    assert c["command"] == ["/bin/sh", "-c", SSHD_WRAPPER, "aibench", "/usr/sbin/sshd", "2022"]
    assert "stdin" not in c
    assert c["resources"] == {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1"}}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert worker["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    assert worker["metadata"]["labels"]["aibench.io/role"] == "mpi-worker"
    assert worker["metadata"]["ownerReferences"] == OWNER
    keys = {v["name"]: v for v in spec["volumes"]}
    assert keys["mpi-keys"]["secret"] == {"secretName": "m-ssh", "defaultMode": 0o400}
    cmd = Command(ARGV, env={"NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_s3cr3t"}, role="launch",
                  hosts=("gpu01", "gpu02"))  # fmt: skip
    launcher = launcher_manifest("m-launcher", head, cmd, k, "r", OWNER, {"HF_TOKEN": "hf_s3cr3t"},
                                 600, "m-ssh", "m-hosts")  # fmt: skip
    lc = launcher["spec"]["containers"][0]
    assert lc["command"][4:] == list(ARGV)  # the planned argv, unchanged
    assert launcher["spec"]["nodeName"] == "gpu01"
    assert lc["resources"] == {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1"}}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in lc["volumeMounts"]
    assert launcher["metadata"]["annotations"] == {"k8s.v1.cni.cncf.io/networks": "rdma-net"}
    assert launcher["metadata"]["labels"]["aibench.io/role"] == "mpi-launcher"
    env = {e["name"]: e for e in lc["env"]}
    assert env["OMPI_MCA_plm_rsh_args"]["value"] == (
        f"-p 2022 -i {MPI_DIR}/id_ed25519 -o IdentitiesOnly=yes -o StrictHostKeyChecking=yes "
        f"-o UserKnownHostsFile={MPI_DIR}/known_hosts"
    )
    assert env["OMPI_MCA_orte_default_hostfile"]["value"] == f"{MPI_DIR}-hosts/hostfile"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "m-launcher", "key": "HF_TOKEN"}
    assert "hf_s3cr3t" not in json.dumps(launcher)
    mounts = {m["mountPath"] for m in lc["volumeMounts"]}
    assert {MPI_DIR, f"{MPI_DIR}-hosts"} <= mounts


def test_the_launch_secret_trusts_only_its_own_host_key() -> None:
    keys = Keys.generate()
    secret = keys_secret("m-ssh", "r", keys, OWNER)
    assert _data(secret, "id_ed25519").startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert _data(secret, "authorized_keys") == keys.client_public + "\n"
    assert keys.client_public.startswith("ssh-ed25519 ")
    assert _data(secret, "known_hosts") == f"* {keys.host_public}\n"
    assert keys.host_public != keys.client_public
    assert Keys.generate().client_public != keys.client_public  # a pair per launch
    hosts = hostfile_configmap("m-hosts", "r", [("10.0.0.1", 8), ("10.0.0.2", 8)], OWNER)
    assert hosts["data"] == {"hostfile": "10.0.0.1 slots=8\n10.0.0.2 slots=8\n"}
    assert hosts["metadata"]["ownerReferences"] == OWNER


def test_slots_from_the_mpirun_argv() -> None:
    assert _slots_of(ARGV) == {"10.0.0.1": 8, "10.0.0.2": 8}
    assert _slots_of(("mpirun", "-H", "a,b:2", "x")) == {"a": 1, "b": 2}


@pytest.mark.parametrize("launch", ["ssh", "mpijob", "none"])
def test_nccl_tests_across_nodes_plans_with_mpi_launch_ssh(tmp_path: Path, launch: str) -> None:
    from aibench.errors import UserError
    from aibench.orchestrator import _client_command
    from aibench.plan import build_plan, mpijob_launches
    from aibench.suite import load_suite

    path = tmp_path / "suite.yaml"
    path.write_text("schema_version: 1\nname: k\nsteps:\n  - {name: nccl, tool: nccl-tests, "
                    "placement: all, options: {op: all_reduce}}\n")  # fmt: skip
    inv = _inventory(tmp_path, mpi_launch=launch)
    if launch == "none":
        with pytest.raises(UserError, match="without mpi_launch: ssh"):
            build_plan(load_suite(str(path)), inv)
        return
    plan = build_plan(load_suite(str(path)), inv)
    (first,) = next(plan.iter_rounds()).invocations
    assert first.client.argv[0] == "mpirun"
    assert first.client.role == "launcher"
    # the steps the run asks the cluster's discovery about before any runs
    launches = mpijob_launches(plan)
    assert [(step, s.mpi_launch) for step, s in launches] == (
        [("nccl", "mpijob")] if launch == "mpijob" else []
    )

    settings = SimpleNamespace(secret_env=("HF_READ",))
    ex = SimpleNamespace(plan=SimpleNamespace(suite=SimpleNamespace(settings=settings)))
    from aibench.executors.base import Command
    from aibench.secret import Secrets

    marked = Secrets.of(marked={"HF_READ"})
    out = SimpleNamespace(  # what an outcome makes of a process: written through the secrets
        command=lambda p, **kw: Command(p.argv, env=p.env, timeout=p.timeout, secrets=marked, **kw)
    )
    cmd = _client_command(ex, first, out)  # type: ignore[arg-type]
    assert cmd.secrets is marked
    assert (cmd.role, cmd.hosts) == ("launch", ("gpu01", "gpu02"))
    assert cmd.secrets.is_secret("HF_READ")
    assert cmd.argv == first.client.argv


def test_a_launch_makes_its_objects_names_a_dead_worker_and_removes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launch's steps against a recording API: Secret, ConfigMap, a worker on each
    node but the launcher's, then the launcher; a failed mpirun names the worker the
    kubelet OOM-killed; all of it deleted after."""
    from aibench.executors import kubernetes as k8s

    inv = _inventory(tmp_path)
    head = inv.nodes[0]
    assert head.kubernetes is not None
    ex = k8s.KubernetesExecutor(head.kubernetes, nodes={n.name: n for n in inv.nodes})
    made: list[tuple[str, str]] = []
    deleted: list[str] = []

    class Core:
        def create_namespaced_secret(self, _ns: str, body: Any, **_k: Any) -> None:
            made.append(("Secret", body["metadata"]["name"]))

        def create_namespaced_config_map(self, _ns: str, body: Any, **_k: Any) -> None:
            made.append(("ConfigMap", body["metadata"]["name"]))

        def create_namespaced_pod(self, _ns: str, body: Any, **_k: Any) -> None:
            made.append(("Pod", body["metadata"]["name"]))

        def delete_namespaced_secret(self, name: str, *_a: Any, **_k: Any) -> None:
            deleted.append(name)

        def delete_namespaced_config_map(self, name: str, *_a: Any, **_k: Any) -> None:
            deleted.append(name)

    def pod(terminated: Any) -> Any:
        term = SimpleNamespace(terminated=terminated, running=None, waiting=None)
        cs = SimpleNamespace(name="step", state=term)
        return SimpleNamespace(metadata=SimpleNamespace(deletion_timestamp=None),
                               status=SimpleNamespace(container_statuses=[cs], reason=None,
                                                      message=None, phase="Running"))  # fmt: skip

    oom = SimpleNamespace(exit_code=137, reason="OOMKilled", message=None)

    async def latest(name: str) -> Any:
        return pod(oom if name.endswith("-w1") else None)

    async def ensure_lease() -> str:
        ex._lease_uid = "u"
        return "u"

    async def run_pod(node: Any, name: str, cmd: Any, out: Any, err: Any, result: Any) -> Any:
        return result(exit_code=1, reason="")

    async def delete(name: str) -> None:
        deleted.append(name)

    monkeypatch.setattr(ex, "_core", Core)
    monkeypatch.setattr(ex, "_latest", latest)
    monkeypatch.setattr(ex, "_ensure_lease", ensure_lease)
    monkeypatch.setattr(ex, "_run_pod", run_pod)
    monkeypatch.setattr(ex, "_delete", delete)
    monkeypatch.setattr(ex, "_wait_started", lambda *_a: asyncio.sleep(0))
    cmd = Command(ARGV, role="launch", hosts=("gpu01", "gpu02"), timeout=60)
    try:
        res = asyncio.run(ex.run(head, cmd, tmp_path / "o", tmp_path / "e"))
    finally:
        ex._pool.shutdown(wait=False)
    base = made[0][1].removesuffix("-ssh")
    assert made == [("Secret", f"{base}-ssh"), ("ConfigMap", f"{base}-hosts"),
                    ("Pod", f"{base}-w1"), ("Pod", f"{base}-launcher")]  # fmt: skip
    assert res.exit_code == 1
    assert res.reason == (f"worker pod {base}-w1 on gpu02: OOMKilled: the container passed "
                          "its memory limit (exit 137)")  # fmt: skip
    # and the output ends with it, since a step's reason is the tail of its output
    assert (tmp_path / "e").read_text() == ""  # the raw stderr is what the tool wrote, alone
    assert sorted(deleted) == sorted(
        [f"{base}-w1", f"{base}-launcher", f"{base}-ssh", f"{base}-hosts"]
    )


def test_the_mpijob_manifest_uses_the_v2beta1_fields(tmp_path: Path) -> None:
    """mpi_launch: mpijob: the MPIJob of a launch across gpu01 and gpu02, in the field
    names of the MPI operator's kubeflow.org/v2beta1 API."""
    from aibench.executors.kubernetes_mpi import MPIJOB_SSHD, SSH_AUTH, mpijob_manifest

    inv = _inventory(tmp_path, mpi_launch="mpijob")
    head, other = inv.nodes
    k = head.kubernetes
    assert k is not None
    cmd = Command(ARGV, env={"HF_TOKEN": "hf_s3cr3t"}, role="launch", hosts=("gpu01", "gpu02"))
    job = mpijob_manifest("m", head, [other], cmd, k, "r", OWNER, {"HF_TOKEN": "hf_s3cr3t"},
                          600, 8)  # fmt: skip
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    assert job["metadata"]["ownerReferences"] == OWNER
    spec = job["spec"]
    assert spec["slotsPerWorker"] == 8
    assert spec["runLauncherAsWorker"] is True  # the head node's ranks run in the launcher
    assert spec["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert spec["sshAuthMountPath"] == SSH_AUTH
    assert spec["mpiImplementation"] == "OpenMPI"
    assert spec["runPolicy"] == {"cleanPodPolicy": "All", "backoffLimit": 0,
                                 "activeDeadlineSeconds": 600}  # fmt: skip
    replicas = spec["mpiReplicaSpecs"]
    assert set(replicas) == {"Launcher", "Worker"}
    launcher, worker = replicas["Launcher"], replicas["Worker"]
    assert (launcher["replicas"], worker["replicas"]) == (1, 1)
    assert launcher["restartPolicy"] == worker["restartPolicy"] == "Never"
    lspec = launcher["template"]["spec"]
    lc = lspec["containers"][0]
    assert lc["command"] == list(ARGV)  # no wrapper: the operator starts it
    assert "stdin" not in lc
    assert lspec["nodeName"] == "gpu01"
    assert lc["resources"] == {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1"}}
    env = {e["name"]: e for e in lc["env"]}
    assert env["OMPI_MCA_plm_rsh_agent"]["value"] == "ssh -p 2022"
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "m-launcher", "key": "HF_TOKEN"}
    assert "hf_s3cr3t" not in json.dumps(job)
    wspec = worker["template"]["spec"]
    wc = wspec["containers"][0]
    assert wc["command"] == ["/bin/sh", "-c", MPIJOB_SSHD, "aibench", "/usr/sbin/sshd", "2022"]
    assert "nodeName" not in wspec  # the scheduler places the workers: one per named node
    terms = wspec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    (expr,) = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert expr == {"key": "kubernetes.io/hostname", "operator": "In", "values": ["gpu02"]}
    (anti,) = wspec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti["labelSelector"]["matchLabels"] == {
        "training.kubeflow.org/job-name": "m",
        "training.kubeflow.org/job-role": "worker",
    }
    assert wspec["hostNetwork"] is True
    assert worker["template"]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "aibench"


def test_a_launch_needs_the_node_network(tmp_path: Path) -> None:
    with pytest.raises(Exception, match="mpi_launch: ssh needs host_network: true"):
        _inventory(tmp_path, host_network=False)


def test_the_check_before_the_run_refuses_nothing_it_cannot_ask(tmp_path: Path) -> None:
    """The discovery call before any step: an API server that does not answer (nothing
    listens on its port) or a kubeconfig that is not there refuses nothing: the steps
    meet it and say so, each with its reason."""
    from dataclasses import replace

    from aibench.executors.kubernetes_mpijob import refuse_without_mpijob

    inv = _inventory(tmp_path, mpi_launch="mpijob")
    k = inv.nodes[0].kubernetes
    assert k is not None
    (tmp_path / "kubeconfig").write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
    }))  # fmt: skip
    closed = replace(k, kubeconfig=str(tmp_path / "kubeconfig"))
    absent = replace(k, kubeconfig=str(tmp_path / "none"))
    refuse_without_mpijob([("nccl", closed), ("nccl", absent)])
