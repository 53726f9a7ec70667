"""Executor pieces that need no test bed: remote command quoting, srun argv, selection."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from aibench.executors.base import Command
from aibench.executors.local import LocalExecutor
from aibench.executors.select import for_node, forget
from aibench.executors.slurm import SlurmExecutor, srun_argv
from aibench.executors.ssh import SSHExecutor, env_input, remote_command
from aibench.inventory import Inventory, Node, SlurmSettings


def test_remote_command_quotes_every_value() -> None:
    cmd = Command(("echo", "a b", "$(id)", "it's"), env={"X": "1; reboot"}, cwd="/tmp/d ir")
    line = remote_command(cmd)
    assert line.startswith("exec setsid -w sh -c ")
    words = shlex.split(line)
    assert words[-9:] == [
        "aibench",
        "/tmp/d ir",
        "1",
        "X",  # the name only: the value goes on stdin, never on a command line
        "--",
        "echo",
        "a b",
        "$(id)",
        "it's",
    ]
    assert "reboot" not in line


def test_remote_command_runs_verbatim_in_a_local_shell() -> None:
    """The exact line the node's shell gets, run by sh here: argv arrives unchanged."""
    hostile = ["a b", "'", '"', "$(echo pwned)", "`id`", ";", "&&", "\\", "\n", "", "-e"]
    py = "import json,sys; print(json.dumps(sys.argv[1:]))"
    cmd = Command(("python3", "-c", py, *hostile), env={"AB": "x y"})
    p = subprocess.Popen(
        ["sh", "-c", remote_command(cmd)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdin is not None
    assert p.stdout is not None
    assert p.stderr is not None
    p.stdin.write(env_input(cmd.env).decode())
    p.stdin.flush()  # kept open while the tool runs: the lease
    out = p.stdout.read()
    p.stdin.close()
    assert p.wait(10) == 0
    import json

    assert json.loads(out) == hostile
    assert p.stderr.read().startswith("AIBENCH-PGID ")


def test_env_values_arrive_through_stdin_verbatim() -> None:
    """Values with spaces, quotes, backslashes, escapes and newlines reach the tool as they
    were, and none of them is on the command line ``ps`` shows."""
    env = {
        "A": "p w",
        "B": "back\\slash \\n not a newline",
        "C": "two\nlines\n",
        "D": "",
        "E": "%b \\c",
    }
    py = "import json,os; print(json.dumps({k: os.environ[k] for k in 'ABCDE'}))"
    cmd = Command(("python3", "-c", py), env=env)
    line = remote_command(cmd)
    assert not any(v in line for v in env.values() if v)
    p = subprocess.Popen(
        ["sh", "-c", line], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert p.stdin is not None
    assert p.stdout is not None
    p.stdin.write(env_input(env))
    p.stdin.flush()
    out = p.stdout.read()
    p.stdin.close()
    assert p.wait(10) == 0
    import json

    assert json.loads(out) == env


def test_the_lease_ends_the_tool_when_stdin_closes() -> None:
    """aibench gone (its end of stdin closed): the whole process group is TERMed."""
    import time

    cmd = Command(("sh", "-c", "sleep 300 & sleep 301; wait"))
    p = subprocess.Popen(
        ["sh", "-c", remote_command(cmd)], stdin=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert p.stdin is not None
    assert p.stderr is not None
    pgid = int(p.stderr.readline().split()[1])
    time.sleep(0.5)
    assert _group(pgid)
    p.stdin.close()
    p.wait(10)
    deadline = time.monotonic() + 8
    while _group(pgid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group(pgid)


def _group(pgid: int) -> list[int]:
    import os

    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[2]) == pgid:
                out.append(int(d))
    return out


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
