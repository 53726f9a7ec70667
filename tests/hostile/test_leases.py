"""Nothing aibench starts outlives it.

Before: PR_SET_PDEATHSIG reached the direct child only, so a runner driven through
``sh -c`` left the shell's workers running after ``kill -9`` of aibench; srun had no
lease at all, and the Slurm allocation aibench made lived to its time limit, which was
always 60 minutes unless the inventory said otherwise.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aibench.executors.slurm import DEFAULT_TIME_MIN, time_limit_min
from aibench.inventory import SlurmSettings
from tests.hostile.tiny import alive, wait_for

# aibench's executor running a shell whose two workers are grandchildren of aibench
PROGRAM = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from aibench.executors.base import Command
    from aibench.executors.local import LocalExecutor

    script = "sleep 300 & echo $! >> {pids}; sleep 300 & echo $! >> {pids}; wait"
    async def main() -> None:
        cmd = Command(("sh", "-c", script), timeout=600)
        await LocalExecutor().run(None, cmd, Path(sys.argv[1]), Path(sys.argv[2]))
    asyncio.run(main())
    """
)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_aibench_leaves_no_local_grandchildren(tmp_path: Path, sig: int) -> None:
    pids = tmp_path / "pids"
    program = PROGRAM.format(pids=pids)
    proc = subprocess.Popen(
        [sys.executable, "-c", program, str(tmp_path / "out"), str(tmp_path / "err")]
    )
    workers: list[int] = []
    try:
        wait_for(lambda: pids.exists() and len(pids.read_text().split()) == 2, None, 60)
        workers = [int(x) for x in pids.read_text().split()]
        assert all(alive(p) for p in workers)
        time.sleep(0.5)  # aibench's side of the start is done (the shell was quicker)
        proc.send_signal(sig)
        proc.wait(60)
        deadline = time.monotonic() + 30
        while any(alive(p) for p in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in workers if alive(p)], "a worker outlived aibench"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in workers:
            if alive(p):
                os.kill(p, signal.SIGKILL)


def test_the_allocation_time_limit_comes_from_the_plan() -> None:
    assert time_limit_min(SlurmSettings(), None) == DEFAULT_TIME_MIN
    assert time_limit_min(SlurmSettings(), 600) == 15 + 15  # 10 min planned: 30
    assert time_limit_min(SlurmSettings(), 4 * 3600) == 6 * 60 + 15  # 4 h: 6 h 15
    assert time_limit_min(SlurmSettings(time_limit_min=45), 4 * 3600) == 45  # the inventory's
