"""fio runner: one fio job per node, JSON output.

Builds ``fio --name=STEP --directory=DIR --rw=... --bs=... --size=... --ioengine=...
--iodepth=... --numjobs=... --direct=0|1 --group_reporting --unlink=1
--output-format=json`` (time-based when ``runtime`` is set). The scratch directory is
created first (``mkdir -p``) and fio removes its files at the end (``--unlink=1``).
Output is parsed by the ``fio`` parser. Tested with fio 3.33.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners.base import Invocation, ProcessSpec, Slot, label_for
from aibench.traits import Traits

_SIZE = re.compile(r"^[0-9]+[kKmMgGtT]?(i?[bB])?$|^[0-9]+%$")
_TOKEN = re.compile(r"^[A-Za-z0-9_.]+$")
# fio options that make fio run a command (fio 3.33 --cmdhelp=all and --help): exec_prerun
# and exec_postrun (through system(3), a shell), --trigger and --trigger-remote (a command
# run on a trigger), the exec ioengine's program and arguments; and the ioengines that
# run or load code of their own (exec; external:LIB.so). Refused at validation.
RUNS_A_COMMAND = frozenset(
    {"exec_prerun", "exec_postrun", "trigger", "trigger_remote", "program", "arguments"}
)


def _runs_code(engine: str) -> bool:
    return engine == "exec" or engine.startswith("external")


def ioengine(v: str) -> str:
    """``v`` as fio's ``--ioengine``: a plain engine name, and none that makes fio run a
    program (exec, external engines); anything else is a ValueError naming it."""
    if not _TOKEN.match(v):
        raise ValueError(f"not an ioengine name: {v!r}")
    if _runs_code(v):
        raise ValueError(f"ioengine {v!r} makes fio run a program: refused")
    return v


_EXTRA = re.compile(r"^--[a-z_]+(=[A-Za-z0-9_.,:/%+-]*)?$")


class FioOptions(Strict):
    """Options of a fio step (suite ``options:``)."""

    rw: Literal["read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim"] = (
        Field(description="I/O pattern (fio --rw)")
    )
    bs: str = Field("1M", description="block size, e.g. 4k, 1M")
    size: str = Field("256M", description="file size per job, e.g. 256M, 4G")
    runtime: float | None = Field(
        10.0, gt=0, description="seconds; the job runs time-based for this long (null: size-based)"
    )
    ramp_time: float = Field(0.0, ge=0, description="seconds of warm-up not counted")
    ioengine: str = Field("libaio", description="fio --ioengine (libaio, io_uring, psync ...)")
    iodepth: Annotated[int, Field(ge=1, le=65536)] = 16
    numjobs: Annotated[int, Field(ge=1, le=1024)] = 1
    direct: bool = Field(True, description="O_DIRECT I/O, bypassing the page cache")
    rwmixread: Annotated[int, Field(ge=0, le=100)] | None = None
    directory: str | None = Field(
        None, description="scratch directory; default: the node's first data_dir, else workdir"
    )
    extra: list[str] = Field(default_factory=list, description="more fio options, --key=value")

    @field_validator("bs", "size")
    @classmethod
    def _size(cls, v: str) -> str:
        if not _SIZE.match(v):
            raise ValueError(f"not a fio size: {v!r} (examples: 4k, 1M, 256M, 4G)")
        return v

    @field_validator("ioengine")
    @classmethod
    def _engine(cls, v: str) -> str:
        return ioengine(v)

    @field_validator("directory")
    @classmethod
    def _dir(cls, v: str | None) -> str | None:
        if v is not None and (not v.startswith("/") or ":" in v or "\n" in v):
            raise ValueError("must be an absolute path without ':'")
        return v

    @field_validator("extra")
    @classmethod
    def _extra(cls, v: list[str]) -> list[str]:
        for opt in v:
            if not _EXTRA.match(opt):
                raise ValueError(f"extra option {opt!r} must look like --name=value")
            name, _, value = opt[2:].partition("=")
            if name.replace("-", "_") in RUNS_A_COMMAND or (
                name == "ioengine" and _runs_code(value)
            ):
                raise ValueError(f"extra option {opt!r} makes fio run a command: refused")
        return v


def _bytes(size: str) -> int | None:
    """fio's size text in bytes (fio reads k/M/G/T as powers of 1024); None for a
    percentage of the device."""
    m = re.match(r"^([0-9]+)([kKmMgGtT]?)", size)
    if size.endswith("%") or m is None:
        return None
    power = " kmgt".index(m.group(2).lower() or " ")
    return int(m.group(1)) * int(1024**power)


class FioRunner:
    traits: ClassVar[Traits] = Traits(
        units={
            "bw": "KiB/s",
            "iops": "IOPS",
            "clat_mean": "ns",
            "clat_percentile": "ns",
            "lat_mean": "ns",
        },
        title="fio (storage)",
    )
    name: ClassVar[str] = "fio"
    tool: ClassVar[str] = "fio"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = FioOptions

    def argv(self, step: str, o: FioOptions, directory: str) -> tuple[str, ...]:
        args = [
            "fio",
            f"--name={step}",
            f"--directory={directory}",
            f"--rw={o.rw}",
            f"--bs={o.bs}",
            f"--size={o.size}",
            f"--ioengine={o.ioengine}",
            f"--iodepth={o.iodepth}",
            f"--numjobs={o.numjobs}",
            f"--direct={int(o.direct)}",
            "--group_reporting",
            "--unlink=1",
            "--output-format=json",
        ]
        if o.runtime is not None:
            args += [f"--runtime={o.runtime:g}", "--time_based"]
        if o.ramp_time:
            args.append(f"--ramp_time={o.ramp_time:g}")
        if o.rwmixread is not None:
            args.append(f"--rwmixread={o.rwmixread}")
        args += o.extra
        return tuple(args)

    def invocations(
        self, step: str, options: FioOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        out = []
        for node in group:
            dirs = node.facts.get("data_dirs") or []
            directory = options.directory or (str(dirs[0]) if dirs else f"{slot.workdir}/fio")
            timeout = (options.runtime or 600.0) + options.ramp_time + 300.0
            out.append(
                Invocation(
                    step=step,
                    tool=self.tool,
                    nodes=(node.name,),
                    label=label_for((node.name,)),
                    repeat=slot.repeat,
                    round=slot.round,
                    parser="fio",
                    setup=(
                        ProcessSpec(
                            node.name, ("mkdir", "-p", directory), role="setup", timeout=30
                        ),
                    ),
                    client=ProcessSpec(
                        node.name, self.argv(step, options, directory), timeout=timeout
                    ),
                )
            )
        return out

    def expected_seconds(self, o: FioOptions) -> tuple[float, str]:
        """A time-based job takes its runtime (plus ramp time); a size-bound one moves
        ``size`` x ``numjobs`` at an assumed rate: 500 MiB/s for sequential patterns,
        50 MiB/s for random ones (a plain NVMe drive does better, a network file
        system may do worse). The plan says which was used."""
        if o.runtime is not None:
            return o.runtime + o.ramp_time + 1.0, f"runtime {o.runtime:g} s"
        total = _bytes(o.size)
        if total is None:
            return 60.0, f"size {o.size} of the device: 60 s assumed"
        rate = 50 if o.rw.startswith("rand") else 500
        secs = total * o.numjobs / (rate * 2**20) + o.ramp_time + 1.0
        return secs, f"size {o.size} x {o.numjobs} job(s) at an assumed {rate} MiB/s"

    def version_argv(self) -> tuple[str, ...]:
        return ("fio", "--version")

    def parse_version(self, text: str) -> str:
        return text.strip().splitlines()[0].removeprefix("fio-") if text.strip() else ""


RUNNER = FioRunner()
