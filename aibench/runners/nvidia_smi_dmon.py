"""nvidia-smi dmon runner: the GPUs' power, temperatures, utilization and clocks sampled
on every node for a while.

Builds ``nvidia-smi dmon -s SELECT -d DELAY -c COUNT [-i IDS]``: COUNT samples of every
GPU (or of those named), DELAY seconds apart, of the metric groups SELECT (``p`` power and
temperatures, ``u`` utilization, ``c`` clocks; default ``puc``); dmon stops by itself
after COUNT rows per GPU. The binary is ``bin_dir/nvidia-smi``, else the node's
``tool_dirs: {nvidia-smi-dmon: DIR}``, else ``nvidia-smi`` on the PATH. Parsed by the
``nvidia-smi-dmon`` parser, one measurement per GPU per sample; a spec judges them like
any other series (e.g. the median ``clock_graphics`` of a node's GPUs under a load that
runs beside it, or the largest ``temp_gpu``). The version is nvidia-smi's own
(``nvidia-smi --version``: "NVIDIA-SMI version : 550.54.15").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Slot, each_node
from aibench.traits import Traits

TOOL = "nvidia-smi-dmon"
_VERSION = re.compile(r"NVIDIA-SMI version\s*:\s*(\S+)")


class NvidiaSmiDmonOptions(Strict):
    """Options of an nvidia-smi dmon step (suite ``options:``)."""

    count: int = Field(10, ge=1, le=86400, description="samples of every GPU (-c)")
    delay: int = Field(1, ge=1, le=3600, description="seconds between samples (-d)")
    select: str = Field(
        "puc",
        pattern=r"^[puc]{1,3}$",
        description="metric groups (-s): p power and temperatures, u utilization, c clocks",
    )
    gpus: list[int] = Field(
        default_factory=list, description="only these GPU indices (-i); empty: every GPU"
    )
    bin_dir: str | None = Field(None, description="directory of nvidia-smi; default: the PATH")
    timeout: float | None = Field(
        None, gt=0, description="seconds before the run is stopped; default count x delay + 60"
    )

    @field_validator("gpus")
    @classmethod
    def _gpus(cls, v: list[int]) -> list[int]:
        if any(i < 0 for i in v):
            raise ValueError(f"GPU indices are 0 or more: {v}")
        return v

    @field_validator("bin_dir")
    @classmethod
    def _bin_dir(cls, v: str | None) -> str | None:
        return checks.bin_dir(v)


def argv(o: NvidiaSmiDmonOptions, node: Node) -> tuple[str, ...]:
    args = [checks.tool_path(o.bin_dir, node, TOOL, "nvidia-smi"), "dmon"]
    args += ["-s", o.select, "-d", str(o.delay), "-c", str(o.count)]
    if o.gpus:
        args += ["-i", ",".join(str(i) for i in o.gpus)]
    return tuple(args)


class NvidiaSmiDmonRunner:
    name: ClassVar[str] = TOOL
    tool: ClassVar[str] = TOOL
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = NvidiaSmiDmonOptions
    traits: ClassVar[Traits] = Traits(
        units={
            "power": "W",
            "temp_gpu": "C",
            "temp_memory": "C",
            "util_sm": "%",
            "util_memory": "%",
            "util_enc": "%",
            "util_dec": "%",
            "util_jpg": "%",
            "util_ofa": "%",
            "clock_memory": "MHz",
            "clock_graphics": "MHz",
        },
        lower_is_better=frozenset({"temp_gpu", "temp_memory"}),
        title="nvidia-smi dmon (GPU power, temperatures, utilization, clocks)",
    )

    def invocations(
        self, step: str, options: NvidiaSmiDmonOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        timeout = options.timeout or float(options.count * options.delay + 60)
        return each_node(step, self.tool, TOOL, group, slot, lambda n: argv(options, n), timeout)

    def expected_seconds(self, o: NvidiaSmiDmonOptions) -> tuple[float, str]:
        return float(o.count * o.delay), f"-c {o.count} x -d {o.delay} s"

    def version_argv(self) -> tuple[str, ...]:
        return ("nvidia-smi", "--version")

    def version_argv_for(self, inv: Invocation) -> tuple[str, ...]:
        """The version of the nvidia-smi the step runs (bin_dir, tool_dirs)."""
        return (inv.client.argv[0], "--version")

    def parse_version(self, text: str) -> str:
        m = _VERSION.search(text)
        return m.group(1) if m else ""


RUNNER = NvidiaSmiDmonRunner()
