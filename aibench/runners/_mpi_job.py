"""An MPI benchmark started across a group of nodes (IOR, mdtest): the options and the
launch they share.

One job per placement group: ``mpirun`` (Open MPI; the hosts' addresses with their
slots, ``-x`` for every variable of ``env``, ``plm_rsh_agent`` with the inventory's
``ssh.config_file``) or ``srun`` (Slurm node names, ``--ntasks-per-node``), as the
nccl-tests runner starts its binaries (:mod:`aibench.launchers`). ``launcher: auto`` runs
one rank on one node directly and everything else under ``mpirun``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Literal

from pydantic import Field

from aibench.errors import ParseError, ToolFailure, UserError
from aibench.inventory import Node
from aibench.launchers import get
from aibench.model import Fact
from aibench.parsers import Record
from aibench.parsers import parse as parse_tool
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.runners.nccl_tests import launch_hosts, launched_job


class MpiJobOptions(checks.MpiLaunchOptions):
    """How the job is launched (the fields every MPI storage benchmark shares)."""

    ranks_per_node: Annotated[int, Field(ge=1, le=4096)] = Field(
        1, description="MPI ranks (IOR/mdtest tasks) on each node"
    )
    launcher: Literal["auto", "none", "mpirun", "srun"] = Field(
        "auto", description="auto: direct for one rank on one node, else mpirun"
    )
    bin_dir: str | None = Field(None, description="directory of the binary; default facts, PATH")
    env: dict[str, str] = Field(default_factory=dict, description="variables for every rank")
    extra: list[str] = Field(default_factory=list, description="more options of the tool")
    timeout: Annotated[float, Field(gt=0)] = Field(3600.0, description="seconds per run")


def client(
    step: str, tool: str, o: MpiJobOptions, group: Sequence[Node], program: tuple[str, ...]
) -> ProcessSpec:
    """The process that runs ``program`` as ``ranks_per_node`` ranks on every node."""
    head = group[0]
    which = o.launcher
    if which == "auto":
        which = "none" if len(group) == 1 and o.ranks_per_node == 1 else "mpirun"
    if len(group) > 1 and head.executor == "slurm":
        raise UserError(
            f"step {step}: {tool} over {len(group)} nodes cannot be launched from inside a "
            f"Slurm job step on {head.name} (a launcher there sees only the step's node)",
            hint="run aibench on the login node with these nodes as executor: local and "
            "launcher: srun (or mpirun over ssh)",
        )
    if which == "none":
        if len(group) > 1 or o.ranks_per_node > 1:
            raise UserError(
                f"step {step}: {tool} with {len(group)} nodes x {o.ranks_per_node} ranks "
                "needs a launcher",
                hint="set launcher: mpirun or srun (or auto)",
            )
        return ProcessSpec(head.name, program, env=dict(o.env), timeout=o.timeout)
    hosts = launch_hosts(which, group, o.ranks_per_node)
    job = launched_job(o, group, hosts, program, dict(o.env))
    launch = get(which).wrap(job)
    return ProcessSpec(
        head.name, launch.argv, env=dict(launch.env), role="launcher", timeout=o.timeout
    )


def invocation(
    step: str,
    tool: str,
    options: MpiJobOptions,
    group: Sequence[Node],
    slot: Slot,
    path: str,
    program: tuple[str, ...],
) -> Invocation:
    """The one job of a placement group: the parent of ``path`` made first on the first
    node, then ``program`` launched across the group (:func:`client`)."""
    names = tuple(n.name for n in group)
    parent = path.rsplit("/", 1)[0] or "/"
    mkdir = ProcessSpec(group[0].name, ("mkdir", "-p", parent), role="setup", timeout=60)
    return Invocation(
        step=step,
        tool=tool,
        nodes=names,
        label=label_for(names),
        repeat=slot.repeat,
        round=slot.round,
        parser=tool,
        network=True,
        setup=(mkdir,),
        client=client(step, tool, options, group, program),
    )


def collect_output(tool: str, version: re.Pattern[str], out: Output) -> list[Record]:
    """The ``tool`` parser's records of a run's output, and its version as a Fact (the
    tools print it in their output: there is no ``--version``). A run that exited non-zero
    is the step's failure, with what it measured as ``partial``."""
    try:
        records = list(parse_tool(tool, out.stdout + "\n" + out.stderr))
    except ParseError:
        if out.exit_code != 0:  # it crashed or never started: say so, not "unreadable"
            raise ToolFailure(tool, out.failure()) from None
        raise
    if out.exit_code != 0:
        raise ToolFailure(tool, out.failure(), partial=list(records))
    m = version.search(out.stdout)
    why = "" if m else "no version in the output"
    records.append(Fact(tool, "version", m.group(1) if m else None, reason=why))
    return records
