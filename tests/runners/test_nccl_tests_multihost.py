"""nccl-tests runner across hosts of the test bed (network namespaces, sshd, Slurm).

The binary is the REPLAY of a real captured nccl-tests 2.17.8 log
(tests/programs/nccl_tests_replay.py); the launchers are real: Open MPI's ``mpirun``
starting ranks over ssh in two namespace hosts, and ``srun --mpi=pmix`` on the bed's
4-node Slurm cluster. Every rank reports the network namespace it ran in.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from aibench.model import StepResult, StepStatus
from tests.aibench_cli import aibench, only_run
from tests.runners.helpers import FIXTURES, PROGRAMS, is_root, node, run, suite_of, wrapper
from tests.testbed.bed import TestBed
from tests.testbed.net import SUBNET
from tests.testbed.slurm import SlurmCluster

LOG = FIXTURES / "nccl-tests" / "v2.17.8_2node_2gpu_allreduce_sendrecv_smoke.txt"
REPLAY = PROGRAMS / "nccl_tests_replay.py"

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs openmpi-bin")


@pytest.fixture
def bin_dir() -> Iterator[Path]:
    # Not under /tmp: each slurmd of the bed has a private /tmp.
    d = Path("/var/tmp") / f"aibench-runner-tests-{uuid.uuid4().hex[:8]}"
    wrapper(d, "all_reduce_perf", REPLAY, "--fixture", str(LOG), "--binary", "all_reduce_perf")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def ranks(tmp_path: Path, res: StepResult) -> list[tuple[str, str]]:
    # searched, not read line by line: a rank's line may land behind an unterminated line
    # of the launcher or of another rank in the forwarded stderr
    err = (tmp_path / res.stderr_path).read_text()
    return sorted(re.findall(r"replay rank (\d+/\d+) net (\S+) ", err))


def check_all_reduce(res: StepResult) -> None:
    assert res.status is StepStatus.OK, res.reason
    assert {m.dims["op"] for m in res.measurements} == {"all_reduce"}
    (avg,) = [m for m in res.measurements if m.metric == "avg_busbw"]
    assert avg.value == 43.6076  # the captured log's own footer


def test_mpirun_over_ssh_across_two_namespace_hosts(
    tmp_path: Path, testbed_hosts: TestBed, bin_dir: Path
) -> None:
    h1, h2 = testbed_hosts.hosts[:2]
    cfg = str(testbed_hosts.ssh.config)
    nodes = [node(h.name, h.address, ssh_config=cfg) for h in (h1, h2)]
    options = {
        "launcher": "mpirun",
        "ranks_per_node": 1,
        "bin_dir": str(bin_dir),
        "nccl_debug": "INFO",
        "nccl_socket_ifname": "eth0",
        "interfaces": f"{SUBNET}.0/24",
        "btl": "self,tcp",
        "allow_run_as_root": is_root(),
    }
    (res,) = run(tmp_path, suite_of("nccl-tests", options, placement="all"), nodes)
    check_all_reduce(res)
    argv = res.processes[-1].argv
    assert argv[:5] == ("mpirun", "--host", f"{h1.address}:1,{h2.address}:1", "-np", "2")
    assert ("--mca", "plm_rsh_agent", f"ssh -F {cfg}") == argv[7:10]
    got = ranks(tmp_path, res)
    assert [r for r, _ in got] == ["0/2", "1/2"]
    assert len({ns for _, ns in got}) == 2, "the two ranks ran in two different hosts"
    err = (tmp_path / res.stderr_path).read_text()
    assert err.count("NCCL_DEBUG=INFO") == 2
    # the launcher's version is a fact of the node that ran it
    (version,) = [f for f in res.facts if f.source == "mpirun"]
    assert version.nodes == (h1.name,)
    assert str(version.value).startswith("Open MPI "), version


def test_srun_pmix_on_the_slurm_cluster(
    tmp_path: Path, testbed_slurm: SlurmCluster, bin_dir: Path
) -> None:
    names = testbed_slurm.nodes[:2]
    nodes = [node(n, partition="debug") for n in names]
    options = {
        "launcher": "srun",
        "ranks_per_node": 2,
        "bin_dir": str(bin_dir),
        "nccl_debug": "WARN",
        "env": {"SLURM_CONF": str(testbed_slurm.conf)},
        "timeout": 60,
    }
    (res,) = run(tmp_path, suite_of("nccl-tests", options, placement="all"), nodes)
    check_all_reduce(res)
    argv = res.processes[-1].argv
    assert argv[:9] == (
        "srun",
        "--mpi=pmix",
        "-N",
        "2",
        "--ntasks-per-node",
        "2",
        "--nodelist",
        ",".join(names),
        "-p",
    )
    got = ranks(tmp_path, res)
    assert [r for r, _ in got] == ["0/4", "1/4", "2/4", "3/4"]
    assert len({ns for _, ns in got}) == 2, "two ranks on each of two hosts"
    # srun's version, asked with the step's SLURM_CONF (srun reads it first), is recorded
    (version,) = [f for f in res.facts if f.source == "srun"]
    assert version.name == "version"
    assert version.nodes == (names[0],)
    assert version.value == slurm_version(testbed_slurm), version.reason


def slurm_version(cluster: SlurmCluster) -> str:
    out = subprocess.run(
        ["srun", "--version"], env=cluster.env, capture_output=True, text=True, check=True
    ).stdout
    # "slurm 22.05.8"; Debian's package prints "slurm-wlm 22.05.8"
    assert out.split()[0] in ("slurm", "slurm-wlm"), out
    return "Slurm " + out.split()[1]


SUITE = """\
schema_version: 1
name: nccl-over-ssh
steps:
  - name: nccl-all-reduce-pair
    tool: nccl-tests
    placement: all
    nodes: [abt-h1, abt-h2]
    options:
      launcher: mpirun
      ranks_per_node: 2
      launcher_args: [--oversubscribe]
      bin_dir: {bin}
      nccl_debug: INFO
      interfaces: {subnet}.0/24
      btl: self,tcp
      allow_run_as_root: {root}
