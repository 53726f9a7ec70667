"""rocm-bandwidth-test: AMD host-device and device-device copy bandwidth matrices.

Command read: ``rocm-bandwidth-test`` (``rocm_bandwidth_test`` in older ROCm) with no
options, which runs ``-a`` and ``-A``: after the ``Device: N,  NAME[,  GPU-ID],  BUS``
list it prints matrices headed ``Unidirectional copy peak bandwidth GB/s`` and
``Bidirectional copy peak bandwidth GB/s`` (``Bdirectional`` in 2.0.x), each a ``D/D``
header of device indices and one row per source device. Tested on 2.0.1 (two Vega 10 with
peer access), 2.3.11 (four GPUs at x4/x8) and a 2.6 excerpt (an APU); the access and NUMA
distance matrices are not read.

Emits, per numeric cell: ``copy_bw`` (GB/s, as printed), dims ``direction``
(unidirectional | bidirectional), ``src`` and ``dst`` (device indices) and ``link``:
``h2d`` (CPU to GPU), ``d2h``, ``d2d`` (within one GPU's memory), ``p2p`` (between two
GPUs, over xGMI or PCIe), ``h2h``. A device is a GPU when its line carries a PCI address.
``N/A`` (a copy not made: no peer access, or the diagonal of the bidirectional matrix)
gives no record. And the fact ``rocm-bandwidth-test`` / ``version`` where the banner
prints it. Output without a bandwidth matrix is a :class:`ParseError`.
"""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.model import Fact, FrozenDims, Measurement
from aibench.parsers import Parser, Record
from aibench.parsers._nccl_table import number

TOOL = "rocm-bandwidth-test"
_VERSION = re.compile(r"RocmBandwidthTest Version:\s*(\S+)")
_DEVICE = re.compile(r"^Device:\s*(\d+),\s*(.*)$")
_BUS = re.compile(r"^[0-9a-fA-F]{1,4}:[0-9a-fA-F]{1,2}\.[0-9]$")
_TITLE = re.compile(r"^(Uni|Bi|Bd)directional copy peak bandwidth GB/s")


def parse(text: str) -> list[Record]:
    out: list[Record] = []
    gpu: dict[int, bool] = {}
    direction = ""
    columns: list[int] = []
    tables = 0
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        m = _VERSION.search(line)
        if m:
            out.append(Fact(TOOL, "version", m.group(1)))
            continue
        m = _DEVICE.match(line)
        if m:
            fields = [f.strip() for f in m.group(2).split(",")]
            gpu[int(m.group(1))] = bool(_BUS.match(fields[-1]))
            continue
        m = _TITLE.match(line)
        if m:
            direction = "unidirectional" if m.group(1) == "Uni" else "bidirectional"
            columns = []
            tables += 1
            continue
        if not direction:
            continue
        cells = line.split()
        if cells[0] == "D/D":
            if not all(c.isdigit() for c in cells[1:]):
                raise ParseError(TOOL, f"not a device header: {line.strip()!r}", line=lineno)
            columns = [int(c) for c in cells[1:]]
            continue
        if not columns or not cells[0].isdigit():
            direction = ""  # the matrix ended
            continue
        out += _row(direction, gpu, columns, cells, lineno)
    if tables == 0:
        raise ParseError(
            TOOL, "no 'copy peak bandwidth GB/s' matrix: not rocm-bandwidth-test output"
        )
    return out


def _row(
    direction: str, gpu: dict[int, bool], columns: list[int], cells: list[str], lineno: int
) -> list[Measurement]:
    """One source device's row of a matrix: a bandwidth per destination that was copied to."""
    if len(cells) != len(columns) + 1:
        raise ParseError(
            TOOL, f"row of {len(cells) - 1} cells, header has {len(columns)}", line=lineno
        )
    out = []
    src = int(cells[0])
    for dst, cell in zip(columns, cells[1:], strict=True):
        if cell == "N/A":
            continue
        value = number(cell)
        if value is None:  # not a number, or not a finite one
            raise ParseError(TOOL, f"not a bandwidth: {cell!r}", line=lineno)
        dims: dict[str, str | int] = {"direction": direction, "src": src, "dst": dst}
        dims["link"] = _link(gpu, src, dst)
        out.append(Measurement(TOOL, "copy_bw", value, "GB/s", FrozenDims(dims)))
    return out


def _link(gpu: dict[int, bool], src: int, dst: int) -> str:
    a, b = gpu.get(src, src != 0), gpu.get(dst, dst != 0)
    if a and b:
        return "d2d" if src == dst else "p2p"
    if b:
        return "h2d"
    if a:
        return "d2h"
    return "h2h"


_DETECT = re.compile(r"^\s*(Uni|Bi|Bd)directional copy peak bandwidth GB/s", re.M)

PARSER = Parser(
    "rocm-bandwidth-test",
    parse,
    "AMD copy bandwidth matrices (rocm-bandwidth-test)",
    lambda t: bool(_DETECT.search(t[:20000])),
)
