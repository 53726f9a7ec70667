"""The inventory: which nodes make up the cluster and how to reach them.

With no inventory file the cluster is this machine alone, reached by the local executor.
:func:`aibench.inventory_file.load_inventory` reads a YAML file, checks it against the
schema there (unknown keys are errors; every problem is one
:class:`~aibench.errors.ConfigError` naming the file and the key path, exit 2) and returns an
:class:`Inventory` of :class:`Node` values::

    schema_version: 1
    name: cluster-a
    defaults:                    # applied to every node; a node's own keys win
      executor: ssh              # local | ssh | slurm
      labels: {role: compute}
      gpus: {model: H100-SXM5-80GB, count: 8}
      data_dirs: [/scratch]
    ssh: {user: ops, identity_file: ~/.ssh/id_ed25519, known_hosts: ~/.ssh/known_hosts}
    slurm: {partition: gpu, account: acceptance, extra_args: [--qos=high]}
    limits: {max_parallel: 64, max_network_parallel: 16, ssh_retries: 3, ssh_host_failures: 3}
    nodes:
      - name: gpu[001-004]       # a hostlist expression makes one node per name
        address_pattern: "10.0.1.{n}"   # {name}, {index} (1-based), {n} (the name's number)
        labels: {rack: r1}
      - name: gpu005
        address: 10.0.1.5
        hcas:
          - {name: mlx5_0, netdev: ib0, port: 1, gid_index: 3, rate_gbps: 400}

Every field is documented once, beside its definition, in the models of
:mod:`aibench.inventory_file` (kept apart, so that a run without an inventory file builds
none of them). Names and addresses are checked by :func:`safe_name`, so no inventory value
can be read as an option or cross a shell unquoted.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# A node name or address as aibench accepts it: letters, digits, '.', '-', '_', ':' (IPv6)
# and no leading '-', so that no inventory value can ever be read as an option.
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:][A-Za-z0-9_.:\-]*$")


def safe_name(value: str, what: str = "host name") -> str:
    if not value or len(value) > 253 or not _SAFE_NAME.match(value):
        raise ValueError(
            f"invalid {what} {value!r}: use letters, digits, '.', '-', '_' or ':' "
            "and do not start with '-'"
        )
    return value


# Storage an inventory may declare, by the word suites (a step's ``requires``) and specs (a
# check's ``requires``) use: the node fact that declares it, and how reports name it.
STORAGE_KINDS: dict[str, tuple[str, str]] = {
    "shared_filesystem": ("shared_filesystems", "shared file system"),
    "object_store": ("s3_endpoints", "object store"),
    "cache": ("redis_endpoints", "cache"),
}


def declares(facts: Mapping[str, Any], kind: str) -> bool:
    """Whether a node's inventory facts declare storage of ``kind`` (STORAGE_KINDS)."""
    return bool(facts.get(STORAGE_KINDS[kind][0]))


# ------------------------------------------------------------------------ runtime values


@dataclass(frozen=True)
class SSHSettings:
    """How the ssh executor reaches a node (see :class:`SSHModel` for each field)."""

    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    known_hosts: str | None = None  # None: the user's ~/.ssh/known_hosts
    jump_host: str | None = None
    connect_timeout: float = 10.0
    config_file: str | None = None  # an ssh_config for tools that call ssh themselves (mpirun)


@dataclass(frozen=True)
class SlurmSettings:
    """How the slurm executor runs steps (see :class:`SlurmModel` for each field)."""

    partition: str | None = None
    account: str | None = None
    extra_args: tuple[str, ...] = ()
    time_limit_min: int | None = None


