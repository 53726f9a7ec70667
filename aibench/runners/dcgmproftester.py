"""dcgmproftester runner: DCGM's targeted load (graphics, tensor, FP64/32/16 activity).

Builds ``dcgmproftester12 --no-dcgm-validation -t FIELD_ID -d SECONDS [-i GPU,GPU]``
(``binary`` names another CUDA major, e.g. dcgmproftester11); it needs root or the DCGM
profiling permission. Parsed by the ``dcgmproftester`` parser: the activity DCGM read back
per GPU and worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners._burnin import binary, check_dir
from aibench.runners.base import Invocation, Slot, each_node


class DcgmproftesterOptions(Strict):
    """Options of a dcgmproftester step (suite ``options:``)."""

    field_id: Annotated[int, Field(ge=1001, le=1100)] = Field(
        1004, description="profiling field to load: 1001 graphics, 1004 tensor, 1007 FP32 ..."
    )
    duration: float = Field(30.0, gt=0, description="seconds of load (-d)")
    gpus: list[Annotated[int, Field(ge=0, le=1023)]] = Field(
        default_factory=list, description="GPU ids (-i); empty: all"
    )
    binary: Literal[
        "dcgmproftester10", "dcgmproftester11", "dcgmproftester12", "dcgmproftester13"
    ] = "dcgmproftester12"
    bin_dir: str | None = Field(None, description="directory of the binary; default PATH")

    @field_validator("bin_dir")
    @classmethod
    def _dir(cls, v: str | None) -> str | None:
        return check_dir(v)


def argv(o: DcgmproftesterOptions, node: Node) -> tuple[str, ...]:
    args = [
        binary(o.binary, o.bin_dir, node, "dcgm_bin_dir"),
        "--no-dcgm-validation",
        "-t",
        str(o.field_id),
        "-d",
        f"{o.duration:g}",
    ]
    if o.gpus:
        args += ["-i", ",".join(map(str, o.gpus))]
    return tuple(args)


class DcgmproftesterRunner:
    name: ClassVar[str] = "dcgmproftester"
    tool: ClassVar[str] = "dcgmproftester"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = DcgmproftesterOptions
    units: ClassVar[dict[str, str]] = {
        "activity_mean": "ratio",
        "activity_max": "ratio",
        "samples": "count",
        "gflops": "Gflop/s",
    }

    def invocations(
        self, step: str, options: DcgmproftesterOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step,
            self.tool,
            "dcgmproftester",
            group,
            slot,
            lambda n: argv(options, n),
            options.duration + 120.0,
        )

    def version_argv(self) -> tuple[str, ...] | None:
        return None

    def parse_version(self, text: str) -> str:
        return ""


RUNNER = DcgmproftesterRunner()
