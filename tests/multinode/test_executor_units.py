"""Executor pieces that need no test bed: remote command quoting, srun argv, selection."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from aibench.executors.base import Command
from aibench.executors.local import LocalExecutor
from aibench.executors.select import for_node, forget
from aibench.executors.slurm import SlurmExecutor, srun_argv
from aibench.executors.ssh import SSHExecutor, remote_command
from aibench.inventory import Inventory, Node, SlurmSettings


def test_remote_command_quotes_every_value() -> None:
    cmd = Command(("echo", "a b", "$(id)", "it's"), env={"X": "1; reboot"}, cwd="/tmp/d ir")
    line = remote_command(cmd)
    assert line.startswith("exec setsid -w sh -c ")
    words = shlex.split(line)
    assert words[-8:] == [
        "aibench",
        "/tmp/d ir",
        "--",
        "X=1; reboot",
        "echo",
        "a b",
        "$(id)",
        "it's",
    ]


def test_remote_command_runs_verbatim_in_a_local_shell() -> None:
    """The exact line the node's shell gets, run by sh here: argv arrives unchanged."""
    hostile = ["a b", "'", '"', "$(echo pwned)", "`id`", ";", "&&", "\\", "\n", "", "-e"]
    py = "import json,sys; print(json.dumps(sys.argv[1:]))"
    line = remote_command(Command(("python3", "-c", py, *hostile), env={"AB": "x y"}))
    r = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True)
    import json

    assert json.loads(r.stdout) == hostile
    assert r.stderr.startswith("AIBENCH-PGID ")


def test_srun_argv_inside_and_outside_an_allocation() -> None:
    s = SlurmSettings(partition="gpu", account="acct", extra_args=("--exclusive",))
    inside = srun_argv(["n1", "n2"], ["hostname"], jobid="42", timeout=90, mpi="pmix", settings=s)
    assert inside == (
        "srun", "--nodelist=n1,n2", "--nodes=2", "--ntasks-per-node=1", "--ntasks=2",
        "--jobid=42", "--overlap", "--mpi=pmix", "--time=3", "--kill-on-bad-exit=1",
        "--exclusive", "--", "hostname",
    )  # fmt: skip
    outside = srun_argv(["n1"], ["true"], ntasks_per_node=2, cwd="/w", settings=s)
    assert "--partition=gpu" in outside
    assert "--account=acct" in outside
    assert "--ntasks=2" in outside
    assert "--chdir=/w" in outside
    assert "--overlap" not in outside
    with pytest.raises(ValueError, match="invalid node name"):
        srun_argv(["-x"], ["true"])
    with pytest.raises(ValueError, match="invalid --mpi"):
        srun_argv(["n1"], ["true"], mpi="pmix;x")
    with pytest.raises(ValueError, match="job id"):
        srun_argv(["n1"], ["true"], jobid="1 2")


def test_for_node_shares_one_executor_per_kind() -> None:
    nodes = (
        Node("a", executor="local"),
        Node("b", executor="ssh"),
        Node("c", executor="ssh"),
        Node("d", executor="slurm"),
    )
    inv = Inventory(name="t", nodes=nodes)
    try:
        assert isinstance(for_node(nodes[0], inv), LocalExecutor)
        ssh = for_node(nodes[1], inv)
        assert isinstance(ssh, SSHExecutor)
        assert for_node(nodes[2], inv) is ssh
        assert isinstance(for_node(nodes[3], inv), SlurmExecutor)
        other = Inventory(name="u", nodes=nodes)
        assert for_node(nodes[1], other) is not ssh
        forget(other)
    finally:
        forget(inv)


def test_for_node_unknown_executor() -> None:
    from aibench.errors import UserError

    with pytest.raises(UserError, match="unknown executor 'k8s'"):
        for_node(Node("a", executor="k8s"))
