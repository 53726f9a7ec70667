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
resource, by ``aibench run`` before any step runs and by the step itself, which the same
discovery finds once it is defined (tests/k8s/mpijob-crd.yaml). With the resource defined
and no MPI operator (the bed has none), the API server stores the MPIJob aibench makes,
owned by the run's Lease, with its Secret; the step fails saying the operator did not
start it, and nothing is left. One test plays the operator's part of creating the
launcher Pod (from the MPIJob's own template, with the operator's labels and the MPIJob
as its owner): aibench finds that Pod by those labels, and its log and exit code, from
the kubelet, are the step's.
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
    with the service account's rights, finds it."""
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


def test_aibench_run_refuses_an_mpijob_launch_before_any_step_without_the_resource(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """The run asks the cluster's discovery once before any step: without the MPIJob
    resource it ends with one line and exit code 2, no run directory and nothing made.
    ``--dry-run`` asks nothing and prints the plan."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, mpi_launch="mpijob")
    out = tmp_path / "runs"
    args = ("--suite", str(HERE / "suite-k8s-mpi.yaml"), "--inventory", str(inv),
            "--spec", str(HERE / "spec-k8s-mpi.yaml"), "--output-dir", str(out))  # fmt: skip
    dry = _run(*args, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "nccl-all-reduce" in dry.stdout
    r = _run(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("aibench: error: step nccl-all-reduce: mpi_launch: mpijob: "), line
    assert "CustomResourceDefinition mpijobs.kubeflow.org not installed" in line
    assert not out.exists() or not any(out.iterdir())
    assert nothing_left(k8s_cluster, wait=0) == NOTHING


MPIJOB_CRD = str(HERE / "mpijob-crd.yaml")


def _define_mpijobs(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", MPIJOB_CRD)
    cluster.kubectl("wait", "--for=condition=established", "crd/mpijobs.kubeflow.org",
                    "--timeout=60s")  # fmt: skip


def _undefine_mpijobs(cluster: Cluster) -> None:
    r = cluster.kubectl("delete", "-f", MPIJOB_CRD, "--ignore-not-found", check=False)
    assert r.returncode == 0, r.stderr


def _mpijobs(cluster: Cluster) -> list[dict[str, Any]]:
    r = cluster.kubectl("-n", NS, "get", "mpijobs", "-o", "json")
    return list(json.loads(r.stdout)["items"])


def _first_mpijob(cluster: Cluster, step: asyncio.Future[Any]) -> dict[str, Any]:
    """The MPIJob as the API server holds it, read while the step waits for it."""
    deadline = time.monotonic() + 60
    while not (jobs := _mpijobs(cluster)):
        assert not step.done(), f"the step ended before its MPIJob was read: {step.result()}"
        assert time.monotonic() < deadline, "no MPIJob in 60 s"
        time.sleep(0.3)
    (job,) = jobs
    return job


def _get(cluster: Cluster, kind: str, name: str) -> dict[str, Any]:
    got: dict[str, Any] = json.loads(cluster.kubectl("-n", NS, "get", kind, name,
                                                     "-o", "json").stdout)  # fmt: skip
    return got


def _mpijob_launch(
    inv: Path, argv: tuple[str, ...], env: dict[str, str]
) -> tuple[KubernetesExecutor, Any, Command]:
    ex, head, names = _launch_executor(inv)
    return ex, head, Command(argv, env=env, role="launch", hosts=names, timeout=120)


def test_an_mpijob_is_made_owned_by_the_lease_and_fails_without_an_operator(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """The MPIJob the service account makes, as the API server stores it (kubeflow.org/
    v2beta1, read with kubectl while the step waits), owned by the run's Lease like the
    Secret of the launch's secret variable; no operator starts it, so the step fails
    after ``mpi_job_start_s`` saying so; the MPIJob, Secret and Lease are gone after."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner,
                          mpi_launch="mpijob", mpi_job_start_s=20)  # fmt: skip
    hosts = ",".join(f"{n.host.address}:1" for n in k8s_cluster.nodes)
    ex, head, cmd = _mpijob_launch(inv, ("mpirun", "--allow-run-as-root", "--host", hosts,
                                         "-np", "2", "hostname"), {"HF_TOKEN": "hf_bed_s3cr3t"})  # fmt: skip

    async def go() -> tuple[Any, dict[str, Any], dict[str, Any], dict[str, Any]]:
        step = asyncio.ensure_future(ex.run(head, cmd, tmp_path / "j.out", tmp_path / "j.err"))
        try:
            job = await asyncio.to_thread(_first_mpijob, k8s_cluster, step)
            name = job["metadata"]["name"]
            secret = await asyncio.to_thread(_get, k8s_cluster, "secret", f"{name}-launcher")
            lease = await asyncio.to_thread(_get, k8s_cluster, "lease", ex.run_id)
            return await step, job, secret, lease
        finally:
            step.cancel()
            await ex.close()

    _define_mpijobs(k8s_cluster)
    try:
        res, job, secret, lease = asyncio.run(go())
        assert _mpijobs(k8s_cluster) == []
    finally:
        _undefine_mpijobs(k8s_cluster)
    name = job["metadata"]["name"]
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    for obj in (job, secret):
        (owner,) = obj["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"]) == ("Lease", ex.run_id)
        assert owner["uid"] == lease["metadata"]["uid"]
    spec = job["spec"]
    assert (spec["slotsPerWorker"], spec["runLauncherAsWorker"]) == (1, True)
    assert spec["runPolicy"]["cleanPodPolicy"] == "All"
    launcher, worker = (spec["mpiReplicaSpecs"][r] for r in ("Launcher", "Worker"))
    assert (launcher["replicas"], worker["replicas"]) == (1, 1)
    first, second = (n.name for n in k8s_cluster.nodes)
    assert launcher["template"]["spec"]["nodeName"] == first
    assert launcher["template"]["spec"]["containers"][0]["command"] == list(cmd.argv)
    affinity = worker["template"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [second]
    assert "hf_bed_s3cr3t" not in json.dumps(job)  # the value is in the Secret only
    assert res.exit_code is None, res
    assert res.reason == f"MPIJob {name} not started within 20 s: is the MPI operator running?"
    assert nothing_left(k8s_cluster) == NOTHING


def _play_the_operator(cluster: Cluster, job: dict[str, Any], tmp: Path) -> str:
    """What the MPI operator does once the workers are ready, done here: the launcher Pod
    from the MPIJob's Launcher template, with the operator's labels and the MPIJob as its
    controlling owner. Its name."""
    name = job["metadata"]["name"]
    template = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]
    meta = template["metadata"]
    labels = {**meta["labels"], "training.kubeflow.org/job-name": name,
              "training.kubeflow.org/job-role": "launcher"}  # fmt: skip
    owner = {"apiVersion": job["apiVersion"], "kind": "MPIJob", "name": name,
             "uid": job["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}  # fmt: skip
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": f"{name}-launcher", "labels": labels,
                        "annotations": meta.get("annotations") or {}, "ownerReferences": [owner]},
           "spec": {**template["spec"], "restartPolicy": "Never"}}  # fmt: skip
    path = tmp / f"{name}-launcher.json"
    path.write_text(json.dumps(pod))
    cluster.kubectl("-n", NS, "create", "-f", str(path))
    return f"{name}-launcher"


