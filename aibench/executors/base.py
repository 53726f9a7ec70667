"""The executor contract: run an argv on a host, or start a server there and stop it.

Executors run; they do not plan (STYLE.md principle 6). A :class:`Command` is an argv
list, never a shell string: an executor that must cross a shell (SSH) quotes every
argument itself. stdout and stderr go to files *as they arrive*, so an interrupted run
keeps what it measured.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aibench.inventory import Node

# Environment variable names whose values are never written to logs, run.json or reports.
SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW|PASSWD|PASSWORD|API_KEY|APIKEY|CREDENTIAL|PRIVATE)", re.I
)
REDACTED = "***"


def is_secret(name: str, marked: Iterable[str] = ()) -> bool:
    """A secret variable: its name looks secret, or the suite marks it
    (``settings.secret_env``)."""
    return bool(SECRET_NAME.search(name)) or name in set(marked)


def redact_env(env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """``env`` with the values of secret-looking names, and of ``marked`` ones, as ***."""
    names = set(marked)
    return {k: (REDACTED if is_secret(k, names) else v) for k, v in env.items()}


def secret_values(envs: Iterable[Mapping[str, str]], marked: Iterable[str] = ()) -> list[str]:
    """The values of the secret variables of ``envs``: a secret-looking name, or one the
    suite marks (``settings.secret_env``). Values under 4 characters are not scrubbed
    (they would blank ordinary output); the longest first, so that one holding another
    is replaced whole."""
    names = set(marked)
    found = {v for env in envs for k, v in env.items() if is_secret(k, names)}
    return sorted((v for v in found if len(v) >= 4), key=len, reverse=True)


def scrub(text: str, values: Iterable[str]) -> str:
    for v in values:
        text = text.replace(v, REDACTED)
    return text


def scrub_files(paths: Iterable[Path], values: Sequence[str]) -> None:
    """Replace every secret value in these (raw output) files by ``***``."""
    if not values:
        return
    needles = [v.encode() for v in values]
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        clean = data
        for n in needles:
            clean = clean.replace(n, REDACTED.encode())
        if clean != data:
            p.write_bytes(clean)


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
    role: str = "work"  # one of ROLES
    marked: tuple[str, ...] = ()  # variables the suite marks secret (settings.secret_env)
    hosts: tuple[str, ...] = ()  # role "launch": the nodes the launcher starts ranks on
    shm_size: str | None = None  # the suite's /dev/shm size (settings.shm_size), if any

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))
        if not self.argv or not all(isinstance(a, str) for a in self.argv):
            raise TypeError(f"argv must be a non-empty sequence of str, got {self.argv!r}")
        if self.role not in ROLES:
            raise ValueError(f"unknown command role {self.role!r}; valid: {', '.join(ROLES)}")
        object.__setattr__(self, "marked", tuple(self.marked))
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
