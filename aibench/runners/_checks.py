"""Checks of runner options that reach a command line or an environment, shared by the
runners of launched programs (nccl-tests, rccl-tests, hccl-tests, rocm-bandwidth-test) and
of perftest.

Each returns the value or raises ValueError with the reason (pydantic turns it into a
ConfigError naming the suite file and the key). Nothing is quoted for a shell: argv lists
are never joined, so these keep values plain and one line, not "safe for sh".
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, field_validator

from aibench.config import Strict
from aibench.envnames import check_env

VALUE = re.compile(r"^[A-Za-z0-9_.,:=/+^@%-]*$")
PATH = re.compile(r"^/[A-Za-z0-9_./+@%=-]*$")
FLAG = re.compile(r"^-{1,2}[A-Za-z][A-Za-z0-9_-]*(=[A-Za-z0-9_.,:/%+-]*)?$|^[A-Za-z0-9_.,:/%+-]+$")
SIZE = re.compile(r"^[0-9]+[KMGkmg]?$")


def value(v: str | None, what: str = "value") -> str | None:
    if v is not None and not VALUE.match(v):
        raise ValueError(f"{what} {v!r} may hold letters, digits and . , : = / + ^ @ % - only")
    return v


def size(v: object, what: str, examples: str) -> object:
    """A message size as the tools' command lines take it: bytes, or a number with K, M or
    G; an integer in the file is a plain byte count. ``what`` names the size in the reason
    ("an nccl-tests size"), ``examples`` shows good ones."""
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if isinstance(v, str) and not SIZE.match(v):
        raise ValueError(f"not {what}: {v!r} (examples: {examples})")
    return v


def bin_dir(v: str | None) -> str | None:
    if v is not None and not PATH.match(v):
        raise ValueError(f"bin_dir must be an absolute path without spaces: {v!r}")
    return v


def tool_path(bin_dir: str | None, node: Any, tool: str, program: str, default: str = "") -> str:
    """Where a step finds ``program``: the step's ``bin_dir``, else the node's ``tool_dirs``
    entry of ``tool`` (the inventory), else ``default``; the bare name (the PATH) when none."""
    dirs = node.facts.get("tool_dirs") or {}
    directory = bin_dir or (dirs.get(tool) if isinstance(dirs, dict) else None) or default
    return f"{str(directory).rstrip('/')}/{program}" if directory else program


def flags(v: list[str], pattern: re.Pattern[str] = FLAG) -> list[str]:
    for a in v:
        if not pattern.match(a):
            raise ValueError(f"option {a!r} must look like -x, --name, --name=value or a word")
    return v


class BinaryOptions(Strict):
    """The checks every options model of a program aibench starts shares, on the fields it
    declares of ``bin_dir`` (an absolute directory) and ``extra`` (flags)."""

    @field_validator("bin_dir", check_fields=False)
    @classmethod
    def _bin_dir(cls, v: str | None) -> str | None:
        return bin_dir(v)

    @field_validator("extra", check_fields=False)
    @classmethod
    def _flags(cls, v: list[str]) -> list[str]:
        return flags(v)


class LaunchedOptions(BinaryOptions):
    """:class:`BinaryOptions` of a launched program, and the checks of its fields ``env``
    and ``mca`` (variables) and ``launcher_args`` (flags)."""

    @field_validator("env", "mca", check_fields=False)
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        return check_env(v)

    @field_validator("launcher_args", check_fields=False)
    @classmethod
    def _launcher_flags(cls, v: list[str]) -> list[str]:
        return flags(v)


class MpiLaunchOptions(LaunchedOptions):
    """:class:`LaunchedOptions` with the options of the launch itself that every MPI job
    (nccl-tests, rccl-tests, IOR, mdtest) takes alike: what ``runners.nccl_tests.
    launched_job`` hands mpirun or srun."""

    bind_to: str | None = Field(None, description="mpirun --bind-to (none, core, socket, numa)")
    map_by: str | None = Field(None, description="mpirun --map-by; default ppr:<ranks>:node")
    interfaces: str | None = Field(
        None, description="mpirun oob/btl TCP interfaces: a subnet (10.0.0.0/24) or names"
    )
    btl: str | None = Field(None, description="mpirun --mca btl, e.g. self,tcp")
    mca: dict[str, str] = Field(default_factory=dict, description="more mpirun --mca settings")
    allow_run_as_root: bool = Field(False, description="set OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM)=1")
    cpu_bind: str | None = Field(None, description="srun --cpu-bind")
    launcher_args: list[str] = Field(default_factory=list, description="more launcher options")

    @field_validator("bind_to", "map_by", "interfaces", "btl", "cpu_bind")
    @classmethod
    def _launch_value(cls, v: str | None) -> str | None:
        return value(v)
