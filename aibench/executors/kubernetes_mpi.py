"""The manifests of a launch across Kubernetes nodes, the way the MPI operator (v2) does it,
without the operator: with ``mpi_launch: ssh`` in the inventory's kubernetes block.

* a **launcher** Pod on the group's first node running the planned ``mpirun`` argv
  unchanged, with the step's image, resources, annotations and /dev/shm: its Pod uses the
  node's network, so ``mpirun`` sees the first node's address as its own and starts that
  node's ranks itself, in this Pod (as the operator's ``runLauncherAsWorker`` does); Open
  MPI reads the ssh options (``OMPI_MCA_plm_rsh_args``) and the hostfile
  (``OMPI_MCA_orte_default_hostfile``) from its environment;
* one **worker** Pod on each other node of the group: the same image, resources,
  annotations and /dev/shm (it runs that node's ranks), running ``sshd`` on
  ``mpi_ssh_port`` (on the node's network, so the port must be free on the node);
  ``mpirun`` starts Open MPI's ``orted`` there over ssh;
* a **Secret** of the launch holding a key pair made for it (the launcher's key, the
  workers' ``authorized_keys``), the workers' host key and a ``known_hosts`` that trusts
  only that host key, so nothing is accepted blindly;
* a **ConfigMap** with the hostfile (each node's address and its ranks).

With a Pod per rank (the suite's ``kubernetes: {pods: per_rank}``) the launcher holds no
rank and no device: it runs ``mpirun`` only, and each rank has a worker Pod of its own
with the step's per-node resources divided by the node's ranks (:func:`share`), its sshd
on ``mpi_ssh_port`` plus its index on the node (the node's Pods share its network). The
hostfile names one slot per worker by an ssh alias, and the ConfigMap's ``ssh_config``
gives each alias its node's address and port (Open MPI's rsh launcher passes one set of
ssh options for every host, so a port per host goes through ``Host``/``HostName``/``Port``
entries); the planned argv's ``--host`` names the aliases, its ``--map-by ppr:N:node``
becomes ``ppr:1:node`` (:func:`per_rank_argv`).

All are owned by the run's Lease and deleted when the step ends. Pure functions: the
manifests are tested as data.
"""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from aibench.executors.kubernetes_spec import MANAGED, RUN_LABEL, add_volumes, pod_manifest

if TYPE_CHECKING:
    from aibench.executors.base import Command
    from aibench.inventory import KubernetesSettings, Node

MPI_DIR = "/etc/aibench-mpi"
# $1 sshd's path, $2 the port; the rest fixed
SSHD_WRAPPER = (
    'mkdir -p /run/sshd && exec "$1" -D -e -p "$2" -o HostKey=' + MPI_DIR + "/host_key"
    " -o AuthorizedKeysFile=" + MPI_DIR + "/authorized_keys -o StrictModes=no"
    " -o PasswordAuthentication=no -o PermitRootLogin=prohibit-password -o PidFile=none"
)


@dataclass(frozen=True)
class Keys:
    """The key pairs of one launch (OpenSSH formats)."""

    client_private: str
    client_public: str
    host_private: str
    host_public: str

    @classmethod
    def generate(cls) -> Keys:
        import asyncssh

        client = asyncssh.generate_private_key("ssh-ed25519")
        host = asyncssh.generate_private_key("ssh-ed25519")
        return cls(
            client.export_private_key().decode(),
            client.export_public_key().decode().strip(),
            host.export_private_key().decode(),
            host.export_public_key().decode().strip(),
        )


def slots_of(argv: Sequence[str]) -> dict[str, int]:
    """Host -> ranks from an mpirun argv's ``--host h1:2,h2:2`` (1 when a host names no
    count)."""
    out: dict[str, int] = {}
    for flag, value in itertools.pairwise(argv):
        if flag in ("--host", "-host", "-H"):
            for item in value.split(","):
                host, _, n = item.rpartition(":") if ":" in item else (item, "", "1")
                out[host] = int(n) if n.isdigit() else 1
    return out


def _meta(name: str, run: str, owner: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "labels": {**MANAGED, RUN_LABEL: run}, "ownerReferences": owner}


def keys_secret(name: str, run: str, keys: Keys, owner: list[dict[str, Any]]) -> dict[str, Any]:
    files = {
        "id_ed25519": keys.client_private,
        "authorized_keys": keys.client_public + "\n",
        "host_key": keys.host_private,
        "known_hosts": f"* {keys.host_public}\n",
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": _meta(name, run, owner),
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
    }


