"""mdtest runner: metadata rates of a parallel file system, one MPI job across the group.

Builds ``mdtest -a API -n ITEMS -d DIR [-i N] [-u] [-L] [-F|-D] [-N STRIDE] [-P] [-C]
[-T] [-E] [-r] [-w BYTES] [-e BYTES] [-z DEPTH -b BRANCH] [-W SECONDS] [-Y] [extra]``
and starts it as ``ranks_per_node`` ranks on every node with ``mpirun`` or ``srun``
(:mod:`aibench.runners._mpi_job`). The options are those of ``mdtest -h`` of IOR
4.1.0+dev (tests/fixtures/tool-help/ior/); 3.3 reads the same ones. ``directory`` is on
the file system under test, the same on every node.

The phases (``create``, ``stat``, ``read``, ``remove``) run all by default; the IO500
presets (aibench/suites/io500.yaml) run each as its own step on the same tree:
``mdtest-easy`` an empty file per item in a private directory per rank (``-u -L -F``),
``mdtest-hard`` 3901-byte files in one shared directory (``-w 3901 -e 3901``), both with
``-N 1`` so a rank stats or removes another node's files.

Output is read by the ``mdtest`` parser: ops/s per operation (and phase seconds with
``print_time``), with tasks, nodes and items as dims. mdtest prints its version in its
``mdtest-X was launched with`` line.

Tested like the IOR runner: real mdtest 3.3.0 and 4.1.0+dev built from source captured
the parser's fixtures here; the runner's tests start a replay that accepts only ``mdtest
-h``'s options, under a real ``mpirun`` with two ranks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.runners import _checks as checks
from aibench.runners._mpi_job import MpiJobOptions, collect_output, invocation
from aibench.runners.base import Invocation, Output, Slot
from aibench.traits import Traits

TOOL = "mdtest"
_VERSION = re.compile(r"mdtest-(\S+) was launched with", re.M)


class MdtestOptions(MpiJobOptions):
    """Options of an mdtest step (suite ``options:``)."""

    directory: str | None = Field(
        None,
        description="directory of the test on the shared file system (-d); default "
        "WORKDIR/mdtest/DATASET (the suite's workdir must then be on that file system)",
    )
    dataset: str = Field(
        "mdtest",
        pattern=r"^[A-Za-z0-9_.-]+$",
        description="names the default directory: "
        "the stat and remove steps find what the create step of the same dataset made",
    )
    api: Literal["POSIX", "MPIIO", "DUMMY"] = Field("POSIX", description="-a")
    items: Annotated[int, Field(ge=1)] = Field(1000, description="-n: items per rank")
    iterations: Annotated[int, Field(ge=1)] = Field(1, description="-i")
    unique_dir: bool = Field(True, description="-u: a directory per rank")
    leaf_only: bool = Field(False, description="-L: files only at the tree's leaves")
    only: Literal["files", "dirs"] | None = Field(None, description="-F files / -D dirs only")
    stride: Annotated[int, Field(ge=0)] | None = Field(None, description="-N: rank stride")
    print_time: bool = Field(True, description="-P: print phase times beside the rates")
    create: bool = Field(True, description="-C phase")
    stat: bool = Field(True, description="-T phase")
    read: bool = Field(True, description="-E phase")
    remove: bool = Field(True, description="-r phase")
    write_bytes: Annotated[int, Field(ge=0)] | None = Field(None, description="-w per file")
    read_bytes: Annotated[int, Field(ge=0)] | None = Field(None, description="-e per file")
    depth: Annotated[int, Field(ge=0)] | None = Field(None, description="-z: tree depth")
    branch: Annotated[int, Field(ge=1)] | None = Field(None, description="-b: branching")
    stonewall_seconds: Annotated[int, Field(ge=1)] | None = Field(
        None, description="-W: end the create phase after this many seconds"
    )
    stonewall_status: bool = Field(
        False,
        description="-x DIRECTORY.stonewall: the create phase records how many items a "
        "stonewalled create made, the later phases use that many",
    )
    sync: bool = Field(False, description="-Y: sync after each phase (timed)")

    @field_validator("directory")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not checks.PATH.match(v):
            raise ValueError(f"directory must be an absolute path without spaces: {v!r}")
        return v

    @model_validator(mode="after")
    def _phases(self) -> MdtestOptions:
        if not (self.create or self.stat or self.read or self.remove):
            raise ValueError("no phase: set create, stat, read or remove")
        return self


def directory(o: MdtestOptions, slot: Slot) -> str:
    return o.directory or f"{slot.workdir}/mdtest/{o.dataset}"


def argv(o: MdtestOptions, node: Node, path: str) -> tuple[str, ...]:
    args = [checks.tool_path(o.bin_dir, node, TOOL, "mdtest"), "-a", o.api]
    args += ["-n", str(o.items), "-d", path, "-i", str(o.iterations)]
    flags = {"-u": o.unique_dir, "-L": o.leaf_only, "-F": o.only == "files",
             "-D": o.only == "dirs", "-P": o.print_time, "-Y": o.sync}  # fmt: skip
    args += [f for f, on in flags.items() if on]
    all_phases = o.create and o.stat and o.read and o.remove
    if not all_phases:  # mdtest runs every phase unless told which
        phases = {"-C": o.create, "-T": o.stat, "-E": o.read, "-r": o.remove}
        args += [f for f, on in phases.items() if on]
    valued = {"-N": o.stride, "-w": o.write_bytes, "-e": o.read_bytes, "-z": o.depth,
              "-b": o.branch, "-W": o.stonewall_seconds}  # fmt: skip
    for flag, value in valued.items():
        if value is not None:
            args += [flag, str(value)]
    if o.stonewall_status:
        args += ["-x", f"{path}.stonewall"]
    return (*args, *o.extra)


class MdtestRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "all"
    Options: ClassVar[type[Strict]] = MdtestOptions
    traits: ClassVar[Traits] = Traits(
        units={"ops_rate": "ops/s", "time": "s"},
        lower_is_better=frozenset({"time"}),
        title="Parallel file system metadata (mdtest)",
    )

    def invocations(
        self, step: str, options: MdtestOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        path = directory(options, slot)
        program = argv(options, group[0], path)
        return [invocation(step, self.tool, options, group, slot, path, program)]

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # no --version: the "mdtest-X was launched" line names it

    def parse_version(self, text: str) -> str:
        m = _VERSION.search(text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        return collect_output(TOOL, _VERSION, out)


RUNNER = MdtestRunner()
