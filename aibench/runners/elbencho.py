"""elbencho runner: file-system throughput, IOPS and metadata rates from every node.

Builds ``elbencho [-d] [-w] [--stat] [-r] [-F] [-D] -t THREADS -b BLOCK -s SIZE [-n DIRS
-N FILES] [--iodepth N] [--direct] [--rand] [--lat] --nolive [extra] PATH`` and runs it on
each node of the placement (default ``each``: all nodes at once, a spec sums them), every
node in a directory of its own under ``path`` (elbencho's "many files" mode: ``dirs``
directories of ``files`` files per thread) or, with ``files: 0``, on one file of its own
(the "large shared file" mode of one node). The options are those of elbencho's source at
commit d085b19 (``source/ProgArgs.*``, kept in tests/fixtures/tool-help/elbencho/). The
phases run in elbencho's order: mkdirs, write, stat, read, delete files, delete dirs.

Output is read by the ``elbencho`` parser: per phase the elapsed time, IOPS, MiB/s and
item rates at the first and last finished thread, and the latency with ``--lat``.
elbencho prints its version with ``--version``.

elbencho is not packaged for Debian and was not built here: the tests run a replay that
accepts only elbencho's options and prints a published output.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.errors import ParseError, ToolFailure
from aibench.inventory import Node
from aibench.parsers import Record
from aibench.parsers.elbencho import parse
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Output, ProcessSpec, Slot, each_node
from aibench.traits import Traits

TOOL = "elbencho"
_SIZE = re.compile(r"^[0-9]+[kmgtKMGT]?$")


class ElbenchoOptions(checks.BinaryOptions):
    """Options of an elbencho step (suite ``options:``)."""

    path: str = Field(description="directory on the file system under test (one per node below)")
    mkdirs: bool = Field(True, description="-d: create the directories (many-files mode)")
    write: bool = Field(True, description="-w: write")
    stat: bool = Field(False, description="--stat: stat the files")
    read: bool = Field(True, description="-r: read")
    delete_files: bool = Field(True, description="-F: delete the files")
    delete_dirs: bool = Field(True, description="-D: delete the directories")
    threads: Annotated[int, Field(ge=1, le=4096)] = Field(8, description="-t: I/O threads")
    block: str = Field("1m", description="-b: block size (4k, 1m ...)")
    size: str = Field("1g", description="-s: size of each file")
    dirs: Annotated[int, Field(ge=1)] = Field(1, description="-n: directories per thread")
    files: Annotated[int, Field(ge=0)] = Field(
        1, description="-N: files per directory; 0: one file per node (no -n/-N/-d/-D)"
    )
    iodepth: Annotated[int, Field(ge=1, le=4096)] | None = Field(None, description="--iodepth")
    direct: bool = Field(True, description="--direct: O_DIRECT")
    random: bool = Field(False, description="--rand: random offsets")
    latency: bool = Field(False, description="--lat: latency figures")
    bin_dir: str | None = Field(None, description="directory of the elbencho binary")
    extra: list[str] = Field(default_factory=list, description="more elbencho options")
    timeout: Annotated[float, Field(gt=0)] = Field(1800.0, description="seconds per node")

    @field_validator("path")
    @classmethod
    def _path(cls, v: str) -> str:
        if not checks.PATH.match(v):
            raise ValueError(f"path must be an absolute path without spaces: {v!r}")
        return v

    @field_validator("block", "size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not _SIZE.match(v):
            raise ValueError(f"not an elbencho size: {v!r} (4k, 1m, 16g)")
        return v


def argv(step: str, o: ElbenchoOptions, node: Node, slot: Slot) -> tuple[str, ...]:
    many = o.files > 0
    phases = [("-d", o.mkdirs and many), ("-w", o.write), ("--stat", o.stat), ("-r", o.read),
              ("-F", o.delete_files), ("-D", o.delete_dirs and many)]  # fmt: skip
    args = [checks.tool_path(o.bin_dir, node, TOOL, "elbencho")]
    args += [flag for flag, on in phases if on]
    args += ["-t", str(o.threads), "-b", o.block, "-s", o.size]
    if many:
        args += ["-n", str(o.dirs), "-N", str(o.files)]
    if o.iodepth is not None:
        args += ["--iodepth", str(o.iodepth)]
    args += [flag for flag, on in (("--direct", o.direct), ("--rand", o.random),
                                   ("--lat", o.latency)) if on]  # fmt: skip
    target = f"{o.path.rstrip('/')}/{step}.{node.name}.r{slot.repeat}"
    if not many:
        target += ".file"
    return (*args, "--nolive", *o.extra, target)


class ElbenchoRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = ElbenchoOptions
    traits: ClassVar[Traits] = Traits(
        units={"throughput": "MiB/s", "iops": "IOPS", "ops_rate": "ops/s", "elapsed": "s"},
        lower_is_better=frozenset({"elapsed", "latency"}),
        title="File system throughput and metadata (elbencho)",
    )

    def invocations(
        self, step: str, options: ElbenchoOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        invs = each_node(
            step, self.tool, TOOL, group, slot, lambda node: argv(step, options, node, slot),
            options.timeout, network=True,
        )  # fmt: skip
        # elbencho needs its directory (many files) or the file's folder to exist
        out = []
        for inv in invs:
            target = inv.client.argv[-1]
            folder = target if options.files > 0 else options.path
            mkdir = ProcessSpec(inv.client.host, ("mkdir", "-p", folder), role="setup", timeout=60)
            out.append(replace(inv, setup=(mkdir,)))
        return out

    def version_argv(self) -> tuple[str, ...]:
        return ("elbencho", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        return (inv.client.argv[0], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"[Vv]ersion:?\s*(\d+\.\d+[-.\w]*)", text)
        return m.group(1) if m else ""

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        try:
            records: list[Record] = list(parse(out.stdout + "\n" + out.stderr))
        except ParseError:
            if out.exit_code != 0:  # elbencho refused its options or could not start
                raise ToolFailure(TOOL, out.failure()) from None
            raise
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list(records))
        return records


RUNNER = ElbenchoRunner()
