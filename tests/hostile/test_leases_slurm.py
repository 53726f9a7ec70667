"""Under Slurm, a killed aibench leaves neither its allocation nor its job steps: the
keeper cancels the allocation aibench made, and the allocation's time limit is the
plan's estimate with a margin. Before: srun and the salloc allocation outlived a
``kill -9`` of aibench until the time limit, which was always 60 minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.hostile.tiny import wait_for
from tests.testbed.bed import TestBed
from tests.testbed.slurm import SlurmCluster

pytestmark = [pytest.mark.netns, pytest.mark.slurm]

PROGRAM = textwrap.dedent(
    """
    import asyncio, sys
    from pathlib import Path
    from aibench.executors.base import Command
    from aibench.executors.slurm import SlurmExecutor
    from aibench.inventory_file import load_inventory

    inventory = load_inventory(sys.argv[1])
    out = Path(sys.argv[2])
    async def main() -> None:
        ex = SlurmExecutor(inventory)
        ex.planned_seconds = 600.0  # the plan's estimate: 10 minutes
        cmd = Command(("sleep", "300"), timeout=600)
        await ex.run(inventory.node("abt-h2"), cmd, out / "sleep.out", out / "sleep.err")
    asyncio.run(main())
    """
)


def squeue(cluster: SlurmCluster, *args: str) -> str:
    r = subprocess.run(
        ["squeue", "-h", *args], capture_output=True, text=True, env=cluster.env, check=False
    )
    return r.stdout.strip()


def test_a_killed_aibench_leaves_no_allocation_and_no_step(
    testbed_hosts: TestBed, testbed_slurm: SlurmCluster, tmp_path: Path
) -> None:
    inventory = testbed_hosts.write_inventory(tmp_path / "inventory.yaml", executor="slurm")
    env = {**testbed_slurm.env, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, str(inventory), str(tmp_path)],
        env=env,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        text=True,
    )
    try:
        wait_for(lambda: "sleep" in squeue(testbed_slurm, "-s", "-o", "%i %j"), None, 120)
        jobs = squeue(testbed_slurm, "-o", "%i %j %l").splitlines()
        (job,) = [line.split() for line in jobs if " aibench " in f" {line} "]
        assert job[2] == "30:00", job  # 10 min planned x 1.5 + 15
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 60
        while job[0] in squeue(testbed_slurm, "-o", "%i").split() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert job[0] not in squeue(testbed_slurm, "-o", "%i").split(), "the allocation survived"
        assert "sleep" not in squeue(testbed_slurm, "-s", "-o", "%i %j")
    finally:
        if proc.poll() is None:
            proc.kill()
