"""rados-bench: Ceph's own object benchmark, ``rados bench``, on every node at once.

Each node runs a fixed ``sh`` driver (the values are its arguments, never part of the
script) that runs, for each mode of the step in order, ``rados [-c CONF] [--id ID]
[--keyring FILE] bench -p POOL SECONDS MODE -t N --run-name NAME`` (``write`` with
``--no-cleanup``, ``-b``, ``-O`` and ``--max-objects`` where given), printing the command
line (``$ rados bench ...``) before each and the tool's stderr with its stdout; then
``rados -p POOL cleanup --run-name NAME`` whatever happened, so that the pool is left as
it was found. The run name is the step's, the node's and the repeat's
(``aibench-STEP-NODE-rN``): nodes running at once never read each other's objects. The
driver stops at the first run that fails and exits with its code.

``seq`` and ``rand`` read what the ``write`` run wrote, so a step with them starts with
``write``; ``seq`` ends when it has read every object once (it may take less than
``seconds``). The output is read by the ``rados-bench`` parser (dims ``mode`` ...); this
runner adds the dim ``pool``. Tested with Ceph 16.2.15 (Debian 12) against a memstore OSD
in the test bed. The Ceph client's config and keyring are named (paths on the node),
never given: no key reaches an argv, a log or a report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.errors import ToolFailure
from aibench.inventory import Node
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Record
from aibench.parsers.rados_bench import TOOL, UNITS, parse
from aibench.runners._checks import PATH, SIZE, BinaryOptions, tool_path
from aibench.runners.base import Invocation, Output, Slot, each_node
from aibench.traits import Traits

Mode = Literal["write", "seq", "rand"]
_WORD = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,126}$")
# $1 rados, $2 pool, $3 seconds, $4 run name, $5 the modes (comma-separated), $6 the
# write-only options up to "--"; the rest: options of every rados command (-c, --id ...)
DRIVER = r"""rados=$1; pool=$2; secs=$3; run=$4; modes=$5; shift 5
wopts=""; while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do wopts="$wopts $1"; shift; done; shift
rc=0
for m in $(echo "$modes" | tr ',' ' '); do
  if [ "$m" = write ]; then extra="--no-cleanup$wopts"; else extra=""; fi
  echo "\$ rados $* bench -p $pool $secs $m --run-name $run $extra"
  "$rados" "$@" bench -p "$pool" "$secs" "$m" --run-name "$run" $extra 2>&1 || { rc=$?; break; }
