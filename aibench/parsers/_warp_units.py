"""warp's printed quantities: ``26.1ms``, ``1.788s``, ``283µs`` and ``412.73 MiB/s``."""

from __future__ import annotations

import math
import re

from aibench.errors import ParseError

TOOL = "warp"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ns|µs|us|ms|s|m)$")
_TO_MS = {"ns": 1e-6, "µs": 1e-3, "us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}
_TO_MIB = {"B": 1 / 1024**2, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0, "TiB": 1024.0**2}
_TO_MIB |= {"KB": 1e3 / 1024**2, "MB": 1e6 / 1024**2, "GB": 1e9 / 1024**2}


def duration_ms(cell: str | None, line: int) -> float:
    m = _DURATION.match(cell or "")
    if not m:
        raise ParseError(TOOL, f"not a duration: {cell!r}", line=line)
    return _finite(float(m.group(1)) * _TO_MS[m.group(2)], cell or "", line)


def rate_mib(value: str, unit: str, line: int) -> float:
    if unit not in _TO_MIB:
        raise ParseError(TOOL, f"unknown rate unit {unit!r}/s", line=line)
    return _finite(float(value) * _TO_MIB[unit], value, line)


def _finite(value: float, cell: str, line: int) -> float:
    if not math.isfinite(value):
        raise ParseError(TOOL, f"not a finite number: {cell!r}", line=line)
    return value
