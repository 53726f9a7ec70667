"""aibench on a real Kubernetes 1.20 cluster (tests/k8s/cluster.py): steps as Pods.

The nightly suite's fio and iperf3 steps run through ``aibench run`` against the
two-node cluster, with the rights of examples/kubernetes-rbac.yaml only, and are judged
and reported like an SSH run; a Pod that exits non-zero, one that passes its memory
limit and one that outlives its step's timeout each come back with their reason; after
every run, and after aibench is killed mid-step and the run resumed, no Pod, Secret,
ConfigMap or Lease of aibench is left in the namespace.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from aibench.executors.base import Command
from aibench.executors.kubernetes import KubernetesExecutor
from aibench.inventory_file import load_inventory
from tests.aibench_cli import aibench, only_run_dir
from tests.k8s.cluster import STATE, Cluster

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NS = "aibench"


def write_inventory(path: Path, cluster: Cluster, kubeconfig: Path, **extra: Any) -> Path:
    nodes = [
        {"name": n.name, "data_dirs": [str(STATE / "scratch" / n.name)]} for n in cluster.nodes
    ]
    doc = {
        "schema_version": 1,
        "name": "k8s-bed",
        "kubernetes": {
            "kubeconfig": str(kubeconfig),
            "namespace": NS,
            "image": cluster.tools_image,
            "image_pull_policy": "Never",
            **extra,
        },
        "nodes": nodes,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def leftovers(cluster: Cluster) -> dict[str, list[str]]:
    """The Pods, Secrets, ConfigMaps and Leases aibench made that are still in the
    namespace."""
    kinds = {"Pod": "pods", "Secret": "secrets", "ConfigMap": "configmaps", "Lease": "leases"}
    r = cluster.kubectl("-n", NS, "get", ",".join(kinds.values()),
                        "-l", "app.kubernetes.io/managed-by=aibench", "-o", "json")  # fmt: skip
    out: dict[str, list[str]] = {k: [] for k in kinds.values()}
    for i in json.loads(r.stdout)["items"]:  # one request a poll: the waits below poll often
        out[kinds[i["kind"]]].append(i["metadata"]["name"])
    return out


NOTHING: dict[str, list[str]] = {"pods": [], "secrets": [], "configmaps": [], "leases": []}


def nothing_left(cluster: Cluster, wait: float = 90.0) -> dict[str, list[str]]:
    deadline = time.monotonic() + wait
    left = leftovers(cluster)
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(0.5)
        left = leftovers(cluster)
    return left


def test_nodes_come_from_the_api(k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path) -> None:
    """With no nodes listed, the inventory is every node of the cluster, at its InternalIP."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner)
    doc = yaml.safe_load(inv.read_text())
    del doc["nodes"]
    inv.write_text(yaml.safe_dump(doc))
    loaded = load_inventory(inv)
    assert [(n.name, n.host, n.executor) for n in loaded.nodes] == [
        (n.name, n.host.address, "kubernetes") for n in k8s_cluster.nodes
    ]


