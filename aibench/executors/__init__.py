"""Executors: local (subprocess), ssh (asyncssh), slurm (srun). Chosen by the inventory."""

from __future__ import annotations

from aibench.executors.base import (
    Command,
    Executor,
    NodeUnreachable,
    ProcResult,
    ReadyCheck,
    Server,
    ServerNotReady,
)

__all__ = [
    "Command",
    "Executor",
    "NodeUnreachable",
    "ProcResult",
    "ReadyCheck",
    "Server",
    "ServerNotReady",
]