def hostfile_configmap(
    name: str,
    run: str,
    hosts: Sequence[tuple[str, int]],
    owner: list[dict[str, Any]],
    ssh_config: str | None = None,
) -> dict[str, Any]:
    """The hostfile: ``ADDRESS slots=N`` per node (or ``ALIAS slots=1`` per rank, with
    the ``ssh_config`` that resolves the aliases)."""
    text = "".join(f"{address} slots={slots}\n" for address, slots in hosts)
    data = {"hostfile": text}
    if ssh_config is not None:
        data["ssh_config"] = ssh_config
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(name, run, owner),
        "data": data,
    }


# ---------------------------------------------------------------- a Pod per rank

# Kubernetes quantity suffixes (resource.Quantity): binary, decimal, milli
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(
    r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([-+]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E))?"
)


def _quantity(text: str) -> tuple[Fraction, dict[str, int]]:
    """A quantity's exact value, and the suffixes it may be written back with (its own
    family's)."""
    m = _QUANTITY.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity")
    number, exp, suffix = m.groups()
    value = Fraction(number)
    if exp is not None:
        return value * Fraction(10) ** int(exp), _DECIMAL
    if suffix == "m":
        return value / 1000, {}
    if suffix in _BINARY:
        return value * _BINARY[suffix], _BINARY
    return value * _DECIMAL.get(suffix or "", 1), _DECIMAL if suffix else {}


def _written(value: Fraction, cpu: bool, family: dict[str, int]) -> str:
    if cpu and value.denominator != 1:
        return f"{value * 1000}m"
    for suffix, unit in reversed(family.items()):
        if value % unit == 0:
            return f"{value // unit}{suffix}"
    return str(value)


def _unit(name: str) -> str:
    if name == "cpu":
        return "millicores"
    if name in ("memory", "ephemeral-storage") or name.startswith("hugepages-"):
        return "bytes"
    return "devices" if "/" in name else "units"


def share(resources: Any, ranks: int) -> dict[str, dict[str, str]]:
    """``resources`` (requests/limits) of a node divided among its ``ranks`` Pods; a
    quantity that does not divide into whole units (one device, one byte, a millicore of
    ``cpu``) raises ValueError naming it."""
    out: dict[str, dict[str, str]] = {}
    for kind, values in resources.items():
        out[kind] = {}
        for name, text in values.items():
            value, family = _quantity(str(text))
            part = value / ranks
            cpu = name == "cpu"
            if (part * 1000 if cpu else part).denominator != 1:
                raise ValueError(f"{kind}.{name}: {text} over {ranks} ranks is not a whole "
                                 f"number of {_unit(name)}")  # fmt: skip
            out[kind][name] = _written(part, cpu, family)
    return out


@dataclass(frozen=True)
class Rank:
    """A rank's worker Pod: its name (also its ssh alias), node and sshd port."""

    name: str
    node: Node
    port: int


def rank_pods(base: str, nodes: Sequence[Node], slots: dict[str, int], port: int) -> list[Rank]:
    """A worker per rank, node by node in the launch's order (so ranks fill a node before
    the next, as ``ppr:N:node`` places them); each node's sshd ports from ``port`` up."""
    return [
        Rank(f"{base}-r{i}-{local}", node, port + local)
        for i, node in enumerate(nodes)
        for local in range(slots.get(node.host, 1))
    ]


def ssh_config(ranks: Sequence[Rank]) -> str:
    """ssh's configuration for the launcher: each alias to its node and port, the launch's
    key, and only the workers' host key trusted."""
    hosts = "".join(f"Host {r.name}\n  HostName {r.node.host}\n  Port {r.port}\n" for r in ranks)
    return hosts + (
        f"Host *\n  IdentityFile {MPI_DIR}/id_ed25519\n  IdentitiesOnly yes\n"
        f"  StrictHostKeyChecking yes\n  UserKnownHostsFile {MPI_DIR}/known_hosts\n"
    )


def per_rank_argv(argv: Sequence[str], ranks: Sequence[Rank]) -> tuple[str, ...]:
    """The planned mpirun argv over the rank Pods: ``--host`` names their aliases with a
    slot each, ``--map-by ppr:N:node`` places one rank on each."""
    out = list(argv)
    for i, (flag, value) in enumerate(itertools.pairwise(argv)):
        if flag in ("--host", "-host", "-H"):
            out[i + 1] = ",".join(f"{r.name}:1" for r in ranks)
        elif flag in ("--map-by", "-map-by") and re.fullmatch(r"ppr:\d+:node", value):
            out[i + 1] = "ppr:1:node"
    return tuple(out)