def test_nightly_fio_and_iperf3_on_the_cluster(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner, label_results=True)
    out = tmp_path / "runs"
    r = aibench("run", "--suite", str(HERE / "suite-k8s.yaml"), "--inventory", str(inv),
                "--spec", str(HERE / "spec-k8s.yaml"), "--output-dir", str(out), "--quiet",
                timeout=400)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    run_dir = only_run_dir(out)
    run = json.loads((run_dir / "run.json").read_text())
    steps = {(s["step"], tuple(s["nodes"])): s for s in run["steps"]}
    names = [n.name for n in k8s_cluster.nodes]
    for node in names:
        fio = steps[("fio-seq-read", (node,))]
        assert fio["status"] == "ok", fio
        assert any(m["metric"] == "bw" and m["value"] > 0 for m in fio["measurements"])
    pair = steps[("iperf3-tcp", tuple(names))]
    assert pair["status"] == "ok", pair
    outcomes = {(v["check"], tuple(v["subject"])): v["outcome"] for v in run["verdicts"]}
    assert set(outcomes.values()) == {"PASS"}, outcomes
    assert {("fio-seq-read-bw", (n,)) for n in names} | {
        ("iperf3-tcp-throughput", tuple(names))
    } <= set(outcomes)
    # the raw outputs came through the Pods' streams: fio's JSON alone on stdout
    raw = [p for p in (run_dir / "raw" / "fio-seq-read").glob("*.stdout") if ".setup" not in p.name]
    assert len(raw) == 2
    assert all(json.loads(p.read_text())["fio version"].startswith("fio-") for p in raw)
    assert "PASS" in (run_dir / "summary.md").read_text()
    assert (run_dir / "junit.xml").exists()
    assert (run_dir / "report.html").exists()
    assert nothing_left(k8s_cluster) == NOTHING
    for node in names:
        facts = steps[("preflight", (node,))]
        assert facts["status"] == "ok", facts
        got = json.loads(k8s_cluster.kubectl("get", "node", node, "-o", "json").stdout)
        assert got["metadata"]["labels"]["aibench.io/acceptance"] == "PASS"
        until = got["metadata"]["annotations"]["aibench.io/valid-until"]
        assert until > time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        assert got["metadata"]["annotations"]["aibench.io/suite"] == "k8s-nightly"
        assert got["metadata"]["annotations"]["aibench.io/run"] == run["id"]
        assert not got["spec"].get("unschedulable")  # never cordoned
    # a partial run (one tool) labels nothing: the full run's annotations stay
    r = aibench("run", "fio", "--suite", str(HERE / "suite-k8s.yaml"), "--inventory", str(inv),
                "--spec", str(HERE / "spec-k8s.yaml"), "--output-dir", str(tmp_path / "part"),
                "--quiet", timeout=200)  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nodes not labelled: partial run: 1 of 3 steps (fio-seq-read)" in r.stderr
    for node in names:
        got = json.loads(k8s_cluster.kubectl("get", "node", node, "-o", "json").stdout)
        assert got["metadata"]["annotations"]["aibench.io/run"] == run["id"]


def _executor(inv: Path, **changes: Any) -> tuple[KubernetesExecutor, Any]:
    loaded = load_inventory(inv)
    node = loaded.nodes[0]
    assert node.kubernetes is not None
    ex = KubernetesExecutor(replace(node.kubernetes, **changes))
    return ex, node


def test_exit_code_oom_and_timeout_are_recorded_with_their_reason(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner)
    ex, node = _executor(inv, resources={"limits": {"memory": "48Mi"}})
    hog = "b = bytearray(400 << 20); print(len(b))"

    async def go() -> list[Any]:
        try:
            return await asyncio.gather(  # type: ignore[return-value]
                ex.run(node, Command(("sh", "-c", "echo out; echo err >&2; exit 3")),
                       tmp_path / "a.out", tmp_path / "a.err"),
                ex.run(node, Command(("python3", "-c", hog)),
                       tmp_path / "b.out", tmp_path / "b.err"),
                ex.run(node, Command(("sleep", "300"), timeout=5),
                       tmp_path / "c.out", tmp_path / "c.err"),
            )  # fmt: skip
        finally:
            await ex.close()

    exited, oom, slow = asyncio.run(go())
    assert exited.exit_code == 3, exited
    assert not exited.timed_out, exited
    assert (tmp_path / "a.out").read_text() == "out\n"
    assert (tmp_path / "a.err").read_text() == "err\n"
    assert oom.exit_code == 137, oom
    assert oom.reason.startswith("OOMKilled"), oom
    assert slow.timed_out, slow
    assert slow.exit_code is None, slow
    assert "timed out after 5 s" in slow.reason, slow
    assert slow.duration_s < 40, slow
    assert nothing_left(k8s_cluster) == NOTHING