done
echo "\$ rados $* -p $pool cleanup --run-name $run"
"$rados" "$@" -p "$pool" cleanup --run-name "$run" 2>&1 || { [ $rc = 0 ] && rc=$?; }
exit $rc"""


class RadosBenchOptions(BinaryOptions):
    """Options of a rados-bench step (suite ``options:``)."""

    pool: str = Field(description="the RADOS pool written to (it must exist)")
    seconds: Annotated[int, Field(ge=1, le=86_400)] = Field(10, description="seconds per run")
    modes: list[Mode] = Field(
        default_factory=lambda: list[Mode](["write", "seq", "rand"]),
        min_length=1,
        description="runs in order; seq and rand read what write wrote",
    )
    concurrency: Annotated[int, Field(ge=1, le=4096)] = Field(16, description="-t operations")
    block_size: str | None = Field(None, description="write: -b bytes per op (e.g. 4M, 4096)")
    object_size: str | None = Field(None, description="write: -O bytes per object")
    max_objects: Annotated[int, Field(ge=1)] | None = Field(
        None, description="write: --max-objects (stops the write run early)"
    )
    conf: str | None = Field(None, description="ceph.conf on the node (-c); default: Ceph's")
    client_id: str | None = Field(None, description="--id of the Ceph client (e.g. admin)")
    keyring: str | None = Field(None, description="the client's keyring file on the node")
    bin_dir: str | None = Field(None, description="directory of the rados binary")
    timeout: float | None = Field(None, gt=0, description="seconds per node; default: estimate")

    @field_validator("pool", "client_id")
    @classmethod
    def _word(cls, v: str | None) -> str | None:
        if v is not None and not _WORD.match(v):
            raise ValueError(f"must be letters, digits, _ . - (not starting with - or .): {v!r}")
        return v

    @field_validator("block_size", "object_size", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
        if isinstance(v, int) and not isinstance(v, bool):
            v = str(v)
        if v is not None and not (isinstance(v, str) and SIZE.match(v)):
            raise ValueError(f"not a size: {v!r} (examples: 4096, 64K, 4M)")
        return v

    @field_validator("conf", "keyring")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and not PATH.match(v):
            raise ValueError(f"must be an absolute path without spaces: {v!r}")
        return v

    @field_validator("modes")
    @classmethod
    def _modes(cls, v: list[Mode]) -> list[Mode]:
        if len(set(v)) != len(v):
            raise ValueError(f"a mode is given twice: {v}")
        if v[0] != "write":
            raise ValueError("seq and rand read what a write run wrote: start with write")
        return v


def client_args(o: RadosBenchOptions) -> list[str]:
    """The options of every rados command of the step (config, client, keyring)."""
    args: list[str] = []
    if o.conf:
        args += ["-c", o.conf]
    if o.client_id:
        args += ["--id", o.client_id]
    if o.keyring:
        args += ["--keyring", o.keyring]
    return [*args, "-t", str(o.concurrency)]


def write_args(o: RadosBenchOptions) -> list[str]:
    args: list[str] = []
    if o.block_size:
        args += ["-b", o.block_size]
    if o.object_size:
        args += ["-O", o.object_size]
    if o.max_objects:
        args += ["--max-objects", str(o.max_objects)]
    return args


def argv(o: RadosBenchOptions, node: Node, step: str, slot: Slot) -> tuple[str, ...]:
    rados = tool_path(o.bin_dir, node, TOOL, "rados")
    run = f"aibench-{step}-{node.name}-r{slot.repeat}"
    return ("sh", "-c", DRIVER, "aibench-rados-bench", rados, o.pool, str(o.seconds), run,
            ",".join(o.modes), *write_args(o), "--", *client_args(o))  # fmt: skip


class RadosBenchRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = RadosBenchOptions
    traits: ClassVar[Traits] = Traits(
        units=UNITS,
        lower_is_better=frozenset({"latency", "runtime"}),
        title="Ceph RADOS (rados bench)",
        key_facts=("rados-bench.version",),
    )

    def invocations(
        self, step: str, options: RadosBenchOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        timeout = options.timeout or self.expected_seconds(options)[0] * 3 + 60.0
        return each_node(
            step, self.tool, TOOL, group, slot,
            lambda node: argv(options, node, step, slot), timeout, network=True,
        )  # fmt: skip

    def expected_seconds(self, options: RadosBenchOptions) -> tuple[float, str]:
        n = len(options.modes)
        return n * (options.seconds + 2.0) + 3.0, f"{n} run(s) of {options.seconds} s and cleanup"

    def collect(self, inv: Invocation, out: Output) -> list[Record]:
        pool = inv.client.argv[5]
        try:
            records = [_with_pool(m, pool) for m in parse(out.stdout + "\n" + out.stderr)]
        except ToolFailure as exc:
            partial = [
                _with_pool(r, pool) if isinstance(r, Measurement) else r for r in exc.partial
            ]
            raise ToolFailure(TOOL, exc.reason, exc.line, partial=list[object](partial)) from None
        if out.exit_code != 0:
            raise ToolFailure(TOOL, out.failure(), partial=list[object](records))
        return list(records)

    def version_argv(self) -> tuple[str, ...]:
        return ("rados", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        return (inv.client.argv[4], "--version")

    def parse_version(self, text: str) -> str:
        m = re.search(r"ceph version (\d+\.\d+\.\d+)", text)
        return m.group(1) if m else ""


def _with_pool(m: Measurement, pool: str) -> Measurement:
    return replace(m, dims=FrozenDims({**m.dims, "pool": pool}))


RUNNER = RadosBenchRunner()
