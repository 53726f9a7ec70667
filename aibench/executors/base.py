"""The executor contract: run an argv on a host, or start a server there and stop it.

Executors run; they do not plan (STYLE.md principle 6). A :class:`Command` is an argv
list, never a shell string: an executor that must cross a shell (SSH) quotes every
argument itself. stdout and stderr go to files *as they arrive*, so an interrupted run
keeps what it measured.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from aibench.secret import Secrets

if TYPE_CHECKING:
    from aibench.inventory import Node


@dataclass(frozen=True)
class ReadyCheck:
    """How to know that a server is ready: a regex on its stdout, and/or a TCP port."""

    pattern: str | None = None
    port: int | None = None
    timeout: float = 10.0


# What a command is for; an executor may place it by its role (the kubernetes executor
# gives the step's devices only to "work" and runs "preflight", "probe" and "setup"
# commands one after another in one Pod per node).
# "launch" is a launcher (mpirun) reaching ``hosts``: on Kubernetes, worker Pods there.
ROLES = ("work", "preflight", "probe", "sampler", "setup", "launch")


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the host's environment
    cwd: str | None = None
    timeout: float = 600.0
    # the step's secret names and values (aibench.secret): its output is written through
    # secrets.writer, and the Kubernetes executor keeps its secret variables in a Secret
    secrets: Secrets = field(default_factory=Secrets)
    role: str = "work"  # one of ROLES
    hosts: tuple[str, ...] = ()  # role "launch": the nodes the launcher starts ranks on
    shm_size: str | None = None  # the suite's /dev/shm size (settings.shm_size), if any
    # role "launch" on Kubernetes: a worker Pod per rank (the suite's kubernetes.pods)
    per_rank: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))
        if not self.argv or not all(isinstance(a, str) for a in self.argv):
            raise TypeError(f"argv must be a non-empty sequence of str, got {self.argv!r}")
        if self.role not in ROLES:
            raise ValueError(f"unknown command role {self.role!r}; valid: {', '.join(ROLES)}")
        object.__setattr__(self, "hosts", tuple(self.hosts))


@dataclass(frozen=True)
class ProcResult:
    exit_code: int | None  # None when the process was killed (timeout, interrupt)
    started: str  # ISO 8601 UTC
    duration_s: float
    timed_out: bool = False
    unreachable: bool = False
    reason: str = ""  # one line when something went wrong


class Server(Protocol):
    """A background process started by an executor; ``stop`` always ends it."""

    @property
    def alive(self) -> bool: ...

    async def stop(self) -> int | None: ...


class Executor(Protocol):
    name: str

    async def check(self, node: Node) -> str | None:
        """None when the node can be reached, else the reason in one line."""
        ...

    async def run(self, node: Node, cmd: Command, stdout: Path, stderr: Path) -> ProcResult: ...

    async def start(
        self, node: Node, cmd: Command, stdout: Path, stderr: Path, ready: ReadyCheck
    ) -> Server:
        """Start a server and wait until it is ready; raise ServerNotReady otherwise."""
        ...

    async def close(self) -> None: ...


class ServerNotReady(Exception):
    """A server did not become ready in time (it was stopped before this is raised)."""


class NodeUnreachable(Exception):
    """The node could not be reached (connection refused, timed out, host key refused)."""
