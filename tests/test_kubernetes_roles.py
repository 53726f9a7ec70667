"""What each kind of Pod the kubernetes executor makes asks of its node, and which
variables never reach a Pod spec (no cluster needed: the Pods are data)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aibench.executors.base import Command
from aibench.executors.kubernetes import KubernetesExecutor, exec_status
from aibench.executors.kubernetes_spec import (
    EXEC_WRAPPER,
    batch_manifest,
    exec_argv,
    pod_manifest,
    secret_env_of,
)
from aibench.inventory import Node
from aibench.inventory_file import load_inventory
from aibench.secret import Secrets

BLOCK: dict[str, object] = {
    "namespace": "aibench",
    "image": "registry.example/aibench-tools:1.4",
    "resources": {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1", "memory": "64Gi"}},
    "shm_size": "32Gi",
    "runtime_class": "nvidia",
    "image_pull_secrets": ["regcred"],
    "priority_class": "acceptance",
    "host_ipc": True,
    "annotations": {"k8s.v1.cni.cncf.io/networks": "rdma-net-a,rdma-net-b"},
    "observer_env": {"NVIDIA_VISIBLE_DEVICES": "all"},
    "secret_env": {"S3_SECRET_KEY": {"secret": "s3", "key": "secret"}},
}
OWNER = [{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "r", "uid": "u"}]


def _node(tmp_path: Path, **change: object) -> Node:
    doc = {
        "schema_version": 1,
        "kubernetes": {**BLOCK, **change},
        "nodes": [{"name": "gpu01", "address": "10.0.0.1", "data_dirs": ["/scratch"]}],
    }
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(doc))
    return load_inventory(tmp_path / "inv.yaml").nodes[0]


def _pod(node: Node, cmd: Command) -> dict[str, Any]:
    assert node.kubernetes is not None
    return pod_manifest("p", node, cmd, node.kubernetes, "r", OWNER, secret_env_of(cmd), 90)


def test_only_the_work_pod_holds_devices_annotations_and_shm(tmp_path: Path) -> None:
    node = _node(tmp_path)
    work = _pod(node, Command(("all_reduce_perf", "-g", "8"), timeout=60))
    c = work["spec"]["containers"][0]
    assert c["resources"] == {"limits": {"nvidia.com/gpu": "8", "rdma/ib": "1", "memory": "64Gi"}}
    assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in work["spec"][
        "volumes"
    ]
    assert work["metadata"]["annotations"] == {
        "k8s.v1.cni.cncf.io/networks": "rdma-net-a,rdma-net-b"
    }
    assert work["metadata"]["labels"]["aibench.io/role"] == "work"
    assert "NVIDIA_VISIBLE_DEVICES" not in {e["name"] for e in c["env"]}
    for role in ("sampler", "preflight", "probe", "setup"):
        pod = _pod(node, Command(("nvidia-smi", "-q"), timeout=60, role=role))
        c = pod["spec"]["containers"][0]
        assert c["resources"] == {}, role
        assert "annotations" not in pod["metadata"], role
        assert all(m["mountPath"] != "/dev/shm" for m in c["volumeMounts"]), role
        assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in c["env"], role
        assert pod["metadata"]["labels"]["aibench.io/role"] == role


def test_every_pod_gets_the_inventory_pod_settings(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert node.kubernetes is not None
    batch = batch_manifest("h", node, node.kubernetes, "r", OWNER, 5400)
    for pod in (_pod(node, Command(("fio",))), batch):
        spec = pod["spec"]
        assert spec["runtimeClassName"] == "nvidia"
        assert spec["priorityClassName"] == "acceptance"
        assert spec["imagePullSecrets"] == [{"name": "regcred"}]
        assert spec["hostIPC"] is True
        assert spec["nodeName"] == "gpu01"
        assert pod["metadata"]["ownerReferences"] == OWNER
    (tmp_path / "plain").mkdir()
    plain = _node(tmp_path / "plain", shm_size=None, runtime_class=None, image_pull_secrets=[],
                  priority_class=None, host_ipc=False, annotations={})  # fmt: skip
    spec = _pod(plain, Command(("fio",)))["spec"]
    assert not {"runtimeClassName", "priorityClassName", "imagePullSecrets", "hostIPC"} & set(spec)
    assert all(v["name"] != "dshm" for v in spec["volumes"])


def test_the_batch_pod_requests_nothing_and_runs_commands_by_argv(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert node.kubernetes is not None
    batch = batch_manifest("h", node, node.kubernetes, "r", OWNER, 5400)
    c = batch["spec"]["containers"][0]
    assert c["command"] == ["sleep", "5400"]
    assert c["resources"] == {}
    assert batch["spec"]["activeDeadlineSeconds"] == 5400
    assert batch["metadata"]["labels"]["aibench.io/role"] == "batch"
    cmd = Command(("sh", "-c", "$(reboot)"), env={"LC_ALL": "C"}, cwd="/scratch", role="probe")
    argv = exec_argv(cmd)
    assert argv == ["/bin/sh", "-c", EXEC_WRAPPER, "aibench", "/scratch", "LC_ALL=C",
                    "sh", "-c", "$(reboot)"]  # fmt: skip
    assert exec_argv(Command(("true",)))[4:] == ["/", "true"]


@pytest.mark.parametrize(
    ("status", "want"),
    [
        ('{"metadata":{},"status":"Success"}', (0, "")),
        (
            '{"metadata":{},"status":"Failure","message":"command terminated with non-zero '
            'exit code: error executing command [sh -c exit 3], exit code 3","reason":'
            '"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}',
            (3, ""),
        ),
        (
            '{"metadata":{},"status":"Failure","message":"OCI runtime exec failed: exec '
            "failed: container_linux.go:380: starting container process caused: exec: "
            '\\"nope\\": executable file not found in $PATH: unknown","reason":"InternalError"}',
            (
                None,
                "OCI runtime exec failed: exec failed: container_linux.go:380: starting "
                'container process caused: exec: "nope": executable file not found in $PATH: '
                "unknown",
            ),
        ),
        ("", (None, "the exec stream ended without an exit status")),
    ],
)
def test_exec_status(status: str, want: tuple[int | None, str]) -> None:
    assert exec_status(status) == want


def test_marked_and_secret_looking_variables_never_reach_a_pod_spec(tmp_path: Path) -> None:
    """A variable the suite marks (settings.secret_env) and one whose name looks secret
    are secretKeyRefs to the run's Secret; none of their values is in any Pod spec, and a
    command holding one is not run by exec in a batch (its argv would carry the value)."""
    node = _node(tmp_path)
    env = {"HF_READ": "hf_abcdef123", "DB_PASSWORD": "pw-9876", "NCCL_DEBUG": "INFO"}
    for role in ("work", "preflight", "probe", "sampler", "setup"):
        cmd = Command(("fio",), env=env, role=role, secrets=Secrets.of(marked={"HF_READ"}))
        assert secret_env_of(cmd) == {"HF_READ": "hf_abcdef123", "DB_PASSWORD": "pw-9876"}
        pod = _pod(node, cmd)
        text = json.dumps(pod)
        assert "hf_abcdef123" not in text, role
        assert "pw-9876" not in text, role
        refs = {
            e["name"]: e["valueFrom"]["secretKeyRef"]
            for e in pod["spec"]["containers"][0]["env"]
            if "valueFrom" in e
        }
        assert refs == {
            "S3_SECRET_KEY": {"name": "s3", "key": "secret"},
            "HF_READ": {"name": "p", "key": "HF_READ"},
            "DB_PASSWORD": {"name": "p", "key": "DB_PASSWORD"},
        }
    assert secret_env_of(Command(("fio",), env={"NCCL_DEBUG": "INFO"})) == {}


def test_deadlines_follow_the_plan(tmp_path: Path) -> None:
    node = _node(tmp_path)
    assert node.kubernetes is not None
    ex = KubernetesExecutor(node.kubernetes, expected_s=3600)
    try:
        assert ex.run_deadline() == 3600 * 3 // 2 + 1800
        assert ex.deadline(Command(("fio",), timeout=300)) == 330
        sampler = Command(("nvidia-smi", "-l", "2"), timeout=10 * 86400.0, role="sampler")
        assert ex.deadline(sampler) == 3600 * 3 // 2 + 1800  # not 10 days
    finally:
        ex._pool.shutdown(wait=False)
    unplanned = KubernetesExecutor(node.kubernetes)
    try:
        assert unplanned.deadline(sampler) == 6 * 3600
    finally:
        unplanned._pool.shutdown(wait=False)


def test_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown command role 'gpu'"):
        Command(("fio",), role="gpu")


@pytest.mark.parametrize(
    ("step", "refused"),
    [
        ("{name: nccl, tool: nccl-tests, placement: all, options: {op: all_reduce}}", True),
        ("{name: nccl, tool: nccl-tests, placement: each, options: {op: all_reduce}}", False),
        ("{name: net, tool: iperf3, placement: pairs, options: {duration: 5}}", False),
    ],
)
def test_plan_refuses_a_launch_across_kubernetes_nodes(
    tmp_path: Path, step: str, refused: bool
) -> None:
    """nccl-tests over every node is mpirun from one node onto the others: without
    mpi_launch: ssh no Pod can do that, so the plan refuses it with one line; one node
    per run, or a pair with a process on each node (iperf3), plans."""
    from aibench.errors import UserError
    from aibench.inventory import Inventory, KubernetesSettings
    from aibench.plan import build_plan
    from aibench.suite import load_suite

    path = tmp_path / "suite.yaml"
    path.write_text(f"schema_version: 1\nname: k\nsteps:\n  - {step}\n")
    k8s = KubernetesSettings(image="tools:1")
    nodes = tuple(Node(f"gpu0{i}", executor="kubernetes", kubernetes=k8s) for i in (1, 2, 3))
    inventory = Inventory("k", nodes)
    if not refused:
        assert build_plan(load_suite(str(path)), inventory).run_count() >= 2
        return
    with pytest.raises(UserError) as err:
        build_plan(load_suite(str(path)), inventory)
    assert str(err.value).startswith(
        "step nccl: nccl-tests across 3 Kubernetes nodes is launched from gpu01 onto gpu02, "
        "gpu03, which the kubernetes executor cannot do without mpi_launch: ssh"
    )
    assert "\n" not in str(err.value)


def test_a_pod_security_refusal_is_reported_as_such() -> None:
    """The 403 Pod Security admission answers for a hostNetwork/hostPath Pod in a
    baseline namespace is a refusal with the fix, not "unreachable"."""
    from kubernetes.client.exceptions import ApiException

    from aibench.kubeapi import api_error, pod_security_refusal

    message = (
        'pods "aibench-12050140-abc123-0001-fio" is forbidden: violates PodSecurity '
        '"baseline:latest": host namespaces (hostNetwork=true), hostPath volumes '
        '(volume "host-0")'
    )
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
              "reason": "Forbidden", "code": 403}  # fmt: skip
    exc = ApiException(status=403, reason="Forbidden")
    exc.body = json.dumps(status)
    got = pod_security_refusal(exc, "aibench")
    assert got.startswith(f"refused by Pod Security admission in namespace aibench: {message}")
    assert "pod-security.kubernetes.io/enforce=privileged" in got
    assert api_error(exc) == f"Kubernetes API: 403 Forbidden: {message}"
    rbac = ApiException(status=403, reason="Forbidden")
    rbac.body = json.dumps({**status, "message": 'pods is forbidden: User "x" cannot create'})
    assert pod_security_refusal(rbac, "aibench") == ""
    assert api_error(ConnectionRefusedError("[Errno 111] Connection refused")) == (
        "Kubernetes API unreachable: [Errno 111] Connection refused"
    )


def test_the_cronjob_example_runs_with_the_rbac_example_rights(tmp_path: Path) -> None:
    """examples/kubernetes-cronjob.yaml: the service account and namespace of
    examples/kubernetes-rbac.yaml (whose namespace allows privileged Pods), an inventory
    this aibench loads, results on a volume, metrics to the Pushgateway."""
    root = Path(__file__).resolve().parent.parent / "examples"
    rbac = list(yaml.safe_load_all((root / "kubernetes-rbac.yaml").read_text()))
    docs = {
        d["kind"]: d for d in yaml.safe_load_all((root / "kubernetes-cronjob.yaml").read_text())
    }
    (ns,) = [d for d in rbac if d["kind"] == "Namespace"]
    assert ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    (sa,) = [d for d in rbac if d["kind"] == "ServiceAccount"]
    (role,) = [d for d in rbac if d["kind"] == "Role"]
    verbs = {r: rule["verbs"] for rule in role["rules"] for r in rule["resources"]}
    assert "create" in verbs["pods/exec"]
    job = docs["CronJob"]
    pod = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job["metadata"]["namespace"] == sa["metadata"]["namespace"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    script = pod["containers"][0]["args"][0]
    assert 'aibench run --suite "$SUITE" --inventory /etc/aibench/inventory.yaml' in script
    assert 'aibench metrics "$(dirname "$run_json")" --pushgateway "$PUSHGATEWAY"' in script
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["SUITE"] == "nightly"
    mounts = {m["mountPath"]: m["name"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts == {"/etc/aibench": "inventory", "/results": "results"}
    inv = yaml.safe_load(docs["ConfigMap"]["data"]["inventory.yaml"])
    assert "kubeconfig" not in inv["kubernetes"]  # in-cluster
    inv["nodes"] = [{"name": "gpu01", "address": "10.0.0.1"}]  # else read from the API
    (tmp_path / "inv.yaml").write_text(yaml.safe_dump(inv))
    node = load_inventory(tmp_path / "inv.yaml").nodes[0]
    assert node.kubernetes is not None
    assert node.kubernetes.namespace == sa["metadata"]["namespace"]


def test_the_suite_sizes_dev_shm_over_the_inventory(tmp_path: Path) -> None:
    from aibench.suite import load_suite

    path = tmp_path / "suite.yaml"
    path.write_text("schema_version: 1\nname: k\nsettings: {shm_size: 128Gi}\n"
                    "steps:\n  - {name: f, tool: fio, options: {rw: read}}\n")  # fmt: skip
    size = load_suite(str(path)).settings.shm_size
    assert size == "128Gi"
    node = _node(tmp_path)
    pod = _pod(node, Command(("all_reduce_perf",), shm_size=size))
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    assert volumes["dshm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "128Gi"}
    probe = _pod(node, Command(("nvidia-smi",), role="probe", shm_size=size))
    assert "dshm" not in {v["name"] for v in probe["spec"]["volumes"]}


class _ExecStream:
    """An exec websocket as the client presents it: stdout, stderr, then the status on the
    error channel when the process ends."""

    def __init__(self, out: bytes, err: bytes, status: str) -> None:
        self.chunks = {1: out, 2: err, 3: status.encode()}
        self.open = True

    def is_open(self) -> bool:
        return self.open

    def update(self, timeout: float = 0) -> None:
        self.open = False

    def read_channel(self, channel: int) -> bytes:
        return self.chunks.pop(channel, b"")

    def close(self) -> None:
        self.open = False


def test_batched_commands_share_one_pod_per_node_with_their_own_output_and_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three preflight commands on a node: one batch Pod made, each command exec'd in it
    by argv, its stdout, stderr and exit code its own; a command that cannot start
    (not found) has the server's message and no exit code."""
    import asyncio

    from aibench.executors.kubernetes import KubernetesExecutor

    node = _node(tmp_path)
    assert node.kubernetes is not None
    ex = KubernetesExecutor(node.kubernetes)
    pods: list[str] = []
    execs: list[list[str]] = []
    answers = {
        "uname": (b"Linux\n", b"", '{"status":"Success"}'),
        "false": (b"", b"boom\n", '{"status":"Failure","reason":"NonZeroExitCode","details":'
                  '{"causes":[{"reason":"ExitCode","message":"1"}]}}'),
        "nope": (b"", b"", '{"status":"Failure","message":"exec: \\"nope\\": executable file '
                 'not found in $PATH","reason":"InternalError"}'),
    }  # fmt: skip

    async def ensure_lease() -> str:
        ex._lease_uid = "u"
        return "u"

    async def submit(name: str, manifest: dict[str, Any]) -> None:
        pods.append(manifest["metadata"]["labels"]["aibench.io/role"])

    async def open_stream(name: str, command: list[str], stdin: bool) -> _ExecStream:
        execs.append(command)
        return _ExecStream(*answers[command[-1]])

    monkeypatch.setattr(ex, "_ensure_lease", ensure_lease)
    monkeypatch.setattr(ex, "_submit", submit)
    monkeypatch.setattr(ex, "_wait_started", lambda *_a: asyncio.sleep(0))
    monkeypatch.setattr(ex, "_open_stream", open_stream)

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(
            ex.run(node, Command((tool,), role="preflight"), tmp_path / f"{tool}.out",
                   tmp_path / f"{tool}.err")
            for tool in answers
        )))  # fmt: skip

    try:
        results = asyncio.run(main())
    finally:
        ex._pool.shutdown(wait=False)
    assert pods == ["batch"]
    assert [c[5:] for c in execs] == [["uname"], ["false"], ["nope"]]
    assert [(r.exit_code, r.reason) for r in results] == [
        (0, ""),
        (1, ""),
        (None, 'exec: "nope": executable file not found in $PATH'),
    ]
    assert (tmp_path / "uname.out").read_bytes() == b"Linux\n"
    assert (tmp_path / "false.err").read_bytes() == b"boom\n"
