"""Shared pieces of the fio parsers: job-option dims and record construction."""

from __future__ import annotations

import math
import re
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
        elif dim == "bs":
            dims[dim] = normalize_bs(text)
        else:
            dims[dim] = text
    return dims


_SIZE_SUFFIX = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024**2, "mb": 1024**2}
_SIZE_SUFFIX |= {"mib": 1024**2, "g": 1024**3, "gb": 1024**3, "gib": 1024**3}
_SIZE = re.compile(r"^(\d+)([a-z]*)$")


def _bs_one(part: str) -> str:
    m = _SIZE.match(part)
    if not m or m[2] not in _SIZE_SUFFIX:
        return part
    n = int(m[1]) * _SIZE_SUFFIX[m[2]]
    for suffix, f in (("g", 1024**3), ("m", 1024**2), ("k", 1024)):
        if n % f == 0:
            return f"{n // f}{suffix}"
    return str(n)


def normalize_bs(text: str) -> str:
    """A block size in fio's short lowercase spelling: 4096, 4K, 4096B -> "4k".

    Ranges (``4k-64k``) and per-direction lists (``4k,8k``) keep their shape; a range
    whose ends are equal (``4096B-4096B``, as the text output prints it) is one size.
    """
    low = text.strip().lower()
    lists = []
    for item in low.split(","):
        ends = [_bs_one(e.strip()) for e in item.split("-")]
        if len(ends) == 2 and ends[0] == ends[1]:
            ends = ends[:1]
        lists.append("-".join(ends))
    return ",".join(lists)


def number(value: Any, what: str, line: int | None) -> float:
    """A finite number from a decoded document; anything else is a ParseError."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ParseError(TOOL, f"{what} is not a number: {value!r}", line=line)
    f = float(value)
    if not math.isfinite(f):
        raise ParseError(TOOL, f"{what} is not finite: {value!r}", line=line)
    return f


def percentile_key(key: str, what: str, line: int | None, tool: str = TOOL) -> float:
    """A ``clat_ns.percentile`` key ("99.000000") as its number; anything else is a
    ParseError naming it."""
    try:
        return float(key)
    except ValueError:
        msg = f"{what}.percentile key {key!r} is not a number"
        raise ParseError(tool, msg, line=line) from None


_DIMS_CACHE: dict[tuple[tuple[str, type, Scalar], ...], FrozenDims] = {}


def frozen(dims: Mapping[str, Scalar]) -> FrozenDims:
    """A FrozenDims for ``dims``, shared between the many records of one job and
    direction (a memo without I/O: building FrozenDims is most of a record's cost).
    The parsers call it once per job and direction, not once per record."""
    if isinstance(dims, FrozenDims):
        return dims
    key = tuple((k, type(v), v) for k, v in dims.items())
    found = _DIMS_CACHE.get(key)
    if found is None:
        if len(_DIMS_CACHE) > 4096:
            _DIMS_CACHE.clear()
        found = _DIMS_CACHE[key] = FrozenDims(dims)
    return found


# id of a base FrozenDims -> (that base, its percentile table). The entry holds the base,
# so while it is here no other object can have its id.
_PCT_TABLES: dict[int, tuple[FrozenDims, dict[float, FrozenDims]]] = {}


def percentile_table(base: FrozenDims) -> dict[float, FrozenDims]:
    """The memo of ``base`` plus the dim ``percentile``, by percentile: fill it with
    :func:`with_percentile`. Jobs of one name (``numjobs``) share their table."""
    found = _PCT_TABLES.get(id(base))
    if found is not None and found[0] is base:
        return found[1]
    if len(_PCT_TABLES) > 4096:
        _PCT_TABLES.clear()
    table: dict[float, FrozenDims] = {}
    _PCT_TABLES[id(base)] = (base, table)
    return table


def with_percentile(base: FrozenDims, p: float, table: dict[float, FrozenDims]) -> FrozenDims:
    """``base`` plus the dim ``percentile``, from ``table`` (``percentile_table(base)``)."""
    found = table.get(p)
    if found is None:
        found = table[p] = FrozenDims({**base.to_dict(), "percentile": p})
    return found


def measurement(metric: str, value: float, unit: str, dims: Mapping[str, Scalar]) -> Measurement:
    return Measurement(tool=TOOL, metric=metric, value=value, unit=unit, dims=frozen(dims))
