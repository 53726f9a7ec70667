"""NCCL-tests runner: one collective benchmark binary (``all_reduce_perf`` ...) per step.

Builds ``BIN_DIR/<collective>_perf -b MIN -e MAX -f FACTOR|-i STEP -n ITERS -w WARMUP
-c CHECK -g GPUS [-d TYPE] [-o OP] [-z 0|1] [-a 0..3] [-J FILE]`` and runs it:

* directly, for one node with one process (``-g`` GPUs in that process);
* through a launcher of :mod:`aibench.launchers` otherwise: ``mpirun`` (Open MPI; the
  hosts' addresses with their slots, ``-x`` for every variable of ``env``, binding,
  ``--mca`` interface settings, ``plm_rsh_agent`` with the inventory's ``ssh.config_file``)
  or ``srun --mpi=pmix`` (Slurm node names, ``--ntasks-per-node``, ``--gpus-per-task``,
  ``--gpu-bind``). On one node mpirun is given ``--host localhost:K``: it runs on that
  node itself. The launcher runs where the group's first node's executor puts it: on
  this machine for ``executor: local`` (a login node, the usual place for srun), over
  ssh on that node for ``executor: ssh``. Not from inside a Slurm job step
  (``executor: slurm``): srun there sees only the step's one node ("Only allocated 1
  nodes asked for 2", tried with Slurm 22.05), so a multi-node group on such nodes is a
  UserError with a hint.

Ranks per node default to the node's GPU count (``gpus.count`` in the inventory) divided
by ``gpus_per_process``: one process per GPU unless told otherwise. The environment
(``NCCL_DEBUG``, ``NCCL_ALGO``, ``NCCL_IB_HCA``, ``NCCL_SOCKET_IFNAME`` ... from options,
plus ``env``) is passed explicitly and recorded with the argv.

The binary is found in the option ``bin_dir``, else the node's ``tool_dirs: {nccl-tests:
DIR}`` (``nccl_tests_dir`` in older inventories), else on the PATH. The version is read
from the output's ``# nccl-tests version X`` header (nccl-tests 2.17 and later), which is
the only reliable source: the binaries have no ``--version``. ``-J FILE`` (JSON output,
nccl-tests 2.17.7 and later) is used only when the option ``json_output`` says so; the
file is then read instead of stdout when it can be read from here (a local node or a
shared file system), else stdout is parsed.

``-J`` stays opt-in rather than switched on "when the binary supports it": the version is
known only from the header of a run's own output (there is no ``--version``), so support
could be learnt only after the run it should have changed; the text log is printed by
every version and carries every number that is judged (the parser is tested on real logs
from before 2.13 to 2.18, the JSON reader only on files built from nccl-tests' source, as
no real ``-J`` file has been captured yet); and a JSON file on a remote node without a
shared file system could not be read back anyway. A site on 2.17.7 or later with a
shared ``workdir`` turns it on to keep the richer file.

Output is parsed by the ``nccl-tests`` parser in ``collect``, which adds the ``op`` dim
that logs before 2.17 do not carry and a ``version`` Fact. Placements: ``each`` (intra-
node, the default), ``all``, ``pairs`` (to find the bad node), ``groups``.

Tested without GPUs: the binaries replaced by a replay of real nccl-tests 2.17.8 output,
launched by Open MPI 4.1.4 ``mpirun`` (local ranks, and over ssh across hosts) and by
Slurm 22.05.8 ``srun --mpi=pmix``; the options are those of nccl-tests 2.17.
"""

from __future__ import annotations

import json as jsonlib
import os
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from aibench import parsers
from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure, UserError
from aibench.inventory import Node
from aibench.launchers import HostSlots, Job, get
from aibench.model import Fact, FrozenDims, Measurement, Note
from aibench.parsers import Record
from aibench.parsers._nccl_table import COLLECTIVES, RCCL_ONLY
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.traits import PairSeries, Traits

TOOL = "nccl-tests"
_VERSION = re.compile(r"^#\s*nccl-tests version (\S+)", re.M)