def test_the_launcher_pod_the_operator_makes_gives_the_step_its_log_and_exit_code(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """The test plays the operator's part of creating the launcher Pod (no operator runs
    on the bed): aibench finds it by the operator's labels, follows it with the run's
    watch, and the container's log and exit code, from the kubelet, are the step's; the
    MPIJob deleted after takes the Pod with it (the garbage collector, through the owner
    the operator sets). The launcher runs a shell line, not mpirun: no operator made the
    workers, keys and hostfile an mpirun would use."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner,
                          mpi_launch="mpijob", mpi_job_start_s=90)  # fmt: skip
    line = 'echo "# Avg bus bandwidth    : 43.6076"; echo "on $(hostname)"; exit 3'
    ex, head, cmd = _mpijob_launch(inv, ("/bin/sh", "-c", line), {})

    async def go() -> tuple[Any, str]:
        step = asyncio.ensure_future(ex.run(head, cmd, tmp_path / "j.out", tmp_path / "j.err"))
        try:
            job = await asyncio.to_thread(_first_mpijob, k8s_cluster, step)
            pod = await asyncio.to_thread(_play_the_operator, k8s_cluster, job, tmp_path)
            return await step, pod
        finally:
            step.cancel()
            await ex.close()

    _define_mpijobs(k8s_cluster)
    try:
        res, pod = asyncio.run(go())
        assert _mpijobs(k8s_cluster) == []
        assert nothing_left(k8s_cluster) == NOTHING  # the launcher Pod too
    finally:
        _undefine_mpijobs(k8s_cluster)
    assert (res.exit_code, res.reason) == (3, ""), res
    out = (tmp_path / "j.out").read_text()
    assert out.startswith("# Avg bus bandwidth    : 43.6076\non "), out
    assert pod.endswith("-mpijob-launcher")


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
