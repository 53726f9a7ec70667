"""Shared pieces of the fio parsers: job-option dims and record construction."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement, Scalar

TOOL = "fio"
DIRECTIONS = ("read", "write", "trim", "sync")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# option name (and fio's aliases for it) -> dim name
_OPTION_ALIASES: dict[str, tuple[str, ...]] = {
    "rw": ("rw", "readwrite"),
    "bs": ("bs", "blocksize"),
    "iodepth": ("iodepth",),
    "ioengine": ("ioengine",),
    "numjobs": ("numjobs",),
    "direct": ("direct",),
}


def _int_option(name: str, raw: str, line: int | None) -> int:
    try:
        return int(raw.strip(), 10)
    except ValueError:
        raise ParseError(TOOL, f"job option {name}={raw!r} is not an integer", line=line) from None


def _bool_option(name: str, raw: str, line: int | None) -> bool:
    low = raw.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ParseError(TOOL, f"job option {name}={raw!r} is not a boolean", line=line)


def option_dims(options: Mapping[str, Any], line: int | None = None) -> dict[str, Scalar]:
    """The dims taken from a job's options (``rw``, ``bs``, ``iodepth`` ...), when present."""
    dims: dict[str, Scalar] = {}
    for dim, names in _OPTION_ALIASES.items():
        raw = next((options[n] for n in names if n in options), None)
        if raw is None:
            continue
        text = str(raw)
        if dim in ("iodepth", "numjobs"):
            dims[dim] = _int_option(dim, text, line)
        elif dim == "direct":
            dims[dim] = _bool_option(dim, text, line)
        else:
            dims[dim] = text
    return dims


def number(value: Any, what: str, line: int | None) -> float:
    """A finite number from a decoded document; anything else is a ParseError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(TOOL, f"{what} is not a number: {value!r}", line=line)
    f = float(value)
    if not math.isfinite(f):
        raise ParseError(TOOL, f"{what} is not finite: {value!r}", line=line)
    return f


def measurement(metric: str, value: float, unit: str, dims: Mapping[str, Scalar]) -> Measurement:
    return Measurement(tool=TOOL, metric=metric, value=value, unit=unit, dims=FrozenDims(dims))
