"""stress-ng runner: CPU and memory stress on every node, with its metrics.

Builds ``stress-ng --cpu N [--cpu-method M] [--cpu-load P] [--vm N --vm-bytes B] --timeout Ts
--metrics-brief --stdout`` (``--cpu 0`` means one worker per online CPU). The output is
parsed by the ``stress-ng`` parser: bogo ops and rates per stressor; a run that ended well
before ``duration`` (stopped by a signal) is a failed step. Tested with stress-ng 0.15.06.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners._burnin import check_token
from aibench.runners.base import Invocation, Slot, each_node

_BYTES = re.compile(r"^[0-9]+[bkmgBKMG]?$|^[0-9]+%$")
_VERSION = re.compile(r"version (\S+)")


class StressNgOptions(Strict):
    """Options of a stress-ng step (suite ``options:``)."""

    duration: float = Field(60.0, gt=0, description="seconds of stress (--timeout)")
    cpu: Annotated[int, Field(ge=0, le=4096)] = Field(
        0, description="CPU workers; 0: one per online CPU"
    )
    cpu_method: str | None = Field(None, description="stress-ng --cpu-method (matrixprod ...)")
    cpu_load: Annotated[int, Field(ge=1, le=100)] | None = Field(
        None, description="--cpu-load: percent of each CPU worker's time spent busy"
    )
    vm: Annotated[int, Field(ge=0, le=4096)] = Field(1, description="memory workers (--vm)")
    vm_bytes: str = Field("10%", description="memory per vm worker, e.g. 1G or 10%")
    binary: str = Field("stress-ng", description="the stress-ng command (a name or a path)")

    @field_validator("cpu_method")
    @classmethod
    def _method(cls, v: str | None) -> str | None:
        return None if v is None else check_token(v, "cpu_method")

    @field_validator("vm_bytes")
    @classmethod
    def _bytes(cls, v: str) -> str:
        if not _BYTES.match(v):
            raise ValueError(f"not a stress-ng size: {v!r} (examples: 256M, 1G, 10%)")
        return v

    @field_validator("binary")
    @classmethod
    def _binary(cls, v: str) -> str:
        if not re.match(r"^/?[A-Za-z0-9_./-]+$", v) or v.startswith("-"):
            raise ValueError(f"not a command name or path: {v!r}")
        return v


def argv(o: StressNgOptions) -> tuple[str, ...]:
    args = [o.binary, "--cpu", str(o.cpu)]
    if o.cpu_method:
        args += ["--cpu-method", o.cpu_method]
    if o.cpu_load is not None:
        args += ["--cpu-load", str(o.cpu_load)]
    if o.vm:
        args += ["--vm", str(o.vm), "--vm-bytes", o.vm_bytes]
    args += ["--timeout", f"{o.duration:g}s", "--metrics-brief", "--stdout"]
    return tuple(args)


class StressNgRunner:
    name: ClassVar[str] = "stress-ng"
    tool: ClassVar[str] = "stress-ng"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = StressNgOptions
    units: ClassVar[dict[str, str]] = {
        "bogo_ops": "count",
        "bogo_ops_rate": "ops/s",
        "bogo_ops_rate_cpu": "ops/s",
        "wall_time": "s",
        "usr_time": "s",
        "sys_time": "s",
        "cpu_per_instance": "%",
        "max_rss": "KiB",
    }

    def invocations(
        self, step: str, options: StressNgOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step,
            self.tool,
            "stress-ng",
            group,
            slot,
            lambda n: argv(options),
            options.duration + 60.0,
        )

    def version_argv(self) -> tuple[str, ...]:
        return ("stress-ng", "--version")

    def parse_version(self, text: str) -> str:
        m = _VERSION.search(text)
        return m.group(1).rstrip(",") if m else ""


RUNNER = StressNgRunner()