"""


def test_cli_over_ssh_mpirun_starts_on_the_first_host_and_reaches_the_second(
    tmp_path: Path, testbed_hosts: TestBed, bin_dir: Path
) -> None:
    """The production path: the SSH executor runs mpirun on abt-h1, which starts the ranks
    over ssh (the inventory's ssh config as plm_rsh_agent) on abt-h1 and abt-h2."""
    inv = testbed_hosts.write_inventory(tmp_path / "inventory.yaml", executor="ssh")
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE.format(bin=bin_dir, subnet=SUBNET, root=str(is_root()).lower()))
    res = aibench(
        "run", "--suite", str(suite), "--inventory", str(inv),
        "--output-dir", str(tmp_path / "runs"), "--quiet",
        timeout=120,
    )  # fmt: skip
    assert res.returncode in (0, 1), res.stderr
    run_dir, run = only_run(tmp_path / "runs")
    (step,) = run.steps
    check_all_reduce(step)
    assert step.processes[-1].host == "abt-h1"
    got = ranks(run_dir, step)
    assert [r for r, _ in got] == ["0/4", "1/4", "2/4", "3/4"]
    assert len({ns for _, ns in got}) == 2
    # mpirun's version, asked over ssh on the node that launched it, is in run.json: in
    # that node's environment and on the step
    mpirun = run.environment["abt-h1"]["tools"]["mpirun"]
    assert mpirun.startswith("Open MPI "), mpirun
    assert [(f.value, f.nodes) for f in step.facts if f.source == "mpirun"] == [
        (mpirun, ("abt-h1",))
    ]
    assert step.tool_version == "2.17.8"  # nccl-tests' own, from its output
