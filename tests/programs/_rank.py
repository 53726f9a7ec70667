"""Which rank a replay program is, and where it runs: shared by the replay programs of
launched tools (IOR/mdtest, nccl-tests, hccl_test).

Those programs are started as ``python3 path/to/<tool>_replay.py``, so this folder is the
first entry of ``sys.path`` and they read this module with a plain ``import _rank``.
"""

from __future__ import annotations

import os
import socket


def rank_and_size() -> tuple[int, int]:
    """(rank, size) from Open MPI's or Slurm's environment; (0, 1) when run alone."""
    for r, n in (
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
    ):
        if r in os.environ and n in os.environ:
            return int(os.environ[r]), int(os.environ[n])
    return 0, 1


def netns() -> str:
    """The network namespace of this process (the host name where it cannot be read)."""
    try:
        return os.readlink("/proc/self/ns/net").removeprefix("net:")
    except OSError:
        return socket.gethostname()
