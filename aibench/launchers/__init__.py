"""Launchers: wrap one program into a multi-node job (``mpirun``, ``srun``, ``torchrun``).

A launcher plans; it runs nothing. Given a :class:`Job` (the hosts with their slots, the
ranks per node, the environment every rank must see, binding and interface settings)
``wrap(job)`` returns a :class:`Launch`: the exact argv of the launcher process and the
environment to start it with. The program's environment is passed *explicitly* (Open MPI
``-x NAME``, Slurm's default ``--export=ALL`` of the launcher's own environment), so what
the ranks see is what run.json records.

A launcher may also say how to read its own version: ``version_argv()`` (the launcher
process's argv, whose first element the orchestrator replaces with the path a step
actually uses) and ``parse_version(text)``; the version is recorded per node and on every
step the launcher starts.

A module ``aibench/launchers/<name>.py`` defines ``LAUNCHER``; the registry discovers
them (third parties: entry-point group ``aibench.launchers``). ``LAUNCHERS.get("srun")``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from aibench.registry import Registry


@dataclass(frozen=True)
class HostSlots:
    """One host of a job: ``host`` is what the launcher names (an address for mpirun, a
    Slurm node name for srun) and ``slots`` how many ranks it runs."""

    host: str
    slots: int


@dataclass(frozen=True)
class Job:
    """One program run as ``ranks_per_node`` ranks on each of ``hosts``."""

    program: tuple[str, ...]
    hosts: tuple[HostSlots, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # every rank sees these
    bind_to: str | None = None  # mpirun --bind-to (none, core, socket ...)
    map_by: str | None = None  # mpirun --map-by; default ppr:<ranks>:node
    cpu_bind: str | None = None  # srun --cpu-bind
    gpus_per_task: int | None = None  # srun --gpus-per-task
    gpu_bind: str | None = None  # srun --gpu-bind (closest, none, map_gpu:0,1 ...)
    interfaces: str | None = None  # mpirun oob/btl tcp include: a subnet or interface names
    btl: str | None = None  # mpirun --mca btl (self,tcp ...)
    mca: Mapping[str, str] = field(default_factory=dict)  # more --mca name value
    ssh_config: str | None = None  # mpirun plm_rsh_agent "ssh -F FILE"
    as_root: bool = False  # Open MPI refuses root unless told
    partition: str | None = None  # srun -p
    account: str | None = None  # srun -A
    extra_args: tuple[str, ...] = ()  # launcher options appended before the program
    rendezvous_port: int = 29500  # torchrun c10d rendezvous
    job_id: str = "aibench"  # torchrun --rdzv-id

    @property
    def ranks_per_node(self) -> int:
        return self.hosts[0].slots if self.hosts else 0

    @property
    def ranks(self) -> int:
        return sum(h.slots for h in self.hosts)

    def __post_init__(self) -> None:
        object.__setattr__(self, "program", tuple(self.program))
        object.__setattr__(self, "hosts", tuple(self.hosts))
        object.__setattr__(self, "extra_args", tuple(self.extra_args))
        if not self.program:
            raise ValueError("a job needs a program")
        if not self.hosts or any(h.slots < 1 for h in self.hosts):
            raise ValueError("a job needs at least one host with at least one slot")


@dataclass(frozen=True)
class Launch:
    """What to start: ``argv`` with ``env`` on the first host of the job.

    ``others`` are (host, argv) processes that must run at the same time on the other
    hosts (torchrun starts one agent per node); mpirun and srun start every rank
    themselves and have none.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    others: tuple[tuple[str, tuple[str, ...]], ...] = ()


class Launcher(Protocol):
    name: ClassVar[str]

    def wrap(self, job: Job) -> Launch: ...


LAUNCHERS: Registry[Launcher] = Registry(
    "launcher", "aibench.launchers", "LAUNCHER", key=lambda launcher: launcher.name
)


def get(name: str) -> Launcher:
    return LAUNCHERS.get(name)


__all__ = ["LAUNCHERS", "HostSlots", "Job", "Launch", "Launcher", "get"]
