"""IOR runner: parallel file-system bandwidth, one MPI job across the placement group.

Builds ``ior -a API [-w] [-r] -t XFER -b BLOCK [-s SEGMENTS] [-i N] [-F] [-C] [-e] [-k]
[-E] [-z] [-g] [-Q N] [-D SECONDS -O stoneWallingWearOut=1] [-O summaryFormat=JSON] -o
TEST_FILE [extra]`` and starts it as ``ranks_per_node`` ranks on every node of the group
with ``mpirun`` or ``srun`` (:mod:`aibench.runners._mpi_job`). The options are IOR 4.x's
(``ior -h`` of 4.1.0+dev, kept in tests/fixtures/tool-help/ior/); 3.2 and 3.3 read the
same short options. ``test_file`` is a path on the file system under test, the same on
every node (the shared mount): IOR writes it, and with ``file_per_process`` one file per
rank beside it.

The IO500 phases are these options (aibench/suites/io500.yaml): ``ior-easy`` writes
a file per process in large transfers (``-F -t 2m``), ``ior-hard`` one shared file in
47008-byte transfers and blocks (``-t 47008 -b 47008 -s SEGMENTS``); the read phases
read back with ``-C -Q 1`` (each rank reads what another node wrote, out of its cache).
``stonewall_seconds`` (``-D``) ends a write phase after that many seconds, with
``stoneWallingWearOut`` so every rank writes as much as the fastest.

Output is read by the ``ior`` parser (text or JSON summary): bandwidth per iteration and
the summary, with the run's API, access, tasks, block and transfer sizes as dims. IOR
prints its version in its first line (``IOR-4.1.0+dev: MPI Coordinated Test of Parallel
I/O``); it has no ``--version``.

Tested without a parallel file system's client tools: real IOR 3.0.1, 3.3.0 and 4.1.0+dev
built from source ran here on a local folder to capture the parser's fixtures; the
runner's tests start a replay that accepts only ``ior -h``'s options and prints a real
captured output, under a real ``mpirun`` with two ranks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.runners import _checks as checks
from aibench.runners._mpi_job import MpiJobOptions, collect_output, invocation
from aibench.runners.base import Invocation, Output, Slot
from aibench.traits import Traits

TOOL = "ior"
_SIZE = re.compile(r"^[0-9]+[kmgtKMGT]?$")
_VERSION = re.compile(r"^IOR-(\S+?):", re.M)


def _size(v: object) -> object:
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if isinstance(v, str) and not _SIZE.match(v):
        raise ValueError(f"not an IOR size: {v!r} (examples: 47008, 4k, 2m, 1g)")
    return v


class IorOptions(MpiJobOptions):
    """Options of an IOR step (suite ``options:``)."""

    test_file: str | None = Field(
        None,
        description="path of the test file on the shared file system (-o); default "
        "WORKDIR/ior/DATASET/testfile (the suite's workdir must then be on that file system)",
    )
    dataset: str = Field(
        "ior",
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="names the default test file: a "
        "read step reads what the write step of the same dataset wrote",
    )
    api: Literal["POSIX", "MPIIO", "MMAP", "HDF5", "NCMPI"] = Field("POSIX", description="-a")
    write: bool = Field(True, description="write the file (-w)")
    read: bool = Field(True, description="read it (-r)")
    transfer_size: str = Field("1m", description="-t: bytes per transfer (47008, 4k, 2m ...)")
    block_size: str = Field("1g", description="-b: contiguous bytes per task and segment")
    segments: Annotated[int, Field(ge=1)] = Field(1, description="-s: segments")
    iterations: Annotated[int, Field(ge=1)] = Field(1, description="-i: repetitions")
    file_per_process: bool = Field(False, description="-F: a file per rank")
    reorder_tasks: bool = Field(True, description="-C: read what another node wrote")
    task_offset: Annotated[int, Field(ge=1)] | None = Field(None, description="-Q with -C")
    fsync: bool = Field(True, description="-e: fsync at the end of each write phase")
    keep_file: bool = Field(False, description="-k: keep the file(s) (a later read phase)")
    use_existing: bool = Field(False, description="-E: do not remove the file before writing")
    random_offsets: bool = Field(False, description="-z: random offsets")
    barriers: bool = Field(False, description="-g: barriers between open, write/read, close")
    stonewall_seconds: Annotated[int, Field(ge=1)] | None = Field(
        None, description="-D with stoneWallingWearOut=1: end a write phase after this"
    )
    stonewall_status: bool = Field(
        False,
        description="-O stoneWallingStatusFile=TEST_FILE.stonewall: the write phase records "
        "how far a stonewalled write got, the read phase reads back that much",
    )
    json_summary: bool = Field(False, description="-O summaryFormat=JSON instead of the text")

    @field_validator("transfer_size", "block_size", mode="before")
    @classmethod
    def _sizes(cls, v: object) -> object:
        return _size(v)

    @field_validator("test_file")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not checks.PATH.match(v):
            raise ValueError(f"test_file must be an absolute path without spaces: {v!r}")
        return v


def test_file(o: IorOptions, slot: Slot) -> str:
    return o.test_file or f"{slot.workdir}/ior/{o.dataset}/testfile"


def argv(o: IorOptions, node: Node, path: str) -> tuple[str, ...]:
    args = [checks.tool_path(o.bin_dir, node, TOOL, "ior"), "-a", o.api]
    args += ["-w"] if o.write else []
    args += ["-r"] if o.read else []
    args += ["-t", o.transfer_size, "-b", o.block_size, "-s", str(o.segments)]
    args += ["-i", str(o.iterations)]
    for flag, on in (("-F", o.file_per_process), ("-C", o.reorder_tasks), ("-e", o.fsync),
                     ("-k", o.keep_file), ("-E", o.use_existing), ("-z", o.random_offsets),
                     ("-g", o.barriers)):  # fmt: skip
        if on:
            args.append(flag)
    if o.task_offset is not None:
        args += ["-Q", str(o.task_offset)]
    if o.stonewall_seconds is not None:
        args += ["-D", str(o.stonewall_seconds), "-O", "stoneWallingWearOut=1"]
    if o.stonewall_status:
        args += ["-O", f"stoneWallingStatusFile={path}.stonewall"]
    if o.json_summary:
        args += ["-O", "summaryFormat=JSON"]
    return (*args, "-o", path, *o.extra)


class IorRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = IorOptions
    traits: ClassVar[Traits] = Traits(
        units={"bw": "MiB/s", "iops": "ops/s", "latency": "s", "time": "s"},
        lower_is_better=frozenset({"latency", "time"}),
        title="Parallel file system bandwidth (IOR)",
    )

    def invocations(
        self, step: str, options: IorOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        path = test_file(options, slot)
        program = argv(options, group[0], path)
        return [invocation(step, self.tool, options, group, slot, path, program)]

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # no --version: the output's first line names it (see collect)

    def parse_version(self, text: str) -> str:
        m = _VERSION.search(text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        return collect_output(TOOL, _VERSION, out)


RUNNER = IorRunner()