def test_secret_variables_reach_the_pod_by_reference_only(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """A secret variable is a secretKeyRef of a Secret the run owns; the Pod spec holds no
    value, and the value reaches the tool."""
    k8s_cluster.kubectl("-n", NS, "create", "secret", "generic", "bed-s3", "--from-literal",
                        "key=from-a-secret-object")  # fmt: skip
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner,
                          secret_env={"S3_SECRET_KEY": {"secret": "bed-s3", "key": "key"}})  # fmt: skip
    ex, node = _executor(inv)
    specs: list[str] = []

    async def go() -> Any:
        task = asyncio.ensure_future(ex.run(
            node, Command(("sh", "-c", 'echo "$API_TOKEN $S3_SECRET_KEY"; sleep 2'),
                          env={"API_TOKEN": "tok-12345"}),
            tmp_path / "s.out", tmp_path / "s.err"))  # fmt: skip
        await _until(lambda: bool(_pod_specs(k8s_cluster)), 30)
        specs.extend(_pod_specs(k8s_cluster))
        try:
            return await task
        finally:
            await ex.close()

    try:
        r = asyncio.run(go())
    finally:
        k8s_cluster.kubectl("-n", NS, "delete", "secret", "bed-s3")
    assert r.exit_code == 0, r
    assert (tmp_path / "s.out").read_text() == "tok-12345 from-a-secret-object\n"
    assert specs
    assert all("tok-12345" not in s for s in specs)
    assert all("from-a-secret" not in s for s in specs)
    assert "secretKeyRef" in specs[0]
    assert nothing_left(k8s_cluster) == NOTHING


def _pod_specs(cluster: Cluster) -> list[str]:
    r = cluster.kubectl("-n", NS, "get", "pods", "-o", "json")
    return [json.dumps(i) for i in json.loads(r.stdout)["items"]]


async def _until(cond: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.3)


def test_kill_mid_step_then_resume_leaves_no_pod(
    k8s_cluster: Cluster, k8s_runner: Path, tmp_path: Path
) -> None:
    """aibench killed with SIGKILL while a step's Pod runs: the Pod outlives it; ``--resume``
    removes it (its run's Lease is held by a process that is gone), finishes the run, and
    leaves nothing."""
    inv = write_inventory(tmp_path / "inv.yaml", k8s_cluster, k8s_runner)
    out = tmp_path / "runs"
    argv = [sys.executable, "-m", "aibench", "run", "--suite", str(HERE / "suite-k8s-kill.yaml"),
            "--inventory", str(inv), "--spec", str(HERE / "spec-k8s-kill.yaml"),
            "--nodes", "k8-h1", "--output-dir", str(out), "--quiet"]  # fmt: skip
    err = tmp_path / "aibench.err"
    before = set(_live_pods(k8s_cluster))  # an earlier test's leftovers are not this run's

    def mine() -> set[str]:
        return set(_live_pods(k8s_cluster)) - before

    with err.open("wb") as stderr:
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        deadline = time.monotonic() + 90
        while not mine() and time.monotonic() < deadline:
            assert proc.poll() is None, f"aibench ended first: {err.read_text()[-2000:]}"
            time.sleep(0.5)
        assert mine(), f"no step Pod in 90 s: {err.read_text()[-2000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert leftovers(k8s_cluster)["pods"], "the killed run's Pod should still be there"
    r = aibench("run", "--resume", str(only_run_dir(out)), "--quiet", timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert nothing_left(k8s_cluster) == NOTHING


def _live_pods(cluster: Cluster) -> list[str]:
    """Step Pods not yet ended: Running, or still Pending (on a loaded machine the kubelet
    once reported none Running within 90 s of a 20 s step; killed while its Pod is
    pending, aibench leaves that Pod behind just the same)."""
    r = cluster.kubectl("-n", NS, "get", "pods", "-o", "json")
    return [
        i["metadata"]["name"]
        for i in json.loads(r.stdout)["items"]
        if i["status"].get("phase") in ("Pending", "Running")
    ]
