"""gpu-burn runner: GEMM stress on every GPU of every node, with per-GPU error counts.

Builds ``gpu_burn [-d] [-tc] [-m MEM] [-i GPU] [-c COMPARE] SECONDS``; the binary is
``bin_dir/gpu_burn``, else the node fact ``gpu_burn_dir``, else ``gpu_burn`` on PATH
(gpu-burn looks for ``compare.ptx`` in its working directory unless ``-c`` names it: with a
``bin_dir`` the runner passes ``-c bin_dir/compare.ptx``). Parsed by the ``gpu-burn``
parser, which fails the step for a FAULTY GPU even though gpu-burn exits 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners._burnin import binary, check_dir
from aibench.runners.base import Invocation, Slot, each_node

_MEM = re.compile(r"^[0-9]+%?$")


class GpuBurnOptions(Strict):
    """Options of a gpu-burn step (suite ``options:``)."""

    duration: Annotated[int, Field(ge=1, le=7 * 86400)] = Field(60, description="seconds of burn")
    doubles: bool = Field(False, description="-d: double precision")
    tensor_cores: bool = Field(False, description="-tc: use tensor cores")
    memory: str | None = Field(None, description="-m: MB, or a percentage such as 90%")
    gpu: Annotated[int, Field(ge=0, le=1023)] | None = Field(
        None, description="-i: burn only this GPU"
    )
    bin_dir: str | None = Field(None, description="directory of gpu_burn and compare.ptx")

    @field_validator("memory")
    @classmethod
    def _mem(cls, v: str | None) -> str | None:
        if v is not None and not _MEM.match(v):
            raise ValueError(f"memory must be MB or a percentage: {v!r}")
        return v

    @field_validator("bin_dir")
    @classmethod
    def _dir(cls, v: str | None) -> str | None:
        return check_dir(v)


def argv(o: GpuBurnOptions, node: Node) -> tuple[str, ...]:
    args = [binary("gpu_burn", o.bin_dir, node, "gpu_burn_dir")]
    if o.doubles:
        args.append("-d")
    if o.tensor_cores:
        args.append("-tc")
    if o.memory:
        args += ["-m", o.memory]
    if o.gpu is not None:
        args += ["-i", str(o.gpu)]
    if o.bin_dir:
        args += ["-c", f"{o.bin_dir.rstrip('/')}/compare.ptx"]
    args.append(str(o.duration))
    return tuple(args)


class GpuBurnRunner:
    name: ClassVar[str] = "gpu-burn"
    tool: ClassVar[str] = "gpu-burn"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = GpuBurnOptions
    units: ClassVar[dict[str, str]] = {
        "gflops": "Gflop/s",
        "iterations": "count",
        "errors": "count",
        "temperature": "C",
        "faulty": "count",
    }

    def invocations(
        self, step: str, options: GpuBurnOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step,
            self.tool,
            "gpu-burn",
            group,
            slot,
            lambda n: argv(options, n),
            options.duration + 180.0,
        )

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # gpu-burn prints no version

    def parse_version(self, text: str) -> str:
        return ""


RUNNER = GpuBurnRunner()
