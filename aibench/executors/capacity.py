"""What the controller can hold at once: how many invocations may run together when the
inventory sets no ``max_parallel``.

A round's pairs share no node, so they never contend with each other: by default a round
runs whole. What limits it is the controller itself, on two counts:

* **open files**: every running process of an invocation keeps its stdout and stderr logs
  open (two processes for a pair: the server and the client, so four files), and every
  node reached over SSH keeps one pooled connection (one socket) for the whole run.
  :func:`raise_open_files` lifts the soft ``RLIMIT_NOFILE`` to the hard limit (as far as
  an unprivileged process may) before a run; :func:`capacity` plans with that hard limit.
* **memory**: what one running invocation holds on the controller (two SSH sessions, their
  streams and log writers, the task that waits on them), :data:`BYTES_PER_INVOCATION`, as
  ``bench/fleet.py`` measured it against a simulated fleet of 1024 SSH hosts, against half
  of the memory available when the plan is made.

The smaller of the two is the default ``max_parallel``; :attr:`Capacity.bound` says which.
"""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass

# the stdout and stderr logs of a server and of a client
FILES_PER_INVOCATION = 4
# the interpreter's own files, the journal, the run directory's other files, stdio
FILES_RESERVED = 64
# what a running pair holds on the controller: bench/fleet.py measured 39 MiB more at 1024
# concurrent SSH sessions (512 pairs) than with one pair, about 80 KB a pair; taken with a
# margin of three
BYTES_PER_INVOCATION = 256 * 1024
# a limit reported as unlimited is planned as this many files
UNLIMITED_FILES = 1 << 20


@dataclass(frozen=True)
class Capacity:
    """How many invocations the controller holds at once, and why."""

    invocations: int
    open_files: int  # the open-file limit a run can raise itself to
    memory: int  # bytes available to the run
    bound: str  # "open files" or "memory": what set ``invocations``

    def describe(self) -> str:
        return (
            f"{self.invocations} invocation(s) at once, set by {self.bound} "
            f"({self.open_files} open files allowed, {self.memory // (1 << 20)} MiB available)"
        )


def _finite(n: int) -> int:
    return UNLIMITED_FILES if n == resource.RLIM_INFINITY or n < 0 else n


def open_files_limits() -> tuple[int, int]:
    """The soft and hard ``RLIMIT_NOFILE`` of this process (unlimited as a large number)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _finite(soft), _finite(hard)


def raise_open_files() -> tuple[int, int]:
    """Raise the soft open-file limit to the hard one; the limits (before, after). A
    system that refuses leaves it as it was (after == before)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        return _finite(soft), _finite(soft)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        return _finite(soft), _finite(soft)
    return _finite(soft), _finite(hard)


def available_memory() -> int:
    """MemAvailable of /proc/meminfo in bytes, else the physical memory."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 1 << 30


def capacity(hosts: int, open_files: int | None = None, memory: int | None = None) -> Capacity:
    """How many invocations of pairs over ``hosts`` nodes the controller holds at once,
    with the open-file limit raised as far as allowed (``open_files``, ``memory``: given
    instead of read, for tests)."""
    files = open_files if open_files is not None else open_files_limits()[1]
    mem = memory if memory is not None else available_memory()
    by_files = max(1, (files - FILES_RESERVED - hosts) // FILES_PER_INVOCATION)
    by_memory = max(1, mem // 2 // BYTES_PER_INVOCATION)
    if by_files <= by_memory:
        return Capacity(by_files, files, mem, "open files")
    return Capacity(by_memory, files, mem, "memory")
