"""The Slurm executor on the bed's 4-node Slurm cluster (slurmd in each namespace host)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aibench.executors.base import Command, ReadyCheck
from aibench.executors.slurm import SlurmExecutor, batch_script, expand_nodelist
from aibench.inventory import Inventory
from aibench.inventory_file import load_inventory
from tests.testbed import net
from tests.testbed.bed import TestBed
from tests.testbed.slurm import SlurmCluster

pytestmark = [pytest.mark.netns, pytest.mark.slurm]


@pytest.fixture(scope="module")
def inventory(
    testbed_hosts: TestBed, testbed_slurm: SlurmCluster, tmp_path_factory: pytest.TempPathFactory
) -> Inventory:
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    return load_inventory(testbed_hosts.write_inventory(path, executor="slurm"))


def _job_states(cluster: SlurmCluster) -> str:
    r = subprocess.run(
        ["squeue", "-h", "-o", "%i %T"],
        capture_output=True,
        text=True,
        env=cluster.env,
        check=False,
    )
    return r.stdout.strip()


def test_srun_on_chosen_nodes_returns_their_hostnames(
    testbed_slurm: SlurmCluster, inventory: Inventory, tmp_path: Path
) -> None:
    async def main() -> tuple[list[str], list[str], str | None]:
        ex = SlurmExecutor(inventory, env=testbed_slurm.env)
        try:
            one = await ex.run(
                inventory.node("abt-h3"),
                Command(("hostname",)),
                tmp_path / "1.out",
                tmp_path / "1.err",
            )
            assert one.exit_code == 0, (tmp_path / "1.err").read_text()
            two = await ex.run_on(
                ["abt-h2", "abt-h4"], Command(("hostname",)), tmp_path / "2.out", tmp_path / "2.err"
            )
            assert two.exit_code == 0, (tmp_path / "2.err").read_text()
            jobid = ex.jobid
            assert jobid is not None
            assert ex._own_job
        finally:
            await ex.close()
        return (
            (tmp_path / "1.out").read_text().split(),
            sorted((tmp_path / "2.out").read_text().split()),
            jobid,
        )

    one, two, jobid = asyncio.run(main())
    assert one == ["abt-h3"]
    assert two == ["abt-h2", "abt-h4"]
    # close() cancelled the allocation it made
    deadline = time.monotonic() + 10
    while jobid in _job_states(testbed_slurm).split() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert f"{jobid} RUNNING" not in _job_states(testbed_slurm)


def test_env_cwd_exit_code_and_check(
    testbed_slurm: SlurmCluster, inventory: Inventory, tmp_path: Path
) -> None:
    from dataclasses import replace

    async def main() -> tuple[int | None, str, str | None, str | None]:
        ex = SlurmExecutor(inventory, env=testbed_slurm.env)
        try:
            res = await ex.run(
                inventory.node("abt-h1"),
                Command(
                    ("sh", "-c", 'echo "$AB_V $(pwd)"; exit 3'), env={"AB_V": "a b;c"}, cwd="/usr"
                ),
                tmp_path / "o",
                tmp_path / "e",
            )
            ok = await ex.check(inventory.node("abt-h2"))
            ghost = replace(inventory.node("abt-h2"), name="abt-h9")
            bad = await ex.check(ghost)
        finally:
            await ex.close()
        return res.exit_code, (tmp_path / "o").read_text(), ok, bad

    code, out, ok, bad = asyncio.run(main())
    assert code == 3
    assert out == "a b;c /usr\n"
    assert ok is None
    assert bad is not None
    assert bad.startswith("abt-h9: not in Slurm allocation")


def test_timeout_kills_srun_and_cancels_the_step(
    testbed_hosts: TestBed, testbed_slurm: SlurmCluster, inventory: Inventory, tmp_path: Path
) -> None:
    async def main() -> object:
        ex = SlurmExecutor(inventory, env=testbed_slurm.env, kill_grace=2.0)
        try:
            return await ex.run(
                inventory.node("abt-h2"),
                Command(("sh", "-c", "echo started; sleep 300"), timeout=2.0),
                tmp_path / "o",
                tmp_path / "e",
            )
        finally:
            await ex.close()

    res = asyncio.run(main())
    assert res.timed_out
    assert res.exit_code is None
    assert (tmp_path / "o").read_text() == "started\n"
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        left = [p for p in testbed_hosts.pids("abt-h2") if net.comm(p) == "sleep"]
        if not left:
            break
        time.sleep(0.2)
    assert left == []


def test_server_step_and_client_step(
    testbed_slurm: SlurmCluster, inventory: Inventory, tmp_path: Path
) -> None:
    async def main() -> tuple[int | None, str]:
        ex = SlurmExecutor(inventory, env=testbed_slurm.env, kill_grace=1.0)
        try:
            srv = await ex.start(
                inventory.node("abt-h4"),
                Command(("iperf3", "-s", "-1", "-p", "15301", "--forceflush")),
                tmp_path / "s.out",
                tmp_path / "s.err",
                ReadyCheck(pattern="Server listening on 15301", timeout=15),
            )
            res = await ex.run(
                inventory.node("abt-h1"),
                Command(("iperf3", "-c", "10.213.7.4", "-p", "15301", "-t", "1", "-J")),
                tmp_path / "c.out",
                tmp_path / "c.err",
            )
            await srv.stop()
        finally:
            await ex.close()
        return res.exit_code, (tmp_path / "c.out").read_text()

    code, out = asyncio.run(main())
    assert code == 0
    assert json.loads(out)["end"]["sum_received"]["bits_per_second"] > 1e8


def test_inside_an_allocation_uses_its_nodes(
    testbed_slurm: SlurmCluster, inventory: Inventory, tmp_path: Path
) -> None:
    """aibench started under salloc: SLURM_JOB_ID / SLURM_JOB_NODELIST are used, not salloc'd."""
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from aibench.executors.slurm import SlurmExecutor\n"
        "from aibench.executors.base import Command\n"
        "from aibench.inventory_file import load_inventory\n"
        "inv = load_inventory(sys.argv[1])\n"
        "async def main():\n"
        "    ex = SlurmExecutor(inv)\n"
        "    r = await ex.run_on(ex._nodes or (await ex._ensure_allocation()) or ex._nodes,"
        " Command(('hostname',)), Path(sys.argv[2]), Path(sys.argv[3]))\n"
        "    print(ex.jobid, ex._own_job, ','.join(ex._nodes), r.exit_code)\n"
        "    await ex.close()\n"
        "asyncio.run(main())\n"
    )
    r = subprocess.run(
        ["salloc", "-N2", "--nodelist=abt-h1,abt-h2", sys.executable, "-c", code,
         inventory.source, str(tmp_path / "o"), str(tmp_path / "e")],
        capture_output=True, text=True, env=testbed_slurm.env, timeout=60, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    jobid, own, nodes, rc = r.stdout.split()
    assert jobid.isdigit()
    assert own == "False"
    assert nodes == "abt-h1,abt-h2"
    assert rc == "0"
    assert sorted((tmp_path / "o").read_text().split()) == ["abt-h1", "abt-h2"]


def test_expand_nodelist(testbed_slurm: SlurmCluster) -> None:
    assert expand_nodelist("abt-h[1-3]", testbed_slurm.env) == ["abt-h1", "abt-h2", "abt-h3"]


def test_batch_script_quotes_and_runs_under_sbatch(
    testbed_slurm: SlurmCluster, tmp_path: Path
) -> None:
    # the job runs on a bed host, whose /tmp is private: write the output beside the state
    out = testbed_slurm.root / "job-argv.out"
    script = batch_script(
        tmp_path / "job.sh",
        suite="it's $(odd)",
        inventory=str(tmp_path / "inv; rm.yaml"),
        nodes=1,
        partition="debug",
        time_min=5,
        output=str(out),
        # stand in for the aibench command: print the argv it receives
        aibench=(sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))"),
    )
    text = script.read_text()
    assert "#SBATCH --nodes=1" in text
    assert "#SBATCH --partition=debug" in text
    r = subprocess.run(
        ["sbatch", "--parsable", str(script)],
        capture_output=True, text=True, env=testbed_slurm.env, timeout=60, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    job = r.stdout.strip().split(";")[0]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # sbatch --wait polls too slowly for a test
        show = subprocess.run(
            ["scontrol", "show", "job", job, "-o"],
            capture_output=True, text=True, env=testbed_slurm.env, check=False,
        )  # fmt: skip
        if "JobState=COMPLETED" in show.stdout or "JobState=FAILED" in show.stdout:
            break
        time.sleep(0.1)
    assert "JobState=COMPLETED" in show.stdout, show.stdout
    argv = json.loads(out.read_text().strip().splitlines()[-1])
    assert argv == ["run", "--suite", "it's $(odd)", "--inventory", str(tmp_path / "inv; rm.yaml")]


def test_batch_script_refuses_odd_directive_values(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="invalid sbatch value"):
        batch_script(tmp_path / "j.sh", suite="s", inventory="i", partition="debug --x")
