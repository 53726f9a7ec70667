"""aibench inside the cluster: examples/kubernetes-cronjob.yaml on the test-bed cluster.

The example is applied as a user of the bed would apply it, with only what such a user
changes: the images (``aibench_image.py``'s aibench and the bed's tools image, neither
pulled), the nodes and their scratch directories, no GPU requests, the results volume (a
hostPath here, which the test reads, instead of the PersistentVolumeClaim: the bed has
no storage provisioner), the Pushgateway's address (one started on the bed's bridge) and
the suite (the bed's short one, from the ConfigMap, instead of the built-in nightly).
The bed is Kubernetes 1.20, where CronJob is ``batch/v1beta1``; the example's
``batch/v1`` (1.21 and later) is changed to it. The aibench image is imported into the
first node only (418 MiB: a registry would let every node pull it), so the Job's Pod is
placed there by a ``nodeSelector``.

Triggered once (``kubectl create job --from=cronjob/...``; a kubectl newer than the bed
reads a CronJob as ``batch/v1`` only, and then the test makes the Job that command makes,
from the jobTemplate), aibench runs in the Job's Pod with the in-cluster configuration
of the RBAC example's service account (its projected token; no kubeconfig anywhere),
makes its step Pods on both nodes, and writes a run directory that ``aibench verify`` and
``aibench check`` accept; its metrics reach the Pushgateway, and nothing aibench made is
left in the namespace.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.aibench_cli import aibench, only_run_dir
from tests.k8s import aibench_image
from tests.k8s.cluster import API_ADDRESS, CACHE, STATE, Cluster
from tests.k8s.test_kubernetes_bed import NOTHING, nothing_left

pytestmark = [pytest.mark.netns, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
NS = "aibench"
CRONJOB = "aibench-nightly"
JOB = "try-1"
SHORTER = {"fio": {"size": "16M", "runtime": 1}, "iperf3": {"duration": 1}}
RUN_FILES = ("run.json", "report.html", "junit.xml", "summary.md", "manifest.sha256")


@pytest.fixture(scope="module")
def aibench_ref(k8s_cluster: Cluster) -> str:
    """The aibench image (built once, cached like the tools image), in the first node."""
    tar, ref = aibench_image.build(CACHE / "images")
    k8s_cluster.load_image(tar, k8s_cluster.nodes[:1])
    return ref


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    """A Pushgateway (Debian's prometheus-pushgateway) on the bed's bridge address."""
    binary = shutil.which("prometheus-pushgateway")
    if binary is None:
        pytest.skip("prometheus-pushgateway is not installed (make system-packages)")
    with socket.socket() as s:  # a port free on the bridge's address now: the kernel's pick
        s.bind((API_ADDRESS, 0))
        address = f"{API_ADDRESS}:{s.getsockname()[1]}"
    url = f"http://{address}"
    with (tmp_path / "pushgateway.log").open("wb") as log:
        proc = subprocess.Popen(
            # in memory only: Debian's build persists pushes in /var/lib/prometheus by
            # default, and every gateway started on this machine would serve them again
            [binary, f"--web.listen-address={address}", "--persistence.file="],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while not _answers(f"{url}/-/ready"):
            assert proc.poll() is None, (tmp_path / "pushgateway.log").read_text()[-1000:]
            assert time.monotonic() < deadline, "the Pushgateway did not start in 30 s"
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except OSError:
        return False


def bed_manifests(
    cluster: Cluster, image: str, results: Path, pushgateway: str
) -> list[dict[str, Any]]:
    """The example's documents with what a user of this bed changes, and nothing else."""
    docs = [d for d in yaml.safe_load_all((ROOT / "examples" / "kubernetes-cronjob.yaml")
                                          .read_text()) if d]  # fmt: skip
    by_kind = {d["kind"]: d for d in docs}
    assert set(by_kind) == {"ConfigMap", "PersistentVolumeClaim", "CronJob"}, set(by_kind)
    config = by_kind["ConfigMap"]["data"]
    inventory = yaml.safe_load(config["inventory.yaml"])
    k = inventory["kubernetes"]
    assert "kubeconfig" not in k  # in-cluster: the example names no kubeconfig
    k.update(image=cluster.tools_image, image_pull_policy="Never", shm_size="64Mi")
    for key in ("node_selector", "resources"):  # no GPUs on the bed
        del k[key]
    del inventory["defaults"]
    inventory["nodes"] = [  # fio's file is named by the step: a scratch directory per node
        {"name": n.name, "data_dirs": [str(STATE / "scratch" / f"cron-{n.name}")]}
        for n in cluster.nodes
    ]
    config["inventory.yaml"] = yaml.safe_dump(inventory)
    suite = yaml.safe_load((HERE / "suite-k8s.yaml").read_text())
    suite.update(spec="/etc/aibench/spec.yaml", settings={"history": True})
    for step in suite["steps"]:  # the bed's nightly, shorter: one second a tool
        step["options"].update(SHORTER.get(step["tool"], {}))
    config["suite.yaml"] = yaml.safe_dump(suite)
    config["spec.yaml"] = (HERE / "spec-k8s.yaml").read_text()
    cron = by_kind["CronJob"]
    assert cron["apiVersion"] == "batch/v1"
    cron["apiVersion"] = "batch/v1beta1"  # the bed's 1.20 has CronJob in batch/v1beta1 only
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    container.update(image=image, imagePullPolicy="Never")
    pod["nodeSelector"] = {"kubernetes.io/hostname": cluster.nodes[0].name}  # the image's node
    env = {e["name"]: e for e in container["env"]}
    env["PUSHGATEWAY"]["value"] = pushgateway
    env["SUITE"]["value"] = "/etc/aibench/suite.yaml"
    (volume,) = [v for v in pod["volumes"] if v["name"] == "results"]
    del volume["persistentVolumeClaim"]
    volume["hostPath"] = {"path": str(results), "type": "Directory"}
    return [by_kind["ConfigMap"], cron]


def kubectl_json(cluster: Cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("-n", NS, *args, "-o", "json").stdout)


def wait_job(cluster: Cluster, timeout: float) -> dict[str, Any]:
    """The Job once it succeeded or failed, or as it is after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        job: dict[str, Any] = kubectl_json(cluster, "get", "job", JOB)
        st = job.get("status", {})
        if st.get("succeeded") or st.get("failed") or time.monotonic() > deadline:
            return job
        time.sleep(1.0)


def started_on(cluster: Cluster) -> dict[str, str]:
    """Pod -> node of every container a kubelet started in the namespace (its events: the
    step Pods are placed by ``nodeName``, not by the scheduler)."""
    out = {}
    for ev in kubectl_json(cluster, "get", "events")["items"]:
        if ev.get("reason") == "Started" and ev["involvedObject"]["kind"] == "Pod":
            out[ev["involvedObject"]["name"]] = ev.get("source", {}).get("host", "")
    return out


def token_kind(pod: dict[str, Any]) -> str:
    """How the Pod's service-account token reaches it: a projected, bound token
    (TokenRequest) or the legacy token Secret."""
    for v in pod["spec"]["volumes"]:
        sources = v.get("projected", {}).get("sources", [])
        if any("serviceAccountToken" in s for s in sources):
            return "projected"
        if v.get("secret", {}).get("secretName", "").startswith("aibench-token-"):
            return "secret"
    return "none"


def test_cronjob_example_runs_the_suite_from_inside_the_cluster(
    k8s_cluster: Cluster, aibench_ref: str, pushgateway: str, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    os.chown(results, 65532, 65532)  # the example's Pod runs as 65532 (fsGroup: PVCs only)
    k8s_cluster.kubectl("apply", "-f", str(ROOT / "examples" / "kubernetes-rbac.yaml"))
    manifest = tmp_path / "cronjob.yaml"
    manifest.write_text(yaml.safe_dump_all(bed_manifests(k8s_cluster, aibench_ref, results,
                                                         pushgateway)))  # fmt: skip
    before = set(started_on(k8s_cluster))
    k8s_cluster.kubectl("apply", "-f", str(manifest))
    try:
        print("triggered with", trigger(k8s_cluster, tmp_path))
        job = wait_job(k8s_cluster, 300)
        (pod,) = kubectl_json(k8s_cluster, "get", "pods", "-l", f"job-name={JOB}")["items"]
        log = k8s_cluster.kubectl("-n", NS, "logs", pod["metadata"]["name"], check=False)
        assert job["status"].get("succeeded") == 1, (job["status"], log.stdout + log.stderr)
        assert in_cluster_only(pod) == ("aibench", "projected")
        steps_ran = {p: n for p, n in started_on(k8s_cluster).items()
                     if p not in before and p != pod["metadata"]["name"]}  # fmt: skip
        assert set(steps_ran.values()) == {n.name for n in k8s_cluster.nodes}, steps_ran
        assert nothing_left(k8s_cluster) == NOTHING
    finally:
        remove(k8s_cluster, manifest)
    run_dir = only_run_dir(results)
    check_run_dir(k8s_cluster, run_dir)
    assert (results / "history.sqlite").is_file()  # the suite's history, on the volume
    run = json.loads((run_dir / "run.json").read_text())
    check_pushed(pushgateway, run)


def trigger(cluster: Cluster, tmp_path: Path) -> str:
    """``kubectl create job --from=cronjob/...``; where this kubectl cannot read the bed's
    ``batch/v1beta1`` CronJob (it converts what it reads to ``batch/v1``), the Job it would
    make: the CronJob's jobTemplate, owned by the CronJob, annotated as made by hand."""
    r = cluster.kubectl("-n", NS, "create", "job", f"--from=cronjob/{CRONJOB}", JOB, check=False)
    if r.returncode == 0:
        return "kubectl create job --from"
    cron = kubectl_json(cluster, "get", "cronjobs.v1beta1.batch", CRONJOB)
    template = cron["spec"]["jobTemplate"]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": JOB,
            "namespace": NS,
            "labels": template.get("metadata", {}).get("labels", {}),
            "annotations": {"cronjob.kubernetes.io/instantiate": "manual"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1beta1",
                    "kind": "CronJob",
                    "name": CRONJOB,
                    "uid": cron["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": template["spec"],
    }
    (tmp_path / "job.json").write_text(json.dumps(job))
    cluster.kubectl("create", "-f", str(tmp_path / "job.json"))
    return f"the Job of the jobTemplate ({r.stderr.strip()[:200]})"


def in_cluster_only(pod: dict[str, Any]) -> tuple[str, str]:
    """The Pod's service account and token kind, after checking that no kubeconfig reached
    it (no such variable, no volume but the example's and the token's)."""
    spec = pod["spec"]
    (container,) = spec["containers"]
    assert "KUBECONFIG" not in {e["name"] for e in container.get("env", [])}
    volumes = {v["name"] for v in spec["volumes"]}
    assert volumes - {"inventory", "results"} == {
        m["name"] for m in container["volumeMounts"] if "serviceaccount" in m["mountPath"]
    }
    assert not spec.get("hostNetwork")  # it reaches the API through the Service's ClusterIP
    return spec["serviceAccountName"], token_kind(pod)


def remove(cluster: Cluster, manifest: Path) -> None:
    """The CronJob, its Job and the Job's Pod, and the ConfigMap: gone before the next test."""
    cluster.kubectl("-n", NS, "delete", "job", JOB, "--ignore-not-found")
    cluster.kubectl("delete", "-f", str(manifest), "--ignore-not-found")
    deadline = time.monotonic() + 60
    while kubectl_json(cluster, "get", "pods", "-l", f"job-name={JOB}")["items"]:
        assert time.monotonic() < deadline, "the Job's Pod outlived its Job by 60 s"
        time.sleep(0.5)


def check_run_dir(cluster: Cluster, run_dir: Path) -> None:
    """A complete run directory that verifies against its manifest and whose verdicts a
    re-judgement reproduces; every step ran on its node."""
    for name in RUN_FILES:
        assert (run_dir / name).is_file(), name
    r = aibench("verify", str(run_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    r = aibench("check", str(run_dir))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reproduced" in r.stdout + r.stderr, r.stdout + r.stderr
    run = json.loads((run_dir / "run.json").read_text())
    names = [n.name for n in cluster.nodes]
    steps = {(s["step"], tuple(s["nodes"])): s["status"] for s in run["steps"]}
    expected = {(step, (n,)) for step in ("preflight", "fio-seq-read") for n in names}
    assert expected | {("iperf3-tcp", tuple(names))} <= set(steps), steps
    assert set(steps.values()) == {"ok"}, steps
    outcomes = {v["check"]: v["outcome"] for v in run["verdicts"]}
    assert set(outcomes.values()) == {"PASS"}, outcomes


def check_pushed(url: str, run: dict[str, Any]) -> None:
    """The run's metrics on the Pushgateway, in the group of the job and the suite."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=10) as r:
        text = r.read().decode()
    group = ('job="aibench"', f'suite="{run["suite"]}"')
    ours = [
        ln for ln in text.splitlines() if ln.startswith("aibench_") and all(g in ln for g in group)
    ]
    info = [ln for ln in ours if ln.startswith("aibench_run_info{")]
    assert len(info) == 1, text[-3000:]
    assert 'cluster="gpu-pool-a"' in info[0], info[0]
    assert 'spec="k8s-bed"' in info[0], info[0]
    outcome = [ln for ln in ours if ln.startswith("aibench_run_outcome{") and ln.endswith(" 1")]
    assert len(outcome) == 1, outcome
    assert 'outcome="PASS"' in outcome[0], outcome
    checks = {ln.split('check="')[1].split('"')[0] for ln in ours if 'check="' in ln}
    assert {v["check"] for v in run["verdicts"]} <= checks, checks