class NcclTestsOptions(checks.MpiLaunchOptions):
    """Options of an nccl-tests step (suite ``options:``)."""

    # the collectives this tool's binaries exist for (a subclass widens it: rccl-tests)
    collectives: ClassVar[tuple[str, ...]] = COLLECTIVES
    collective: str = Field(
        "all_reduce",
        description="which binary, <collective>_perf: " + ", ".join(COLLECTIVES),
    )
    min_bytes: str = Field("8", description="smallest message size (-b), e.g. 8, 1M")
    max_bytes: str = Field("8G", description="largest message size (-e)")
    step_factor: Annotated[int, Field(ge=2)] | None = Field(
        2, description="multiply the size by this each step (-f)"
    )
    step_bytes: str | None = Field(None, description="add this to the size each step (-i)")
    iters: Annotated[int, Field(ge=1)] = Field(20, description="timed iterations (-n)")
    warmup_iters: Annotated[int, Field(ge=0)] = Field(5, description="warm-up iterations (-w)")
    check: Annotated[int, Field(ge=0)] = Field(
        1, description="check results (-c): 0 off, N every N"
    )
    gpus_per_process: Annotated[int, Field(ge=1, le=64)] = Field(
        1, description="GPUs driven by each process (-g)"
    )
    ranks_per_node: Annotated[int, Field(ge=1, le=1024)] | None = Field(
        None, description="processes per node; default: the node's GPU count / gpus_per_process"
    )
    datatype: str | None = Field(None, description="-d: float, half, bfloat16, int8 ... or all")
    op: str | None = Field(None, description="-o: sum, prod, min, max, avg or all")
    blocking: bool | None = Field(None, description="-z: blocking collectives")
    average: Annotated[int, Field(ge=0, le=3)] | None = Field(
        None, description="-a: how results are aggregated over ranks (0 rank0, 1 avg, 2 min, 3 max)"
    )
    json_output: bool = Field(
        False,
        description="also write JSON (-J FILE; nccl-tests 2.17.7 and later), read instead "
        "of the text log when this machine can read the file",
    )
    launcher: Literal["auto", "none", "mpirun", "srun"] = Field(
        "auto", description="auto: direct for one process on one node, else mpirun"
    )
    bin_dir: str | None = Field(None, description="directory of the binaries; default facts, PATH")
    nccl_debug: str | None = Field(None, description="NCCL_DEBUG (WARN, INFO ...)")
    nccl_algo: str | None = Field(None, description="NCCL_ALGO (Ring, Tree ...)")
    nccl_proto: str | None = Field(None, description="NCCL_PROTO (LL, LL128, Simple)")
    nccl_ib_hca: str | None = Field(None, description="NCCL_IB_HCA, e.g. =mlx5_0:1,mlx5_1:1")
    nccl_socket_ifname: str | None = Field(None, description="NCCL_SOCKET_IFNAME, e.g. eth0")
    env: dict[str, str] = Field(default_factory=dict, description="more variables for every rank")
    gpus_per_task: Annotated[int, Field(ge=0)] | None = Field(
        None, description="srun --gpus-per-task"
    )
    gpu_bind: str | None = Field(None, description="srun --gpu-bind (closest, none ...)")
    extra: list[str] = Field(default_factory=list, description="more nccl-tests options")
    timeout: Annotated[float, Field(gt=0)] = Field(1800.0, description="seconds per run")

    @field_validator("min_bytes", "max_bytes", "step_bytes", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        return checks.size(v, "an nccl-tests size", "8, 128K, 1M, 8G")

    @field_validator(
        "datatype",
        "op",
        "nccl_debug",
        "nccl_algo",
        "nccl_proto",
        "nccl_ib_hca",
        "nccl_socket_ifname",
        "gpu_bind",
    )
    @classmethod
    def _value(cls, v: str | None) -> str | None:
        return checks.value(v)

    @field_validator("collective")
    @classmethod
    def _collective(cls, v: str) -> str:
        if v not in cls.collectives:
            raise ValueError(f"unknown collective {v!r}; valid: {', '.join(cls.collectives)}")
        return v

    @model_validator(mode="after")
    def _steps(self) -> NcclTestsOptions:
        if self.step_bytes is not None and self.step_factor not in (None, 2):
            raise ValueError("give step_factor (-f) or step_bytes (-i), not both")
        return self


def binary(o: NcclTestsOptions, node: Node, tool: str = TOOL) -> str:
    """The binary's path: option bin_dir, else the node's ``tool_dirs`` entry of the tool,
    else the PATH."""
    return checks.tool_path(o.bin_dir, node, tool, f"{o.collective}_perf")


def ranks_per_node(o: NcclTestsOptions, node: Node) -> int:
    if o.ranks_per_node is not None:
        return o.ranks_per_node
    gpus = node.facts.get("gpus") or {}
    count = int(gpus.get("count", 0)) if isinstance(gpus, dict) else 0
    return max(1, count // o.gpus_per_process) if count else 1


def ssh_config(node: Node) -> str | None:
    """The inventory's ssh config file as mpirun's ssh must be given it.

    ssh does not expand ``~`` in ``-F`` and Open MPI runs the agent without a shell, so
    ``~/x`` becomes this user's home on a local launch node, and ``x`` (relative to the
    login directory, where an ssh login starts) on a remote one.
    """
    path = node.ssh.config_file
    if not path or not path.startswith("~/"):
        return path
    return os.path.expanduser(path) if node.executor == "local" else path[2:]


def environment(o: NcclTestsOptions) -> dict[str, str]:
    env: dict[str, str] = {}
    named = {
        "NCCL_DEBUG": o.nccl_debug,
        "NCCL_ALGO": o.nccl_algo,
        "NCCL_PROTO": o.nccl_proto,
        "NCCL_IB_HCA": o.nccl_ib_hca,
        "NCCL_SOCKET_IFNAME": o.nccl_socket_ifname,
    }
    env.update({k: v for k, v in named.items() if v is not None})
    env.update(o.env)
    return env


NCCL_TRAITS = Traits(
    units={"busbw": "GB/s", "algbw": "GB/s", "time": "us"},
    lower_is_better=frozenset({"wrong"}),
    pair_series=(PairSeries("busbw"),),
    keep_one={"placement": "out_of_place", "dtype": "float", "redop": "sum"},
    title="NCCL tests (collective bandwidth)",
)


def launch_hosts(which: str, group: Sequence[Node], rpn: int) -> tuple[HostSlots, ...]:
    """The hosts a launcher ``which`` starts ``rpn`` ranks on: Slurm node names for srun;
    the nodes' addresses for mpirun, or localhost for a group of one node."""
    if which == "srun":
        return tuple(HostSlots(n.name, rpn) for n in group)
    if len(group) == 1:
        return (HostSlots("localhost", rpn),)
    return tuple(HostSlots(n.host, rpn) for n in group)


def launched_job(
    o: checks.MpiLaunchOptions,
    group: Sequence[Node],
    hosts: tuple[HostSlots, ...],
    program: tuple[str, ...],
    env: dict[str, str],
    **extra: Any,
) -> Job:
    """The Job of ``program`` across ``group`` with the launch options every launched
    runner's options share (binding, mapping, interfaces, MCA, root, launcher args) and
    the head node's Slurm partition and account; ``extra``: a runner's own (GPU binding)."""
    head = group[0]
    return Job(
        program=program,
        hosts=hosts,
        env=env,
        bind_to=o.bind_to,
        map_by=o.map_by,
        cpu_bind=o.cpu_bind,
        interfaces=o.interfaces,
        btl=o.btl,
        mca=dict(o.mca),
        ssh_config=ssh_config(head) if len(group) > 1 else None,
        as_root=o.allow_run_as_root,
        partition=head.slurm.partition,
        account=head.slurm.account,
        extra_args=tuple(o.launcher_args),
        **extra,
    )


def launched(
    o: NcclTestsOptions,
    group: Sequence[Node],
    rpn: int,
    which: str,
    program: tuple[str, ...],
    env: dict[str, str],
) -> tuple[tuple[str, ...], dict[str, str]]:
    """The argv and environment of ``program`` started by the launcher ``which`` (mpirun,
    srun) with ``rpn`` ranks on every node of the group."""
    hosts = launch_hosts(which, group, rpn)
    job = launched_job(
        o, group, hosts, program, env, gpus_per_task=o.gpus_per_task, gpu_bind=o.gpu_bind
    )
    launch = get(which).wrap(job)
    return launch.argv, dict(launch.env)


def json_setup(head: Node, json_file: str) -> tuple[ProcessSpec, ...]:
    """The setup steps before a run that writes ``json_file`` on the head node: its folder
    made, and a file left there by an earlier run removed."""
    parent = json_file.rsplit("/", 1)[0]
    return (
        ProcessSpec(head.name, ("mkdir", "-p", parent), role="setup", timeout=30),
        # a file left by an earlier run must never be read as this one's
        ProcessSpec(head.name, ("rm", "-f", json_file), role="setup", timeout=30),
    )


class NcclTestsRunner:
    traits: ClassVar[Traits] = NCCL_TRAITS
    name: ClassVar[str] = "nccl-tests"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = NcclTestsOptions
    version_pattern: ClassVar[re.Pattern[str]] = _VERSION

    def program(self, o: NcclTestsOptions, node: Node, json_file: str | None) -> tuple[str, ...]:
        args = [binary(o, node, self.name), "-b", o.min_bytes, "-e", o.max_bytes]
        if o.step_bytes is not None:
            args += ["-i", o.step_bytes]
        else:
            args += ["-f", str(o.step_factor or 2)]
        args += ["-n", str(o.iters), "-w", str(o.warmup_iters), "-c", str(o.check)]
        args += ["-g", str(o.gpus_per_process)]
        if o.datatype:
            args += ["-d", o.datatype]
        if o.op:
            args += ["-o", o.op]
        if o.blocking is not None:
            args += ["-z", str(int(o.blocking))]
        if o.average is not None:
            args += ["-a", str(o.average)]
        if json_file:
            args += ["-J", json_file]
        args += o.extra
        return tuple(args)

    def launcher_for(self, o: NcclTestsOptions, group: Sequence[Node], rpn: int) -> str:
        if o.launcher != "auto":
            return o.launcher
        return "none" if len(group) == 1 and rpn == 1 else "mpirun"

    def launch(
        self,
        step: str,
        o: NcclTestsOptions,
        group: Sequence[Node],
        rpn: int,
        which: str,
        program: tuple[str, ...],
        env: dict[str, str],
    ) -> tuple[tuple[str, ...], dict[str, str]]:
        """The argv and environment that start ``program`` on the group: by the launcher
        ``which``, or the program itself on one node (``none``); a group that no launcher
        can reach from where it would run is a user error."""
        head = group[0]
        if len(group) > 1 and head.executor == "slurm":
            raise UserError(
                f"step {step}: {self.name} over {len(group)} nodes cannot be launched from "
                f"inside a Slurm job step on {head.name} (a launcher there sees only the "
                "step's own node)",
                hint="run aibench on the login node with these nodes as executor: local "
                "and launcher: srun (or mpirun over ssh)",
            )
        if which == "none":
            if len(group) > 1:
                raise UserError(
                    f"step {step}: {self.name} across {len(group)} nodes needs a launcher",
                    hint="set launcher: mpirun or srun (or auto)",
                )
            return program, env
        return launched(o, group, rpn, which, program, env)

    def invocations(
        self, step: str, options: NcclTestsOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        head = group[0]
        names = tuple(n.name for n in group)
        label = label_for(names)
        rpn = ranks_per_node(o, head)
        json_file = None
        if o.json_output:
            json_file = f"{slot.workdir}/nccl-tests/{step}.{label}.r{slot.repeat}.json"
        program = self.program(o, head, json_file)
        env = environment(o)
        which = self.launcher_for(o, group, rpn)
        argv, launch_env = self.launch(step, o, group, rpn, which, program, env)
        setup = json_setup(head, json_file) if json_file else ()
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=names,
                label=label,
                repeat=slot.repeat,
                round=slot.round,
                parser=self.name,
                network=len(group) > 1,
                setup=setup,
                client=ProcessSpec(
                    head.name,
                    argv,
                    env=launch_env,
                    role="launcher" if which != "none" else "client",
                    timeout=o.timeout,
                ),
                artifacts=(json_file,) if json_file else (),
            )
        ]

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # no --version; the output's header names it (see collect)

    def parse_version(self, text: str) -> str:
        m = self.version_pattern.search(text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        """Parse the JSON file (when written and readable here) or stdout; add op/version."""
        op = _collective_of(inv)
        text, parser_input = out.stdout, "stdout"
        for artifact in inv.artifacts:
            p = Path(artifact)
            if p.is_absolute() and p.is_file():
                try:
                    jsonlib.loads(p.read_text(encoding="utf-8"))
                except ValueError:
                    continue
                text, parser_input = p.read_text(encoding="utf-8"), str(p)
                break
        try:
            records = _with_op(parsers.parse(self.name, text), op)
        except ToolFailure as exc:
            exc.partial = list(_with_op([r for r in exc.partial if _is_record(r)], op))
            raise
        except ParseError:
            if out.exit_code != 0:  # it crashed or never started: say so, not "unreadable"
                raise ToolFailure(self.tool, out.failure()) from None
            raise
        if out.exit_code != 0:
            raise ToolFailure(self.tool, out.failure(), partial=list(records))
        version = self.parse_version(out.stdout)
        why = "" if version else "no version header"
        records.append(Fact(self.tool, "version", version or None, reason=why))
        if parser_input != "stdout":
            records.append(Fact(self.tool, "output_file", parser_input))
        return records


def _is_record(r: object) -> bool:
    return isinstance(r, Measurement | Fact | Note)


def _collective_of(inv: Invocation) -> str:
    for a in inv.client.argv:
        base = a.rsplit("/", 1)[-1]
        if base.endswith("_perf") and base[: -len("_perf")] in (*COLLECTIVES, *RCCL_ONLY):
            return base[: -len("_perf")]
    return ""


def _with_op(records: Sequence[object], op: str) -> list[Record]:
    out: list[Record] = []
    for r in records:
        if isinstance(r, Measurement) and op and "op" not in r.dims:
            r = replace(r, dims=FrozenDims({**r.dims, "op": op}))
        if isinstance(r, Measurement | Fact | Note):
            out.append(r)
    return out


RUNNER = NcclTestsRunner()
