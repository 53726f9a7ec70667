"""elbencho's printed cells: ``2m3.241s``, ``82ms``, ``6001`` (1.x ms) and latency brackets."""

from __future__ import annotations

import re

from aibench.errors import ParseError
from aibench.parsers._util import cell_number

TOOL = "elbencho"
# 2.x+ "Elapsed time": "2m3.241s", "30.140s", "82ms", "1h2m3s", "450us"
_ELAPSED = re.compile(r"^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+(?:\.\d+)?)(s|ms|us|ns))?$")
_SUFFIX_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
# "[ min=91 avg=120 max=1583 ]" (1.x, us) or "[ min=123us avg=456us max=1.23ms ]"
_LAT_ITEM = re.compile(r"(min|avg|max)=(\d+(?:\.\d+)?)(ns|us|ms|s)?")
_LAT_STAT = {"min": "min", "avg": "mean", "max": "max"}


def elapsed_s(cell: str, in_ms: bool, line: int) -> float:
    """Seconds of an ``Elapsed ms`` (1.x, milliseconds) or ``Elapsed time`` cell."""
    if in_ms:
        return cell_number(TOOL, cell, line) / 1000.0
    m = _ELAPSED.match(cell)
    if not m or not any(m.groups()):
        raise ParseError(TOOL, f"not a duration: {cell!r}", line=line)
    hours, minutes, value, suffix = m.groups()
    seconds = int(hours or 0) * 3600.0 + int(minutes or 0) * 60.0
    if value is not None:
        seconds += float(value) * _SUFFIX_S[suffix]
    return seconds


def latency_us(cells: str, bare_us: bool, line: int) -> list[tuple[str, float]]:
    """(stat, microseconds) of a ``[ min=... avg=... max=... ]`` cell."""
    items = _LAT_ITEM.findall(cells)
    if not cells.startswith("[") or not items:
        raise ParseError(TOOL, f"latency cell not understood: {cells!r}", line=line)
    out = []
    for name, value, unit in items:
        if not unit and not bare_us:
            raise ParseError(TOOL, f"latency without a unit: {cells!r}", line=line)
        factor = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[unit or "us"]
        out.append((_LAT_STAT[name], cell_number(TOOL, value, line) * factor))
    return out
