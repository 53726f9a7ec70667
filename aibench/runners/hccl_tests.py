"""hccl_test runner: one HCCL collective benchmark (``all_reduce_test`` ...) per step, via mpirun.

Builds ``BIN_DIR/<collective>_test -p NPUS -b MIN -e MAX -f FACTOR -n ITERS -w WARMUP
-c 0|1 [-d TYPE] [-o OP] [-r ROOT]`` (the options of CANN's HCCL Test tool) and starts it
with Open MPI's ``mpirun`` (the launcher Huawei documents for it; hccl_test gets its rank
and rank count from MPI even on one node): the hosts' addresses with ``-p`` slots each,
``-x`` for every variable of ``env``, ``--mca`` interface settings, ``plm_rsh_agent``
with the inventory's ``ssh.config_file``. On one node mpirun is given ``--host
localhost:P``. The launcher runs where the group's first node's executor puts it (this
machine for ``executor: local``, over ssh on that node for ``executor: ssh``).

``-p`` (NPUs per server, also the ranks per node) defaults to the node's ``gpus.count``
(its NPU count in the inventory), else 8 (an Atlas 800 A2 server). The environment
(``HCCL_BUFFSIZE``, ``HCCL_CONNECT_TIMEOUT``, ``HCCL_SOCKET_IFNAME``,
``HCCL_SOCKET_FAMILY``, ``HCCL_IF_IP`` from options, plus ``env`` for ``ASCEND_*``,
``LD_LIBRARY_PATH`` and the rest) is passed explicitly and recorded with the argv.

The binary is found in the option ``bin_dir``, else the node's ``tool_dirs: {hccl-tests:
DIR}``, else
``/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin`` (where CANN installs it:
``${ASCEND_HOME_PATH}/tools/hccl_test/bin``). hccl_test prints no version; the CANN
version (which ships HCCL) is a preflight fact (``ascend.cann_version``).

Output is parsed by the ``hccl-tests`` parser (:mod:`aibench.parsers.hccl_tests`, which
says where hccl_test's table differs from NCCL-tests'); ``collect`` adds the ``op`` dim
from the binary it ran. Placements: ``each`` (inside a node, the default), ``all``,
``pairs``.

Tested without NPUs: the binary replaced by a replay of Huawei's published
``all_reduce_test`` output, launched by Open MPI 4.1.4 ``mpirun`` locally and over ssh
across the test bed's hosts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench import parsers
from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure, UserError
from aibench.inventory import Node
from aibench.launchers import HostSlots, Job, get
from aibench.model import Fact, FrozenDims, Measurement
from aibench.parsers import Record
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, label_for
from aibench.runners.nccl_tests import ssh_config

TOOL = "hccl-tests"
DEFAULT_BIN_DIR = "/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin"
COLLECTIVES = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "alltoallv",
    "broadcast",
    "reduce",
)
Collective = Literal[
    "all_reduce", "all_gather", "reduce_scatter", "alltoall", "alltoallv", "broadcast", "reduce"
]


class HcclTestsOptions(checks.LaunchedOptions):
    """Options of an hccl-tests step (suite ``options:``)."""

    collective: Collective = Field("all_reduce", description="which binary: <collective>_test")
    min_bytes: str = Field("8K", description="smallest message size (-b), e.g. 8K")
    max_bytes: str = Field("1G", description="largest message size (-e)")
    step_factor: Annotated[int, Field(ge=2)] = Field(2, description="size multiplier (-f)")
    iters: Annotated[int, Field(ge=1)] = Field(20, description="timed iterations (-n)")
    warmup_iters: Annotated[int, Field(ge=0)] = Field(5, description="warm-up iterations (-w)")
    check: bool = Field(True, description="check the results (-c 1)")
    datatype: str | None = Field(None, description="-d: fp32, fp16, int8, int32 ...")
    op: str | None = Field(None, description="-o: sum, prod, max, min")
    root: Annotated[int, Field(ge=0)] | None = Field(None, description="-r: root rank")
    npus_per_node: Annotated[int, Field(ge=1, le=64)] | None = Field(
        None, description="-p and ranks per node; default the node's gpus.count, else 8"
    )
    bin_dir: str | None = Field(None, description="directory of the binaries")
    hccl_buffsize: Annotated[int, Field(ge=1)] | None = Field(
        None, description="HCCL_BUFFSIZE (MB)"
    )
    hccl_connect_timeout: Annotated[int, Field(ge=1)] | None = Field(
        None, description="HCCL_CONNECT_TIMEOUT (s)"
    )
    hccl_socket_ifname: str | None = Field(None, description="HCCL_SOCKET_IFNAME, e.g. eth0")
    hccl_socket_family: Literal["AF_INET", "AF_INET6"] | None = Field(
        None, description="HCCL_SOCKET_FAMILY"
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="more variables for every rank (ASCEND_*, ...)"
    )
    interfaces: str | None = Field(None, description="mpirun oob/btl TCP interfaces")
    btl: str | None = Field(None, description="mpirun --mca btl, e.g. self,tcp")
    mca: dict[str, str] = Field(default_factory=dict, description="more mpirun --mca settings")
    allow_run_as_root: bool = Field(False, description="set OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1")
    launcher_args: list[str] = Field(default_factory=list, description="more mpirun options")
    extra: list[str] = Field(default_factory=list, description="more hccl_test options")
    timeout: Annotated[float, Field(gt=0)] = Field(1800.0, description="seconds per run")

    @field_validator("min_bytes", "max_bytes", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        return checks.size(v, "an hccl_test size", "8, 8K, 64M, 1G")

    @field_validator("datatype", "op", "hccl_socket_ifname", "interfaces", "btl")
    @classmethod
    def _value(cls, v: str | None) -> str | None:
        return checks.value(v)


def binary(o: HcclTestsOptions, node: Node) -> str:
    return checks.tool_path(o.bin_dir, node, TOOL, f"{o.collective}_test", DEFAULT_BIN_DIR)


def npus_per_node(o: HcclTestsOptions, node: Node) -> int:
    if o.npus_per_node is not None:
        return o.npus_per_node
    gpus = node.facts.get("gpus") or {}
    count = int(gpus.get("count", 0)) if isinstance(gpus, dict) else 0
    return count or 8


def environment(o: HcclTestsOptions) -> dict[str, str]:
    named: dict[str, str | None] = {
        "HCCL_BUFFSIZE": str(o.hccl_buffsize) if o.hccl_buffsize else None,
        "HCCL_CONNECT_TIMEOUT": str(o.hccl_connect_timeout) if o.hccl_connect_timeout else None,
        "HCCL_SOCKET_IFNAME": o.hccl_socket_ifname,
        "HCCL_SOCKET_FAMILY": o.hccl_socket_family,
    }
    env = {k: v for k, v in named.items() if v is not None}
    env.update(o.env)
    return env


class HcclTestsRunner:
    name: ClassVar[str] = "hccl-tests"
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = HcclTestsOptions
    units: ClassVar[dict[str, str]] = {"algbw": "GB/s", "time": "us"}

    def program(self, o: HcclTestsOptions, node: Node, npus: int) -> tuple[str, ...]:
        args = [binary(o, node), "-p", str(npus), "-b", o.min_bytes, "-e", o.max_bytes]
        args += ["-f", str(o.step_factor), "-n", str(o.iters), "-w", str(o.warmup_iters)]
        args += ["-c", "1" if o.check else "0"]
        if o.datatype:
            args += ["-d", o.datatype]
        if o.op:
            args += ["-o", o.op]
        if o.root is not None:
            args += ["-r", str(o.root)]
        return (*args, *o.extra)

    def invocations(
        self, step: str, options: HcclTestsOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        o = options
        head = group[0]
        names = tuple(n.name for n in group)
        if len(group) > 1 and head.executor == "slurm":
            raise UserError(
                f"step {step}: hccl-tests over {len(group)} nodes cannot be launched from "
                f"inside a Slurm job step on {head.name}",
                hint="run aibench on a login node with these nodes as executor: local or ssh",
            )
        npus = npus_per_node(o, head)
        if len(group) == 1:
            hosts: tuple[HostSlots, ...] = (HostSlots("localhost", npus),)
        else:
            hosts = tuple(HostSlots(n.host, npus) for n in group)
        job = Job(
            program=self.program(o, head, npus),
            hosts=hosts,
            env=environment(o),
            interfaces=o.interfaces,
            btl=o.btl,
            mca=dict(o.mca),
            ssh_config=ssh_config(head) if len(group) > 1 else None,
            as_root=o.allow_run_as_root,
            extra_args=tuple(o.launcher_args),
        )
        launch = get("mpirun").wrap(job)
        return [
            Invocation(
                step=step,
                tool=self.tool,
                nodes=names,
                label=label_for(names),
                repeat=slot.repeat,
                round=slot.round,
                parser="hccl-tests",
                network=len(group) > 1,
                client=ProcessSpec(
                    head.name, launch.argv, env=dict(launch.env), role="launcher", timeout=o.timeout
                ),
            )
        ]

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # hccl_test prints no version; CANN's is a preflight fact

    def parse_version(self, text: str) -> str:
        return ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        """Parse stdout, add the op dim; a non-zero exit fails the step (rows kept)."""
        op = _collective_of(inv)
        try:
            records = _with_op(parsers.parse("hccl-tests", out.stdout), op)
        except ToolFailure as exc:
            exc.partial = list(_with_op(exc.partial, op))
            raise
        except ParseError:
            if out.exit_code != 0:
                raise ToolFailure(TOOL, _failure(out)) from None
            raise
        if out.exit_code != 0:
            raise ToolFailure(TOOL, _failure(out), partial=list(records))
        ranks = _ranks(inv)
        if ranks:
            records.append(Fact(TOOL, "ranks", ranks, "count"))
        return records


def _collective_of(inv: Invocation) -> str:
    for a in inv.client.argv:
        base = a.rsplit("/", 1)[-1]
        if base.endswith("_test") and base[: -len("_test")] in COLLECTIVES:
            return base[: -len("_test")]
    return ""


def _ranks(inv: Invocation) -> int:
    argv = inv.client.argv
    if "-np" in argv:
        return int(argv[argv.index("-np") + 1])
    return 0


def _with_op(records: Sequence[object], op: str) -> list[Record]:
    out: list[Record] = []
    for r in records:
        if isinstance(r, Measurement) and op and "op" not in r.dims:
            r = replace(r, dims=FrozenDims({**r.dims, "op": op}))
        if isinstance(r, Measurement | Fact):
            out.append(r)
    return out


def _failure(out: Output) -> str:
    lines = [ln.strip() for ln in (out.stderr + "\n" + out.stdout).splitlines() if ln.strip()]
    lines = [ln for ln in lines if set(ln) != {"-"}]  # mpirun's rulers
    missing = [ln for ln in lines if ln.startswith("Executable:")]  # mpirun: cannot execute
    tail = " | ".join(missing[:1] + lines[-3:]) or "no output"
    if out.exit_code is None:
        return f"{out.reason or 'killed'}: {tail}"
    return f"exit code {out.exit_code}: {tail}"


RUNNER = HcclTestsRunner()