def _mpi_volumes(secret: str, configmap: str) -> tuple[list[Any], list[Any]]:
    volumes = [
        {"name": "mpi-keys", "secret": {"secretName": secret, "defaultMode": 0o400}},
        {"name": "mpi-hosts", "configMap": {"name": configmap}},
    ]
    mounts = [
        {"name": "mpi-keys", "mountPath": MPI_DIR, "readOnly": True},
        {"name": "mpi-hosts", "mountPath": f"{MPI_DIR}-hosts", "readOnly": True},
    ]
    return volumes, mounts


def worker_manifest(
    name: str,
    node: Node,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    deadline: int,
    secret: str,
    configmap: str,
    shm_size: str | None = None,
    rank: tuple[int, Any] | None = None,
) -> dict[str, Any]:
    """A worker: the step's devices and /dev/shm (``shm_size``: the suite's, over the
    inventory's), sshd in the foreground on ``mpi_ssh_port``; a rank's worker (``rank``:
    its port and its share of the resources, :func:`share`) on its own port with its
    share."""
    from aibench.executors.base import Command

    port = str(settings.mpi_ssh_port)
    if rank is not None:
        port, settings = str(rank[0]), replace(settings, resources=rank[1])
    sshd = Command(("/bin/sh", "-c", SSHD_WRAPPER, "aibench", settings.mpi_sshd, port),
                   shm_size=shm_size)  # fmt: skip
    pod = pod_manifest(name, node, sshd, settings, run, owner, {}, deadline)
    container = pod["spec"]["containers"][0]
    # no wrapper waiting for a release on stdin: sshd starts at once
    container["command"] = list(sshd.argv)
    container.pop("stdin")
    container.pop("stdinOnce")
    pod["metadata"]["labels"]["aibench.io/role"] = "mpi-worker"
    add_volumes(pod, *_mpi_volumes(secret, configmap))
    return pod


def hosts_not_in(cmd: Command, nodes: Mapping[str, Node]) -> str | None:
    """Why a launch cannot start: the hosts of ``cmd`` that the inventory does not name
    (None when it names them all)."""
    missing = [h for h in cmd.hosts if h not in nodes]
    return f"launch across {', '.join(missing)}: not in the inventory" if missing else None


def launcher_manifest(
    name: str,
    node: Node,
    cmd: Command,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    secret_env: dict[str, str],
    deadline: int,
    secret: str,
    configmap: str,
    per_rank: bool = False,
) -> dict[str, Any]:
    """The launcher: the planned mpirun argv, the first node's ranks (its devices and
    /dev/shm), ssh to the workers with the launch's key, trusting only their host key.
    ``per_rank``: ``mpirun`` alone (``cmd`` the argv of :func:`per_rank_argv`), no rank,
    no device; ssh reads the ConfigMap's ``ssh_config``, and every orted is started from
    here (no tree spawn: the workers have no ssh configuration)."""
    # a step's resources, annotations and /dev/shm, or none for mpirun alone
    ranks = replace(cmd, role="launch" if per_rank else "work")
    pod = pod_manifest(name, node, ranks, settings, run, owner, secret_env, deadline)
    pod["metadata"]["labels"]["aibench.io/role"] = "mpi-launcher"
    ssh = (f"-p {settings.mpi_ssh_port} -i {MPI_DIR}/id_ed25519 -o IdentitiesOnly=yes "
           f"-o StrictHostKeyChecking=yes -o UserKnownHostsFile={MPI_DIR}/known_hosts")  # fmt: skip
    env = pod["spec"]["containers"][0]["env"]
    if per_rank:
        ssh = f"-F {MPI_DIR}-hosts/ssh_config"
        env.append({"name": "OMPI_MCA_plm_rsh_no_tree_spawn", "value": "1"})
    env.append({"name": "OMPI_MCA_plm_rsh_args", "value": ssh})
    env.append({"name": "OMPI_MCA_orte_default_hostfile", "value": f"{MPI_DIR}-hosts/hostfile"})
    add_volumes(pod, *_mpi_volumes(secret, configmap))
    return pod


# ---------------------------------------------------------------- mpi_launch: mpijob