@dataclass(frozen=True)
class KubernetesSettings:
    """How the kubernetes executor runs steps as Pods (see :class:`KubernetesModel`)."""

    image: str = ""
    kubeconfig: str | None = None  # None: ~/.kube/config, or in-cluster
    context: str | None = None
    namespace: str = "default"
    image_pull_policy: str = "IfNotPresent"
    node_selector: Mapping[str, str] = field(default_factory=dict)
    resources: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    host_network: bool = True
    host_pid: bool = False
    privileged: bool = False
    capabilities: tuple[str, ...] = ()
    service_account: str | None = None
    tolerations: tuple[Mapping[str, Any], ...] = ()
    host_paths: tuple[str, ...] = ()
    host_paths_ro: tuple[str, ...] = ()
    secret_env: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    shm_size: str | None = None  # /dev/shm of the work Pods (a memory emptyDir)
    runtime_class: str | None = None
    image_pull_secrets: tuple[str, ...] = ()
    priority_class: str | None = None
    host_ipc: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)  # of the work Pods
    observer_env: Mapping[str, str] = field(default_factory=dict)  # Pods with no device
    mpi_launch: str = "none"  # none | ssh | mpijob: launches across nodes (kubernetes_mpi.py)
    mpi_ssh_port: int = 2222
    mpi_sshd: str = "/usr/sbin/sshd"
    mpi_job_start_s: float = 300.0  # mpijob: the operator's time to start the launcher
    label_results: bool = False
    result_valid_h: float = 24.0


@dataclass(frozen=True)
class Node:
    name: str
    address: str = ""  # what executors connect to; defaults to the name
    executor: str = "local"  # local | ssh | slurm | kubernetes
    labels: Mapping[str, str] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)  # gpus, hcas, data_dirs ...
    ssh: SSHSettings = field(default_factory=SSHSettings)
    slurm: SlurmSettings = field(default_factory=SlurmSettings)
    kubernetes: KubernetesSettings | None = None

    def __post_init__(self) -> None:
        safe_name(self.name, "node name")
        if self.address:
            safe_name(self.address, "node address")

    @property
    def host(self) -> str:
        return self.address or self.name


@dataclass(frozen=True)
class Limits:
    # invocations running at once; None: a whole round, up to what the controller holds
    # (aibench.executors.capacity)
    max_parallel: int | None = None
    max_network_parallel: int = 0  # simultaneous network tests (0 = no extra cap)
    # the SSH connection policy (aibench.executors.policy; see LimitsModel for each)
    ssh_retries: int = 3
    ssh_backoff_s: float = 0.25
    ssh_backoff_max_s: float = 4.0
    ssh_max_handshakes: int = 32
    ssh_max_sessions: int = 8
    ssh_host_failures: int = 3


@dataclass(frozen=True)
class Inventory:
    name: str
    nodes: tuple[Node, ...]
    limits: Limits = field(default_factory=Limits)
    source: str = ""  # the file it came from, or "(local machine)"
    raw: Mapping[str, Any] = field(default_factory=dict)
    # name -> node, so that a lookup does not walk the node list: planning looks up the
    # nodes of every group, and all pairs of N nodes are N^2/2 groups
    _by_name: Mapping[str, Node] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {n.name: n for n in self.nodes})

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, name: str) -> Node:
        return self._by_name[name]

    def labels(self, key: str) -> dict[str, str]:
        """Node name -> the value of label ``key`` ("" where a node has none)."""
        return {n.name: n.labels.get(key, "") for n in self.nodes}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "nodes": [
                {
                    "name": n.name,
                    "address": n.address,
                    "executor": n.executor,
                    "labels": dict(n.labels),
                    "facts": dict(n.facts),
                }
                for n in self.nodes
            ],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Inventory:
        """The inventory as stored in run.json (:meth:`to_dict`): names, addresses,
        executors, labels and declared facts; enough to judge a stored run, not to reach
        its nodes (SSH and Slurm settings are not stored)."""
        nodes = tuple(
            Node(
                name=str(n["name"]),
                address=str(n.get("address", "")),
                executor=str(n.get("executor", "local")),
                labels=dict(n.get("labels") or {}),
                facts=dict(n.get("facts") or {}),
            )
            for n in d.get("nodes", ())
            if isinstance(n, Mapping) and "name" in n
        )
        return cls(name=str(d.get("name", "")), nodes=nodes, source=str(d.get("source", "")))


def local_inventory() -> Inventory:
    """The embedded default: this machine as a one-node cluster."""
    name = socket.gethostname().split(".")[0] or "localhost"
    try:
        safe_name(name)
    except ValueError:
        name = "localhost"
    node = Node(name=name, address="127.0.0.1", executor="local")
    return Inventory(name="local", nodes=(node,), source="(local machine)")
