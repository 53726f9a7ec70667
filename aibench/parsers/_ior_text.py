"""Pieces of IOR's text output shared by the IOR parser: numbers and the run's parameters."""

from __future__ import annotations

import re

from aibench.parsers._util import cell_number

TOOL = "ior"
# the parameters of the run kept as dims of every per-iteration record
RUN_DIMS = ("api", "access", "tasks", "block_bytes", "xfer_bytes")
# "api                 : POSIX" (3.2+ Options block), "api                = POSIX" (3.0/3.1)
_PARAM = re.compile(r"^(api|access|tasks|clients|xfersize|blocksize)\s*[:=]\s*(\S.*)$")
_SIZE = re.compile(r"^(\d+) (bytes|KiB|MiB|GiB|TiB)$")
_SIZE_UNITS = {"bytes": 1, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3, "TiB": 1024**4}
_CLIENTS = re.compile(r"^(\d+) \(\d+ per node\)$")


def run_params_line(line: str) -> tuple[str, str | int]:
    """``('api', 'POSIX')``, ``('tasks', 2)`` ... for a parameter line; ``('', '')`` else.

    3.0/3.1 print the task count as ``clients = 2 (2 per node)``; 3.2+ as ``tasks : 2``.
    """
    m = _PARAM.match(line)
    if not m:
        return "", ""
    key, value = m.group(1), m.group(2).strip()
    if key == "clients":
        c = _CLIENTS.match(value)
        return ("tasks", int(c.group(1))) if c else ("", "")
    if key in ("xfersize", "blocksize"):
        size = exact_size(value)
        name = "xfer_bytes" if key == "xfersize" else "block_bytes"
        return (name, size) if size is not None else ("", "")
    if key == "tasks":
        return ("tasks", int(value)) if value.isdigit() else ("", "")
    return key, value


def exact_size(text: str) -> int | None:
    """``47008 bytes`` -> 47008, ``2 MiB`` -> 2097152; a rounded ``9.46 TiB`` -> None."""
    m = _SIZE.match(text)
    return int(m.group(1)) * _SIZE_UNITS[m.group(2)] if m else None


def kib_bytes(cell: str, line: int) -> int | None:
    """A table's ``block(KiB)``/``xfer(KiB)`` cell in bytes when the cell is exact."""
    value = cell_number(TOOL, cell, line) * 1024
    return round(value) if abs(value - round(value)) < 1e-6 else None
