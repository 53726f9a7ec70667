"""nvbandwidth runner: host-device and device-device copy bandwidth on every node.

Builds ``nvbandwidth -j [-t TESTCASE ...]`` (JSON output; all testcases when none is
named); the binary is ``bin_dir/nvbandwidth``, else the node fact ``nvbandwidth_dir``,
else ``nvbandwidth`` on PATH. Parsed by the ``nvbandwidth`` parser (a testcase in error
fails the step; waived ones are left out).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners._burnin import binary, check_dir
from aibench.runners.base import Invocation, Slot, each_node

_CASE = re.compile(r"^[a-z0-9_]+$")
_VERSION = re.compile(r"nvbandwidth Version:\s*(\S+)")


class NvbandwidthOptions(Strict):
    """Options of an nvbandwidth step (suite ``options:``)."""

    testcases: list[str] = Field(
        default_factory=list, description="testcase names (nvbandwidth -l); empty: all"
    )
    timeout: float = Field(1800.0, gt=0, description="seconds before the run is stopped")
    bin_dir: str | None = Field(None, description="directory of the nvbandwidth binary")

    @field_validator("testcases")
    @classmethod
    def _cases(cls, v: list[str]) -> list[str]:
        for name in v:
            if not _CASE.match(name):
                raise ValueError(f"not a testcase name: {name!r} (see nvbandwidth -l)")
        return v

    @field_validator("bin_dir")
    @classmethod
    def _dir(cls, v: str | None) -> str | None:
        return check_dir(v)


def argv(o: NvbandwidthOptions, node: Node) -> tuple[str, ...]:
    args = [binary("nvbandwidth", o.bin_dir, node, "nvbandwidth_dir"), "-j"]
    if o.testcases:
        args += ["-t", *o.testcases]
    return tuple(args)


class NvbandwidthRunner:
    name: ClassVar[str] = "nvbandwidth"
    tool: ClassVar[str] = "nvbandwidth"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = NvbandwidthOptions
    units: ClassVar[dict[str, str]] = {"bw": "GB/s", "bw_sum": "GB/s", "latency": "ns"}

    def invocations(
        self, step: str, options: NvbandwidthOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        return each_node(
            step,
            self.tool,
            "nvbandwidth",
            group,
            slot,
            lambda n: argv(options, n),
            options.timeout,
        )

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # the version is in the JSON (nvbandwidth.version)

    def parse_version(self, text: str) -> str:
        m = _VERSION.search(text)
        return m.group(1) if m else ""


RUNNER = NvbandwidthRunner()
