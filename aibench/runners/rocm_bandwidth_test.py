"""rocm-bandwidth-test runner: host-device and device-device copy bandwidth on every node.

Runs ``BIN_DIR/rocm-bandwidth-test [EXTRA...]`` on each node of the group (placement
``each``): with no options the tool copies between every pair of agents (its ``-a`` and
``-A``) and prints the unidirectional and bidirectional bandwidth matrices read by the
``rocm-bandwidth-test`` parser (records ``copy_bw`` with dims ``direction``, ``src``,
``dst`` and ``link``: h2d, d2h, d2d, p2p). The binary is found in the option ``bin_dir``,
else ``/opt/rocm/bin`` (where ROCm installs it). Its version is in its own banner, read
by the parser. Tested on captured outputs of versions 2.0.1, 2.3.11 and 2.6 (parser);
no AMD GPU has run it under aibench yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, ClassVar

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.inventory import Node
from aibench.runners import _checks as checks
from aibench.runners.base import Invocation, Slot, each_node

_FLAG = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9_-]*$|^[A-Za-z0-9_.,:/%+-]+$")


class RocmBandwidthTestOptions(Strict):
    """Options of a rocm-bandwidth-test step (suite ``options:``)."""

    bin_dir: str = Field("/opt/rocm/bin", description="directory of rocm-bandwidth-test")
    extra: list[str] = Field(
        default_factory=list, description="options of the tool, e.g. [-a] or [-s, 0, -d, 1]"
    )
    timeout: Annotated[float, Field(gt=0)] = Field(900.0, description="seconds per node")

    @field_validator("bin_dir")
    @classmethod
    def _bin_dir(cls, v: str) -> str:
        checks.bin_dir(v)
        return v

    @field_validator("extra")
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        return checks.flags(v, _FLAG)


class RocmBandwidthTestRunner:
    name: ClassVar[str] = "rocm-bandwidth-test"
    tool: ClassVar[str] = "rocm-bandwidth-test"
    default_placement: ClassVar[str] = "each"
    Options: ClassVar[type[Strict]] = RocmBandwidthTestOptions
    units: ClassVar[dict[str, str]] = {"copy_bw": "GB/s"}

    def invocations(
        self, step: str, options: RocmBandwidthTestOptions, group: Sequence[Node], slot: Slot
    ) -> list[Invocation]:
        binary = f"{options.bin_dir.rstrip('/')}/rocm-bandwidth-test"
        return each_node(
            step, self.tool, "rocm-bandwidth-test", group, slot,
            lambda _node: (binary, *options.extra), options.timeout,
        )  # fmt: skip

    def version_argv(self) -> tuple[str, ...] | None:
        return None  # the banner of every run names the version (a fact of the step)

    def parse_version(self, text: str) -> str:
        m = re.search(r"RocmBandwidthTest Version:\s*(\S+)", text)
        return m.group(1) if m else ""


RUNNER = RocmBandwidthTestRunner()
