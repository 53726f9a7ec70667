"""The keeper: what ends everything aibench started on this machine once aibench is gone,
however it went (``kill -9`` included).

PR_SET_PDEATHSIG (:mod:`aibench.executors.local`) reaches the direct child only: a
runner driven through ``sh -c`` leaves the shell's workers running when the shell is
killed, and nothing cancels a Slurm allocation whose owner died. So the first process
started here also starts the keeper: a small Python process in a session of its own that
reads, from a pipe only aibench holds, the process groups (``+pg PGID``, ``-pg PGID``)
and the Slurm jobs (``+job ID``, ``-job ID``) that are live. When the pipe closes
(aibench ended: normally, with nothing left live, or killed) it sends SIGTERM to every
live group, ``scancel``\\ s every live job, waits :data:`GRACE_S`, and sends SIGKILL to the
groups. aibench's own ending paths still stop what they started themselves; the keeper
is for the end they never reach.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from typing import IO

GRACE_S = 3.0

KEEPER = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
live = {"pg": set(), "job": set()}
for line in sys.stdin:
    op, _, rest = line.strip().partition(" ")
    kind, _, value = rest.partition(" ")
    if op in ("+", "-") and kind in live and value.isdigit():
        (live[kind].add if op == "+" else live[kind].discard)(value)
def each_group(sig):
    for pg in live["pg"]:
        try:
            os.killpg(int(pg), sig)
        except OSError:
            pass
each_group(signal.SIGTERM)
for job in live["job"]:
    try:
        subprocess.run(["scancel", job], timeout=30, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        pass
if live["pg"]:
    time.sleep(float(sys.argv[1]))
    each_group(signal.SIGKILL)
"""

_lock = threading.Lock()
_keeper: subprocess.Popen[bytes] | None = None


def _pipe() -> IO[bytes] | None:
    """The keeper's stdin, the keeper started on first use (None where it cannot start)."""
    global _keeper
    if _keeper is not None and _keeper.poll() is None:
        return _keeper.stdin
    try:
        _keeper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", KEEPER, str(GRACE_S)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C to aibench's terminal does not reach it
        )
    except OSError:
        return None
    return _keeper.stdin


def start() -> None:
    """Start the keeper now (before the first process it is to watch, so that the
    process is held the moment it exists)."""
    with _lock:
        _pipe()


def _say(line: str) -> None:
    with _lock:
        pipe = _pipe()
        if pipe is None:
            return
        with contextlib.suppress(OSError, ValueError):
            pipe.write(line.encode() + b"\n")
            pipe.flush()


def hold_group(pgid: int) -> None:
    """The process group ``pgid`` (a child started with a session of its own) ends with
    aibench at the latest."""
    _say(f"+ pg {pgid}")


def release_group(pgid: int) -> None:
    """The group ended (its leader was waited for): nothing to end any more."""
    _say(f"- pg {pgid}")


def hold_job(jobid: str) -> None:
    """The Slurm job ``jobid`` (an allocation aibench made) is cancelled when aibench
    ends at the latest."""
    if jobid.isdigit():
        _say(f"+ job {jobid}")


def release_job(jobid: str) -> None:
    if jobid.isdigit():
        _say(f"- job {jobid}")


def keeper_pid() -> int | None:
    """The keeper's process id, when it runs (for tests and diagnostics)."""
    return _keeper.pid if _keeper is not None and _keeper.poll() is None else None


def _forget_after_fork() -> None:
    """A forked child is not aibench: it neither holds the keeper's pipe as its own nor
    starts one of its own on the same object."""
    global _keeper
    _keeper = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)
