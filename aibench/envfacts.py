"""Environment facts recorded with every run: host, kernel, CPU, memory, tool versions.

Collected on every node through its executor with a few fixed argv commands (no value
from the inventory is ever part of a command); on this machine (the local executor) the
same bytes are read in aibench itself, into the same raw files. The node preflight
collects far more; this is the minimum that travels with every run so that comparisons
across runs can refuse to compare different environments.
"""

from __future__ import annotations

import asyncio
import os
import platform
import re
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aibench import __version__
from aibench.executors.base import Command
from aibench.executors.local import LocalExecutor

if TYPE_CHECKING:
    from aibench.orchestrator import Execution

_COMMANDS: dict[str, tuple[str, ...]] = {
    "hostname": ("hostname",),
    "kernel": ("uname", "-srm"),
    "cpuinfo": ("cat", "/proc/cpuinfo"),
    "meminfo": ("cat", "/proc/meminfo"),
    "os_release": ("cat", "/etc/os-release"),
}


def parse_facts(outputs: dict[str, str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    if outputs.get("hostname"):
        facts["hostname"] = outputs["hostname"].strip()
    if outputs.get("kernel"):
        facts["kernel"] = outputs["kernel"].strip()
    cpu = outputs.get("cpuinfo", "")
    models = re.findall(r"^model name\s*:\s*(.+)$", cpu, re.M)
    if models:
        facts["cpu_model"] = models[0].strip()
        facts["cpu_threads"] = len(models)
    m = re.search(r"^MemTotal:\s+(\d+) kB", outputs.get("meminfo", ""), re.M)
    if m:
        facts["memory_gib"] = round(int(m.group(1)) / 2**20, 1)
    m = re.search(r'^PRETTY_NAME="?([^"\n]+)"?', outputs.get("os_release", ""), re.M)
    if m:
        facts["os"] = m.group(1)
    return facts


async def collect(ex: Execution, raw: Path) -> dict[str, dict[str, Any]]:
    nodes = sorted(set(ex.plan.hosts()) or {n.name for n in ex.plan.inventory.nodes})

    async def one(name: str) -> tuple[str, dict[str, Any]]:
        if name in ex.unreachable:
            return name, {"unreachable": ex.unreachable[name]}
        node = ex.plan.inventory.node(name)
        executor = ex.executor_for(node)
        outputs: dict[str, str] = {}
        for key, argv in _COMMANDS.items():
            out = raw / "env" / f"{name}.{key}.out"
            err = raw / "env" / f"{name}.{key}.err"
            if isinstance(executor, LocalExecutor):
                code: int | None = _write_local(argv, out, err)
            else:
                code = (
                    await executor.run(node, Command(argv, timeout=15, role="probe"), out, err)
                ).exit_code
            if code == 0:
                outputs[key] = out.read_text(errors="replace")
        facts = parse_facts(outputs)
        facts["tools"] = dict(ex.tool_versions.get(name, {}))
        facts["executor"] = node.executor
        return name, facts

    pairs = await asyncio.gather(*(one(n) for n in nodes))
    return dict(pairs)


def this_machine(argv: tuple[str, ...]) -> tuple[int, bytes, bytes]:
    """Exit code, stdout and stderr of one of the fixed commands on this machine, read in
    aibench itself: the same bytes as running it (a test holds the two side by side),
    without five processes started on every run, each a fork of aibench."""
    if argv == ("hostname",):
        return 0, f"{socket.gethostname()}\n".encode(), b""
    if argv == ("uname", "-srm"):
        u = os.uname()
        return 0, f"{u.sysname} {u.release} {u.machine}\n".encode(), b""
    if argv[0] != "cat" or len(argv) != 2:
        raise ValueError(f"not a command of the environment facts: {argv}")
    try:
        return 0, Path(argv[1]).read_bytes(), b""
    except OSError as exc:
        return 1, b"", f"cat: {argv[1]}: {exc.strerror}\n".encode()


def _write_local(argv: tuple[str, ...], out: Path, err: Path) -> int:
    """:func:`this_machine` into the raw files the command would have written."""
    code, stdout, stderr = this_machine(argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(stdout)
    err.write_bytes(stderr)
    return code


def controller_facts() -> dict[str, Any]:
    """Facts about the machine that ran aibench itself."""
    return {
        "aibench": __version__,
        "python": platform.python_version(),
        "controller": platform.node(),
    }
