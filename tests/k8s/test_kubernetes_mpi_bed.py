"""Launches across Pods on the real two-node Kubernetes bed (tests/k8s/cluster.py), with
the rights of examples/kubernetes-rbac.yaml only.

``mpi_launch: ssh``: Open MPI's ``mpirun`` (Debian's, in the bed's tool image) runs in a
launcher Pod on the first node and starts ``orted`` over ssh in a worker Pod (sshd) on the
second, with the launch's own key pair and host key. The nccl-tests replay of a real
two-node log is launched that way by ``aibench run``, parsed and judged; a plain
``mpirun`` reports both nodes; a worker Pod deleted while the ranks run fails the step
with that worker named; nothing of the launch is left after a run, nor after aibench is
killed mid-launch and the run resumed.

``mpi_launch: mpijob``: refused with one line while the cluster lacks the MPIJob
resource, which the same discovery finds once it is defined (tests/k8s/mpijob-crd.yaml).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aibench.executors.base import Command
from aibench.executors.kubernetes import KubernetesExecutor
from aibench.inventory_file import load_inventory
from tests.aibench_cli import aibench, only_run_dir
from tests.k8s.cluster import LAYOUT, Cluster
from tests.k8s.test_kubernetes_bed import (
    NOTHING,
    NS,
    leftovers,
    nothing_left,
    write_inventory,
)

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SUBNET = f"{LAYOUT.subnet}.0/24"


def _run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    return aibench("run", *args, "--quiet", timeout=timeout)


def _steps(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The steps of a run by name, and its run.json."""
    run = json.loads((run_dir / "run.json").read_text())
    return {s["step"]: s for s in run["steps"]}, run


def test_nccl_tests_launched_by_mpirun_across_worker_pods(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh")
    out = tmp_path / "runs"
    r = _run("--suite", str(HERE / "suite-k8s-mpi.yaml"), "--inventory", str(inv),
             "--spec", str(HERE / "spec-k8s-mpi.yaml"), "--output-dir", str(out))  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    run_dir = only_run_dir(out)
    steps, run = _steps(run_dir)
    step = steps["nccl-all-reduce"]
    assert step["status"] == "ok", step
    (avg,) = [m for m in step["measurements"] if m["metric"] == "avg_busbw"]
    assert avg["value"] == 43.6076  # the captured log's own footer
    argv = step["processes"][-1]["argv"]
    addresses = [n.host.address for n in k8s_cluster.nodes]
    assert argv[:3] == ["mpirun", "--host", ",".join(f"{a}:1" for a in addresses)]
    # both ranks ran, each in its own node's network namespace (the Pods use the node's)
    err = (run_dir / step["stderr_path"]).read_text()
    got = sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) NCCL_DEBUG=INFO", err))
    assert [r for r, _ in got] == ["0/2", "1/2"], err[-3000:]
    assert len({net for _, net in got}) == 2, got
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert outcomes == {"nccl-all-reduce-pair": "PASS"}, run["verdicts"]
    assert nothing_left(k8s_cluster) == NOTHING


def _launch_executor(inv: Path) -> tuple[KubernetesExecutor, Any, tuple[str, ...]]:
    loaded = load_inventory(inv)
    head = loaded.nodes[0]
    assert head.kubernetes is not None
    ex = KubernetesExecutor(head.kubernetes, nodes={n.name: n for n in loaded.nodes})
    return ex, head, tuple(n.name for n in loaded.nodes)


