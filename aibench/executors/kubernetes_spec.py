"""The manifests the Kubernetes executor creates: a step's Pod and its Secret.

Pure functions of the inventory's cluster settings and the step's :class:`Command`, so
that what a Pod will look like is tested without a cluster. Values from the inventory
and the suite go into fields of the manifest, never into a shell string: the container's
command is the fixed wrapper followed by the argv as given.
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
CONTAINER = "step"
WRAPPER = 'read -r _ || true; exec "$@"'


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


def _env(
    cmd: Command, settings: KubernetesSettings, secret_name: str, secret_env: Mapping[str, str]
) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    for key, (secret, secret_key) in settings.secret_env.items():
        ref = {"name": secret, "key": secret_key}
        env.append({"name": key, "valueFrom": {"secretKeyRef": ref}})
    for key, value in cmd.env.items():
        if key in secret_env:
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
    """The Pod of one step: pinned to ``node`` by nodeName, owned by the run's Lease."""
    volumes, mounts = _volumes(node, settings)
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": settings.image,
        "imagePullPolicy": settings.image_pull_policy,
        "command": ["/bin/sh", "-c", WRAPPER, "aibench", *cmd.argv],
        "env": _env(cmd, settings, name, secret_env),
        "stdin": True,
        "stdinOnce": True,
        "volumeMounts": mounts,
        "resources": {k: dict(v) for k, v in settings.resources.items()},
        "terminationMessagePolicy": "File",
    }
    if cmd.cwd:
        container["workingDir"] = cmd.cwd
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
    if settings.host_pid:
        spec["hostPID"] = True
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {**MANAGED, RUN_LABEL: run},
            "ownerReferences": owner,
        },
        "spec": spec,
    }


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
