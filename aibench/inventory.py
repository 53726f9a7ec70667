"""The inventory: which nodes make up the cluster and how to reach them.

With no inventory file the cluster is this machine alone, reached by the local executor.
The file format (YAML, schema-checked) is documented in the README; ``load_inventory``
turns it into an :class:`Inventory` of :class:`Node` values.
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


@dataclass(frozen=True)
class SSHSettings:
    user: str | None = None
    port: int = 22
    identity_file: str | None = None
    known_hosts: str | None = None  # None: the user's ~/.ssh/known_hosts
    jump_host: str | None = None
    connect_timeout: float = 10.0
    config_file: str | None = None  # an ssh_config for tools that call ssh themselves (mpirun)


@dataclass(frozen=True)
class Node:
    name: str
    address: str = ""  # what executors connect to; defaults to the name
    executor: str = "local"  # local | ssh | slurm
    labels: Mapping[str, str] = field(default_factory=dict)
    facts: Mapping[str, Any] = field(default_factory=dict)  # gpus, hcas, data_dirs ...
    ssh: SSHSettings = field(default_factory=SSHSettings)

    def __post_init__(self) -> None:
        safe_name(self.name, "node name")
        if self.address:
            safe_name(self.address, "node address")

    @property
    def host(self) -> str:
        return self.address or self.name


@dataclass(frozen=True)
class Limits:
    max_parallel: int = 64  # steps running at once
    max_network_parallel: int = 0  # simultaneous network tests (0 = no extra cap)


@dataclass(frozen=True)
class Inventory:
    name: str
    nodes: tuple[Node, ...]
    limits: Limits = field(default_factory=Limits)
    source: str = ""  # the file it came from, or "(local machine)"
    raw: Mapping[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)

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


def local_inventory() -> Inventory:
    """The embedded default: this machine as a one-node cluster."""
    name = socket.gethostname().split(".")[0] or "localhost"
    try:
        safe_name(name)
    except ValueError:
        name = "localhost"
    node = Node(name=name, address="127.0.0.1", executor="local")
    return Inventory(name="local", nodes=(node,), source="(local machine)")