def test_plain_mpirun_reaches_both_nodes(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """``mpirun`` from the launcher Pod: one rank on each node, each printing its node's
    address (the nodes of this bed share the machine's hostname, so the hostname alone
    would not tell them apart)."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh")
    ex, head, names = _launch_executor(inv)
    hosts = ",".join(f"{n.host.address}:1" for n in k8s_cluster.nodes)
    rank = 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname):" $(ip -4 -o addr show)'
    argv = ("mpirun", "--allow-run-as-root", "--host", hosts, "-np", "2",
            "--mca", "oob_tcp_if_include", SUBNET, "sh", "-c", rank)  # fmt: skip

    async def go() -> Any:
        try:
            return await ex.run(head, Command(argv, role="launch", hosts=names, timeout=120),
                                tmp_path / "m.out", tmp_path / "m.err")  # fmt: skip
        finally:
            await ex.close()

    res = asyncio.run(go())
    text = (tmp_path / "m.out").read_text()
    assert res.exit_code == 0, (res, text, (tmp_path / "m.err").read_text())
    lines = sorted(ln for ln in text.splitlines() if ln.startswith("rank "))
    assert len(lines) == 2, text
    for i, node in enumerate(k8s_cluster.nodes):
        assert f"inet {node.host.address}/" in lines[i], (node.name, lines)
    assert nothing_left(k8s_cluster) == NOTHING


def _pods(cluster: Cluster, role: str) -> list[dict[str, Any]]:
    r = cluster.kubectl("-n", NS, "get", "pods", "-l", f"aibench.io/role={role}", "-o", "json")
    return list(json.loads(r.stdout)["items"])


def _running(cluster: Cluster, role: str) -> list[str]:
    return [p["metadata"]["name"] for p in _pods(cluster, role)
            if p["status"].get("phase") == "Running"]  # fmt: skip


def _start(argv: list[str], err: Path) -> subprocess.Popen[bytes]:
    with err.open("wb") as stderr:
        return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)


def _wait_for(proc: subprocess.Popen[bytes], err: Path, what: str, cond: Any) -> Any:
    deadline = time.monotonic() + 120
    while True:
        got = cond()
        if got:
            return got
        assert proc.poll() is None, f"aibench ended before {what}: {err.read_text()[-2000:]}"
        assert time.monotonic() < deadline, f"no {what} in 120 s: {err.read_text()[-2000:]}"
        time.sleep(0.3)


def _aibench_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "aibench", "run", *args, "--quiet"]


def test_a_worker_pod_deleted_mid_run_fails_the_step_naming_it(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh")
    out, err = tmp_path / "runs", tmp_path / "aibench.err"
    proc = _start(_aibench_argv("--suite", str(HERE / "suite-k8s-mpi-slow.yaml"),
                                "--inventory", str(inv), "--spec", str(HERE / "spec-k8s-mpi.yaml"),
                                "--output-dir", str(out)), err)  # fmt: skip
    try:
        _wait_for(proc, err, "running launcher", lambda: _running(k8s_cluster, "mpi-launcher"))
        (worker,) = _running(k8s_cluster, "mpi-worker")
        time.sleep(3)  # mpirun's orted and the rank are up on the worker by now
        k8s_cluster.kubectl("-n", NS, "delete", "pod", worker, "--grace-period=0", "--force")
        proc.wait(120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0, err.read_text()[-2000:]
    steps, run = _steps(only_run_dir(out))
    step = steps["nccl-all-reduce"]
    assert step["status"] == "failed", step
    second = k8s_cluster.nodes[1].name
    assert f"worker pod {worker} on {second}: " in step["reason"], step["reason"]
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert outcomes.get("nccl-all-reduce-pair") not in (None, "PASS"), run["verdicts"]
    assert nothing_left(k8s_cluster) == NOTHING


def test_killed_mid_launch_then_resumed_leaves_nothing(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """aibench SIGKILLed once the launch's ConfigMap, Secret and worker Pod exist: they
    outlive it; ``--resume`` removes them with the dead run's Lease, runs the launch
    again, and leaves nothing."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh")
    out, err = tmp_path / "runs", tmp_path / "aibench.err"
    proc = _start(_aibench_argv("--suite", str(HERE / "suite-k8s-mpi.yaml"),
                                "--inventory", str(inv), "--spec", str(HERE / "spec-k8s-mpi.yaml"),
                                "--output-dir", str(out)), err)  # fmt: skip
    try:
        _wait_for(proc, err, "worker Pod", lambda: _pods(k8s_cluster, "mpi-worker"))
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = leftovers(k8s_cluster)
    for kind in ("configmaps", "secrets", "pods"):
        assert left[kind], left
    r = aibench("run", "--resume", str(only_run_dir(out)), "--quiet", timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    steps, _run_doc = _steps(only_run_dir(out))
    assert steps["nccl-all-reduce"]["status"] == "ok", steps["nccl-all-reduce"]
    assert nothing_left(k8s_cluster) == NOTHING


def test_mpijob_refused_without_the_resource_found_with_it(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """No MPIJob resource: the launch fails at once with one line naming it, and nothing
    is made; with the resource defined (tests/k8s/mpijob-crd.yaml), the same discovery,
    with the service account's rights, finds it. (No MPIJob is made here: this bed's
    kube-apiserver, 1.20.2 built with Go 1.19 and its vendored reflect2 1.0.1, crashes on
    the create of any custom object; tests/test_kubernetes_mpi.py follows the launch
    against a recording API.)"""
    from kubernetes.client import CustomObjectsApi

    from aibench.executors.kubernetes_mpijob import missing_crd

    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner,
                          mpi_launch="mpijob", mpi_job_start_s=5)  # fmt: skip
    ex, head, names = _launch_executor(inv)
    hosts = ",".join(f"{n.host.address}:1" for n in k8s_cluster.nodes)
    cmd = Command(("mpirun", "--allow-run-as-root", "--host", hosts, "-np", "2", "hostname"),
                  role="launch", hosts=names, timeout=60)  # fmt: skip
    crd = str(HERE / "mpijob-crd.yaml")

    async def go() -> tuple[Any, str | None]:
        try:
            refused = await ex.run(head, cmd, tmp_path / "j.out", tmp_path / "j.err")
            await asyncio.to_thread(k8s_cluster.kubectl, "apply", "-f", crd)
            await asyncio.to_thread(k8s_cluster.kubectl, "wait", "--for=condition=established",
                                    "crd/mpijobs.kubeflow.org", "--timeout=60s")  # fmt: skip
            ex._core()
            return refused, await asyncio.to_thread(missing_crd, CustomObjectsApi(ex._api))
        finally:
            await ex.close()

    try:
        refused, found = asyncio.run(go())
    finally:
        r = k8s_cluster.kubectl("delete", "-f", crd, "--ignore-not-found", check=False)
        assert r.returncode == 0, r.stderr
    assert refused.exit_code is None, refused
    assert "\n" not in refused.reason
    assert refused.reason.startswith("mpi_launch: mpijob: the cluster has no MPIJob resource")
    assert "CustomResourceDefinition mpijobs.kubeflow.org not installed" in refused.reason
    assert found is None
    assert nothing_left(k8s_cluster) == NOTHING


def test_a_pod_per_rank_nccl_tests_two_ranks_on_each_node(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """``settings.kubernetes.pods: per_rank``, two ranks per node: mpirun alone in the
    launcher Pod (no resources), a worker Pod per rank with half the node's resources and
    its own sshd port, reached through the ConfigMap's ssh aliases; the replay's four ranks
    run two in each node's network, are parsed and judged PASS, and nothing is left."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh",
                          resources={"requests": {"cpu": "200m", "memory": "128Mi"}})  # fmt: skip
    out, err = tmp_path / "runs", tmp_path / "aibench.err"
    proc = _start(_aibench_argv("--suite", str(HERE / "suite-k8s-mpi-per-rank.yaml"),
                                "--inventory", str(inv), "--spec", str(HERE / "spec-k8s-mpi.yaml"),
                                "--output-dir", str(out)), err)  # fmt: skip
    try:
        workers = _wait_for(proc, err, "4 worker Pods",
                            lambda: len(_pods(k8s_cluster, "mpi-worker")) == 4
                            and _pods(k8s_cluster, "mpi-worker"))  # fmt: skip
        launcher = _wait_for(proc, err, "launcher Pod", lambda: _pods(k8s_cluster, "mpi-launcher"))
        proc.wait(180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err.read_text()[-3000:]
    places = sorted((w["spec"]["nodeName"], w["spec"]["containers"][0]["command"][-1])
                    for w in workers)  # fmt: skip
    first, second = (n.name for n in k8s_cluster.nodes)
    assert places == [(first, "2222"), (first, "2223"), (second, "2222"), (second, "2223")]
    for w in workers:
        assert w["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "100m", "memory": "64Mi"}
        }
    assert launcher[0]["spec"]["containers"][0]["resources"] == {}
    steps, run = _steps(only_run_dir(out))
    step = steps["nccl-all-reduce"]
    assert step["status"] == "ok", step
    stderr = (only_run_dir(out) / step["stderr_path"]).read_text()
    got = sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) NCCL_DEBUG=INFO", stderr))
    assert [r for r, _ in got] == ["0/4", "1/4", "2/4", "3/4"], stderr[-3000:]
    nets = [net for _, net in got]
    assert nets[0] == nets[1] != nets[2] == nets[3], got  # ranks 0, 1 on the first node
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert outcomes == {"nccl-all-reduce-pair": "PASS"}, run["verdicts"]
    assert nothing_left(k8s_cluster) == NOTHING


def _per_rank_argv(nodes: list[Any]) -> tuple[str, ...]:
    """mpirun of two ranks on each of ``nodes``, each printing its rank, Open MPI's local
    size, its container's first process and its network's addresses."""
    hosts = ",".join(f"{n.host.address}:2" for n in nodes)
    rank = ('echo "rank $OMPI_COMM_WORLD_RANK local $OMPI_COMM_WORLD_LOCAL_SIZE"'
            ' "pid1 $(tr "\\0" " " </proc/1/cmdline)" $(ip -4 -o addr show)')  # fmt: skip
    return ("mpirun", "--allow-run-as-root", "--host", hosts, "-np", str(2 * len(nodes)),
            "--map-by", "ppr:2:node", "--mca", "oob_tcp_if_include", SUBNET, "sh", "-c",
            rank)  # fmt: skip


def test_a_pod_per_rank_each_rank_runs_under_its_own_sshd(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """Per-rank launches of a plain ``mpirun``, two ranks per node, across both nodes and
    on the second alone: each rank reports the first process of its container, the sshd
    of its own worker Pod (its port, so not the launcher's Pod), and its node's address;
    each is alone in its Open MPI node (local size 1)."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="ssh")
    ex, head, names = _launch_executor(inv)
    second = k8s_cluster.nodes[1]
    runs = [(list(k8s_cluster.nodes), names), ([second], (second.name,))]

    async def go() -> list[Any]:
        try:
            return [await ex.run(head, Command(_per_rank_argv(nodes), role="launch", hosts=hosts,
                                               timeout=120, per_rank=True),
                                 tmp_path / f"m{i}.out", tmp_path / f"m{i}.err")
                    for i, (nodes, hosts) in enumerate(runs)]  # fmt: skip
        finally:
            await ex.close()

    for i, res in enumerate(asyncio.run(go())):
        text = (tmp_path / f"m{i}.out").read_text()
        assert res.exit_code == 0, (res, text, (tmp_path / f"m{i}.err").read_text())
        lines = sorted(ln for ln in text.splitlines() if ln.startswith("rank "))
        nodes = runs[i][0]
        assert len(lines) == 2 * len(nodes), text
        for r, line in enumerate(lines):
            # sshd's title for its listener: "sshd: ARGV"
            sshd = f"rank {r} local 1 pid1 sshd: /usr/sbin/sshd -D -e -p {2222 + r % 2} "
            assert line.startswith(sshd), line
            assert f"inet {nodes[r // 2].host.address}/" in line, (nodes[r // 2].name, line)
    assert nothing_left(k8s_cluster) == NOTHING