MPIJOB_GROUP = "kubeflow.org"
MPIJOB_VERSION = "v2beta1"
MPIJOB_PLURAL = "mpijobs"
MPIJOB_CRD = f"{MPIJOB_PLURAL}.{MPIJOB_GROUP}"
# the labels the MPI operator puts on the Pods of an MPIJob
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
SSH_AUTH = "/root/.ssh"  # sshAuthMountPath: the operator mounts its key pair there
# $1 sshd's path, $2 the port: the operator's key as the host key and the authorized key
MPIJOB_SSHD = (
    'mkdir -p /run/sshd && exec "$1" -D -e -p "$2" -o HostKey=' + SSH_AUTH + "/id_rsa"
    " -o AuthorizedKeysFile=" + SSH_AUTH + "/authorized_keys -o StrictModes=no"
    " -o PasswordAuthentication=no -o PermitRootLogin=prohibit-password -o PidFile=none"
)


def _template(pod: dict[str, Any]) -> dict[str, Any]:
    """A Pod manifest as a replica's template: its labels, annotations and spec."""
    meta = {k: v for k, v in pod["metadata"].items() if k in ("labels", "annotations")}
    return {"metadata": meta, "spec": pod["spec"]}


def _plain(pod: dict[str, Any], argv: Sequence[str]) -> None:
    """The container runs ``argv`` at once (no wrapper waiting for a release on stdin)."""
    container = pod["spec"]["containers"][0]
    container["command"] = list(argv)
    container.pop("stdin")
    container.pop("stdinOnce")


def _one_per_node(spec: dict[str, Any], job: str, nodes: Sequence[Node]) -> None:
    """A worker on each of ``nodes`` and no two on one: node affinity by hostname, and
    anti-affinity to the job's other workers."""
    del spec["nodeName"]
    names = [n.name for n in nodes]
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                  "values": names}]}  # fmt: skip
    workers = {"matchLabels": {JOB_NAME_LABEL: job, JOB_ROLE_LABEL: "worker"}}
    spec["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]}},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": workers, "topologyKey": "kubernetes.io/hostname"}]},
    }  # fmt: skip


def mpijob_manifest(
    name: str,
    head: Node,
    workers: Sequence[Node],
    cmd: Command,
    settings: KubernetesSettings,
    run: str,
    owner: list[dict[str, Any]],
    secret_env: dict[str, str],
    deadline: int,
    slots: int,
) -> dict[str, Any]:
    """An MPIJob (kubeflow.org/v2beta1) of the same launch: the launcher on ``head`` runs
    the planned mpirun argv and that node's ranks (``runLauncherAsWorker``), a worker on
    each other node runs sshd with the operator's keys; the operator makes the keys and
    the hostfile, and creates the launcher once the workers are ready."""
    from aibench.executors.base import Command

    launcher = pod_manifest(f"{name}-launcher", head, replace(cmd, role="work"), settings,
                            run, owner, secret_env, deadline)  # fmt: skip
    _plain(launcher, cmd.argv)
    env = launcher["spec"]["containers"][0]["env"]
    # the agent, not plm_rsh_args: the operator sets that one (its ssh options) itself
    agent = f"ssh -p {settings.mpi_ssh_port}"
    env.append({"name": "OMPI_MCA_plm_rsh_agent", "value": agent})
    port = str(settings.mpi_ssh_port)
    sshd = Command(("/bin/sh", "-c", MPIJOB_SSHD, "aibench", settings.mpi_sshd, port),
                   shm_size=cmd.shm_size)  # fmt: skip
    worker = pod_manifest(f"{name}-worker", workers[0], sshd, settings, run, owner, {},
                          deadline)  # fmt: skip
    _plain(worker, sshd.argv)
    _one_per_node(worker["spec"], name, workers)
    replica = {"restartPolicy": "Never"}
    spec = {
        "slotsPerWorker": slots,
        "runLauncherAsWorker": True,
        "launcherCreationPolicy": "WaitForWorkersReady",
        "sshAuthMountPath": SSH_AUTH,
        "mpiImplementation": "OpenMPI",
        "runPolicy": {"cleanPodPolicy": "All", "backoffLimit": 0,
                      "activeDeadlineSeconds": max(1, deadline)},
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, **replica, "template": _template(launcher)},
            "Worker": {"replicas": len(workers), **replica, "template": _template(worker)},
        },
    }  # fmt: skip
    return {
        "apiVersion": f"{MPIJOB_GROUP}/{MPIJOB_VERSION}",
        "kind": "MPIJob",
        "metadata": _meta(name, run, owner),
        "spec": spec,
    }
