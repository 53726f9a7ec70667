"""The manifests the Kubernetes executor creates: a step's Pod, a node's batch Pod and
a Secret.

Pure functions of the inventory's cluster settings and the step's :class:`Command`, so
that what a Pod will look like is tested without a cluster. Values from the inventory
and the suite go into fields of the manifest, never into a shell string: the container's
command is the fixed wrapper followed by the argv as given.

Per role (:data:`aibench.executors.base.ROLES`): only a ``work`` Pod (the tool a step
measures with, or its server) gets the inventory's ``resources``, its ``annotations``
(Multus networks ...) and ``/dev/shm`` as a memory ``emptyDir`` of ``shm_size`` (the
suite's ``settings.shm_size`` over the inventory's); so one
device-holding Pod per node and step is admitted. ``preflight``, ``probe`` and ``setup``
commands run one after another in the node's batch Pod (:func:`batch_manifest`, no
device, the ``observer_env``), and the telemetry sampler's Pod requests no device either.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aibench.executors.base import Command
    from aibench.inventory import KubernetesSettings, Node

MANAGED = {"app.kubernetes.io/managed-by": "aibench"}
RUN_LABEL = "aibench.io/run"
ROLE_LABEL = "aibench.io/role"
CONTAINER = "step"
WRAPPER = 'read -r _ || true; exec "$@"'
# a command run in a batch Pod (exec): $1 the working directory, then NAME=VALUE
# assignments and the argv, handed to env(1); the shell only sees fixed text
EXEC_WRAPPER = 'cd "$1" || exit 125; shift; exec env "$@"'
SHM_VOLUME = "dshm"


def _volumes(node: Node, settings: KubernetesSettings) -> tuple[list[Any], list[Any]]:
    """hostPath volumes: the node's data_dirs and host_paths read-write, host_paths_ro
    read-only, each at the same path in the container."""
    rw = [*node.facts.get("data_dirs", ()), *settings.host_paths]
    volumes: list[Any] = []
    mounts: list[Any] = []
    seen: set[str] = set()
    for i, (path, ro) in enumerate([*((p, False) for p in rw),
                                    *((p, True) for p in settings.host_paths_ro)]):  # fmt: skip
        if path in seen:
            continue
        seen.add(path)
        vol = f"host-{i}"
        kind = "Directory" if ro else "DirectoryOrCreate"
        volumes.append({"name": vol, "hostPath": {"path": path, "type": kind}})
        mounts.append({"name": vol, "mountPath": path, "readOnly": ro})
    return volumes, mounts


def secret_env_of(cmd: Command) -> dict[str, str]:
    """The command's secret variables (a secret-looking name or one the suite marks):
    they go into a Secret of the run, never into a Pod spec."""
    return {k: v for k, v in cmd.env.items() if _secret(cmd, k)}


def _secret(cmd: Command, name: str) -> bool:
    """The one notion of a secret (aibench.secret: by name, or marked by the suite or the
    inventory), as the command carries it."""
    return cmd.secrets.is_secret(name)


def _env(
    cmd: Command, settings: KubernetesSettings, secret_name: str, secret_env: Mapping[str, str]
) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    for key, (secret, secret_key) in settings.secret_env.items():
        ref = {"name": secret, "key": secret_key}
        env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
    # a launcher alone (mpirun, its ranks in Pods of their own) looks at no device either
    plain = dict(settings.observer_env) if cmd.role not in ("work", "launch") else {}
    plain.update(cmd.env)
    for key, value in plain.items():
        if key in settings.secret_env:
            continue
        if key in secret_env or _secret(cmd, key):
            own = {"name": secret_name, "key": key}
            env.append({"name": key, "valueFrom": {"secretKeyRef": own}})
        else:
            env.append({"name": key, "value": value})
    return env


def _security(settings: KubernetesSettings) -> dict[str, Any]:
    sec: dict[str, Any] = {}
    if settings.privileged:
        sec["privileged"] = True
    if settings.capabilities:
        sec["capabilities"] = {"add": list(settings.capabilities)}
    return sec


def _shm(size: str | None, volumes: list[Any], mounts: list[Any]) -> None:
    if size:
        shm = {"medium": "Memory", "sizeLimit": size}
        volumes.append({"name": SHM_VOLUME, "emptyDir": shm})
        mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})


def pod_manifest(
    name: str,
    node: Node,
    cmd: Command,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    secret_env: Mapping[str, str],
    deadline: int,
) -> dict[str, Any]:
    """The Pod of one command: pinned to ``node`` by nodeName, owned by the run's Lease;
    the devices, annotations and /dev/shm only when its role is ``work``."""
    volumes, mounts = _volumes(node, settings)
    work = cmd.role == "work"
    if work:  # the suite's size over the inventory's
        _shm(cmd.shm_size or settings.shm_size, volumes, mounts)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["/bin/sh", "-c", WRAPPER, "aibench", *cmd.argv],
        "env": _env(cmd, settings, name, secret_env),
        "stdin": True,
        "stdinOnce": True,
        "volumeMounts": mounts,
        "resources": {k: dict(v) for k, v in settings.resources.items()} if work else {},
        "terminationMessagePolicy": "File",
    }
    if cmd.cwd:
        container["workingDir"] = cmd.cwd
    return _pod(name, node, settings, run, owner, container, volumes, deadline, role=cmd.role)


def batch_manifest(
    name: str,
    node: Node,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    deadline: int,
) -> dict[str, Any]:
    """A node's batch Pod: requests no device and sleeps until its deadline; preflight,
    probe and setup commands run in it one after another (the exec subresource, argv
    :func:`exec_argv`), each with its own output and exit code."""
    volumes, mounts = _volumes(node, settings)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["sleep", str(max(1, deadline))],
        "env": [{"name": k, "value": v} for k, v in settings.observer_env.items()],
        "volumeMounts": mounts,
        "resources": {},
        "terminationMessagePolicy": "File",
    }
    return _pod(name, node, settings, run, owner, container, volumes, deadline, role="batch")


def add_volumes(pod: dict[str, Any], volumes: list[Any], mounts: list[Any]) -> None:
    """Add volumes to a Pod and their mounts to its container."""
    pod["spec"]["volumes"].extend(volumes)
    pod["spec"]["containers"][0]["volumeMounts"].extend(mounts)


def exec_argv(cmd: Command) -> list[str]:
    """What a batch Pod executes for ``cmd`` (which holds no secret variable): the fixed
    wrapper, the working directory, the variables as NAME=VALUE arguments of env(1), and
    the argv unchanged."""
    assigns = [f"{k}={v}" for k, v in cmd.env.items()]
    return ["/bin/sh", "-c", EXEC_WRAPPER, "aibench", cmd.cwd or "/", *assigns, *cmd.argv]


def _pod(
    name: str,
    node: Node,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    container: dict[str, Any],
    volumes: list[Any],
    deadline: int,
    role: str,
) -> dict[str, Any]:
    security = _security(settings)
    if security:
        container["securityContext"] = security
    spec: dict[str, Any] = {
        "nodeName": node.name,
        "restartPolicy": "Never",
        "activeDeadlineSeconds": max(1, deadline),
        "terminationGracePeriodSeconds": 3,
        "hostNetwork": settings.host_network,
        "dnsPolicy": "ClusterFirstWithHostNet" if settings.host_network else "ClusterFirst",
        "enableServiceLinks": False,
        "automountServiceAccountToken": settings.service_account is not None,
        "containers": [container],
        "volumes": volumes,
        "tolerations": [dict(t) for t in settings.tolerations],
    }
    if settings.service_account:
        spec["serviceAccountName"] = settings.service_account
    _pod_extras(spec, settings)
    metadata: dict[str, Any] = {
        "name": name,
        "labels": {**MANAGED, RUN_LABEL: run, ROLE_LABEL: role},
        "ownerReferences": owner,
    }
    if role == "work" and settings.annotations:
        metadata["annotations"] = dict(settings.annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _pod_extras(spec: dict[str, Any], settings: KubernetesSettings) -> None:
    """The inventory's Pod-level settings: hostPID, hostIPC, runtimeClassName,
    priorityClassName, imagePullSecrets."""
    if settings.host_pid:
        spec["hostPID"] = True
    if settings.host_ipc:
        spec["hostIPC"] = True
    if settings.runtime_class:
        spec["runtimeClassName"] = settings.runtime_class
    if settings.priority_class:
        spec["priorityClassName"] = settings.priority_class
    if settings.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in settings.image_pull_secrets]


def secret_manifest(
    name: str, run: str, values: Mapping[str, str], owner: list[dict[str, Any]]
) -> dict[str, Any]:
    """A Secret holding a step's secret variables, owned by the run's Lease."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "labels": {**MANAGED, RUN_LABEL: run}, "ownerReferences": owner},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()},
    }
