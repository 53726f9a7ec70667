"""The inventory's kubernetes block and the Pod a step becomes (no cluster needed: the
real cluster's tests are in tests/k8s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aibench.errors import ConfigError
from aibench.executors.base import Command
from aibench.executors.kubernetes import exit_and_reason, pod_name
from aibench.executors.kubernetes_spec import WRAPPER, pod_manifest, secret_manifest
from aibench.inventory_file import load_inventory
from aibench.model import Run, Verdict

BLOCK: dict[str, object] = {
    "kubeconfig": "~/.kube/bed.yaml",
    "namespace": "aibench",
    "image": "registry.example/aibench-tools:1.4",
    "resources": {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1", "memory": "64Gi"}},
    "capabilities": ["IPC_LOCK"],
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "host_paths_ro": ["/sys/class/infiniband"],
    "secret_env": {"S3_SECRET_KEY": {"secret": "s3", "key": "secret"}},
}


def inventory(tmp_path: Path, block: dict[str, object], **node: object) -> Path:
    doc = {
        "schema_version": 1,
        "kubernetes": block,
        "nodes": [{"name": "gpu[01-02]", "address_pattern": "10.0.0.{n}", **node}],
    }
    path = tmp_path / "inv.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_block_gives_kubernetes_nodes(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, BLOCK, data_dirs=["/scratch"]))
    assert [n.executor for n in inv.nodes] == ["kubernetes", "kubernetes"]
    k = inv.nodes[0].kubernetes
    assert k is not None
    assert k.namespace == "aibench"
    assert k.host_network
    assert k.secret_env == {"S3_SECRET_KEY": ("s3", "secret")}


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"resources": {"limits": {"nvidia.com/gpu": "eight"}}}, "kubernetes.resources"),
        ({"namespace": "Bad_NS"}, "kubernetes.namespace"),
        ({"image": "-rm -rf"}, "kubernetes.image"),
        ({"capabilities": ["ipc_lock; reboot"]}, "kubernetes.capabilities"),
        ({"cordon": True}, "kubernetes.cordon"),
    ],
)
def test_bad_block_is_one_error_naming_the_key(
    tmp_path: Path, change: dict[str, object], key: str
) -> None:
    with pytest.raises(ConfigError) as err:
        load_inventory(inventory(tmp_path, {**BLOCK, **change}))
    assert key in str(err.value)
    assert "inv.yaml" in str(err.value)


def test_kubernetes_executor_needs_the_block(tmp_path: Path) -> None:
    doc = {"schema_version": 1, "nodes": [{"name": "n1", "executor": "kubernetes"}]}
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError, match=r"nodes\[0\]\.executor.*kubernetes block"):
        load_inventory(tmp_path / "inv.yaml")


def test_pod_runs_the_argv_verbatim_on_its_node_and_holds_no_secret(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, BLOCK, data_dirs=["/scratch"]))
    node = inv.nodes[1]
    assert node.kubernetes is not None
    argv = ("fio", "--name=a b", "$(reboot)", "; rm -rf /")
    cmd = Command(argv, env={"NCCL_DEBUG": "INFO", "API_TOKEN": "t0ps3cret"}, timeout=90)
    owner = [{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "r", "uid": "u"}]
    pod = pod_manifest("p", node, cmd, node.kubernetes, "r", owner, {"API_TOKEN": "t0ps3cret"},
                       deadline=120)  # fmt: skip
    spec = pod["spec"]
    c = spec["containers"][0]
    assert spec["nodeName"] == "gpu02"
    assert spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == 120
    assert spec["hostNetwork"] is True
    assert c["command"] == ["/bin/sh", "-c", WRAPPER, "aibench", *argv]
    assert c["resources"] == {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1", "memory": "64Gi"}}
    assert c["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    env = {e["name"]: e for e in c["env"]}
    assert env["NCCL_DEBUG"] == {"name": "NCCL_DEBUG", "value": "INFO"}
    assert env["API_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "p", "key": "API_TOKEN"}
    assert env["S3_SECRET_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "s3", "key": "secret"}
    assert "t0ps3cret" not in json.dumps(pod)
    mounts = {m["mountPath"]: m["readOnly"] for m in c["volumeMounts"]}
    assert mounts == {"/scratch": False, "/sys/class/infiniband": True}
    assert pod["metadata"]["ownerReferences"] == owner
    assert spec["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    secret = secret_manifest("p", "r", {"API_TOKEN": "t0ps3cret"}, owner)
    assert secret["data"] == {"API_TOKEN": "dDBwczNjcmV0"}


def test_pod_names_are_dns_labels() -> None:
    assert pod_name("aibench-12031845-abc123", 7, "/opt/nccl/all_reduce_perf") == (
        "aibench-12031845-abc123-0007-all-reduce-perf"
    )


class _Obj:
    def __init__(self, **kw: object) -> None:
        self.__dict__.update(kw)


def test_exit_reasons() -> None:
    pod = _Obj(status=_Obj(reason=None, message=None))
    oom = _Obj(exit_code=137, reason="OOMKilled", message=None)
    assert exit_and_reason(pod, oom) == (137, "OOMKilled: the container passed its memory "
                                         "limit (exit 137)")  # fmt: skip
    assert exit_and_reason(pod, _Obj(exit_code=3, reason="Error", message=None)) == (3, "")
    late = _Obj(status=_Obj(reason="DeadlineExceeded", message="Pod was active too long"))
    _code, why = exit_and_reason(late, _Obj(exit_code=137, reason="Error", message=None))
    assert why == "DeadlineExceeded: Pod was active too long"


def test_node_verdicts_never_pass_what_was_not_measured() -> None:
    from datetime import UTC, datetime

    from aibench.executors.kubernetes_labels import node_verdicts, patch_body
    from aibench.model import Outcome, Verdict

    verdicts = [
        Verdict("fio-bw", Outcome.PASS, subject=("n1",)),
        Verdict("fio-bw", Outcome.PASS, subject=("n2",)),
        Verdict("iperf3", Outcome.FAIL, subject=("n2", "n3"), culprits=("n3",)),
        Verdict("fio-bw", Outcome.MISSING, subject=("n4",)),
    ]
    got = node_verdicts(verdicts, ["n1", "n2", "n3", "n4", "n5"])
    assert got == {"n1": "PASS", "n2": "PASS", "n3": "FAIL", "n4": "FAIL"}
    # a failing verdict about the whole run, with no culprit named, fails every node
    whole = [*verdicts[:2], Verdict("coverage", Outcome.FAIL)]
    assert node_verdicts(whole, ["n1", "n2"]) == {"n1": "FAIL", "n2": "FAIL"}
    run = _run(verdicts)
    when = datetime(2026, 12, 3, 18, 0, tzinfo=UTC)
    body = patch_body("PASS", run, "20261203-run", 24, when)
    assert body["metadata"]["labels"] == {"aibench.io/acceptance": "PASS"}
    notes = body["metadata"]["annotations"]
    assert notes["aibench.io/valid-until"] == "2026-12-04T18:00:00Z"
    assert notes["aibench.io/suite"] == "gpu-acceptance"
    assert notes["aibench.io/spec-sha256"] == "b" * 64
    assert notes["aibench.io/run"] == "run-7"
    assert notes["aibench.io/run-dir"] == "20261203-run"


STEPS = [["fio-seq", "fio"], ["iperf3-pairs", "iperf3"], ["nccl", "nccl-tests"]]


def _run(verdicts: list[Verdict], selected: Any = None, nodes: Any = None) -> Run:
    inputs: dict[str, object] = {
        "suite": {"name": "gpu-acceptance", "steps": STEPS,
                  "selected": selected or [s[0] for s in STEPS]},
    }  # fmt: skip
    if nodes:
        inputs["nodes"] = nodes
    return Run(id="run-7", suite="gpu-acceptance", spec="spec.yaml", spec_sha256="a" * 64,
               verdicts=tuple(verdicts),
               judgements=({"spec_sha256": "b" * 64},), inputs=inputs)  # fmt: skip


@pytest.mark.parametrize(
    ("selected", "nodes", "why"),
    [
        (["iperf3-pairs"], None, "partial run: 1 of 3 steps (iperf3-pairs)"),
        (None, {"expr": "gpu01", "selected": 1, "of": 2}, "partial run: nodes gpu01 (1 of 2)"),
    ],
)
def test_a_partial_run_never_labels_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, selected: object, nodes: object, why: str
) -> None:
    """A tool name or --steps (steps selected) or --nodes: no node is patched, and the
    run says why; a full run patches every node it judged."""
    from kubernetes import client

    from aibench.executors import kubernetes as k8s_executor
    from aibench.executors.kubernetes_labels import label_nodes
    from aibench.model import Outcome, Verdict

    patched: dict[str, object] = {}

    class Api:
        def __init__(self, _client: object) -> None:
            pass

        def patch_node(self, name: str, body: object, **_kw: object) -> None:
            patched[name] = body

    monkeypatch.setattr(client, "CoreV1Api", Api)
    monkeypatch.setattr(k8s_executor, "_client", lambda _settings: None)
    inv = load_inventory(inventory(tmp_path, {**BLOCK, "label_results": True}))
    verdicts = [Verdict("fio-bw", Outcome.PASS, subject=("gpu01", "gpu02"))]
    partial = _run(verdicts, selected, nodes)
    lines = label_nodes(inv, partial, "d")
    assert lines == [f"nodes not labelled: {why}: not the acceptance of suite gpu-acceptance"]
    assert patched == {}
    assert label_nodes(inv, _run(verdicts), "d") == []
    assert sorted(patched) == ["gpu01", "gpu02"]


def test_a_variable_the_suite_marks_secret_goes_into_the_runs_secret(tmp_path: Path) -> None:
    """The executor takes the notion of a secret from the step (aibench.secret): a name
    the suite marks (settings.secret_env) is kept in the run's Secret like a name that
    looks secret, never as a plain value of the Pod."""
    import asyncio

    from aibench.executors.kubernetes import KubernetesExecutor
    from aibench.secret import Secrets

    inv = load_inventory(inventory(tmp_path, BLOCK))
    node = inv.nodes[1]
    assert node.kubernetes is not None
    ex = KubernetesExecutor(node.kubernetes)
    sent: dict[str, object] = {}

    async def call(fn: object, ns: str, body: object, **_: object) -> None:
        sent[getattr(fn, "__name__", "")] = body

    async def nothing() -> None:
        return None

    class Core:
        def create_namespaced_secret(self) -> None: ...
        def create_namespaced_pod(self) -> None: ...

    ex._call = call  # type: ignore[method-assign]
    ex._ensure_lease = nothing  # type: ignore[method-assign]
    ex._core = Core  # type: ignore[method-assign]
    ex._owner = list  # type: ignore[method-assign]
    env = {"DB_DSN": "pg://u:hunter22@db", "API_TOKEN": "t0ps3cret", "NCCL_DEBUG": "INFO"}
    cmd = Command(("x",), env=env, secrets=Secrets.of([env], marked={"DB_DSN"}))
    asyncio.run(ex._create_pod(node, cmd))
    ex._pool.shutdown()
    secret, pod = sent["create_namespaced_secret"], sent["create_namespaced_pod"]
    assert set(secret["data"]) == {"DB_DSN", "API_TOKEN"}  # type: ignore[index]
    assert "hunter22" not in json.dumps(pod)
    assert "t0ps3cret" not in json.dumps(pod)
    c_env = {e["name"]: e for e in pod["spec"]["containers"][0]["env"]}  # type: ignore[index]
    assert c_env["DB_DSN"]["valueFrom"]["secretKeyRef"]["key"] == "DB_DSN"
    assert c_env["NCCL_DEBUG"]["value"] == "INFO"
