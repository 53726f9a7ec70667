"""fio ``--output-format=terse`` (``--terse-version=3``, the default; and 4).

One semicolon-separated line per job: terse version, fio version, job name, group id,
error; then per direction (read, write; version 4 adds trim) 41 fields: io (KiB),
bw (KiB/s), iops, runtime (ms), slat min/max/mean/stdev (usec), clat min/max/mean/stdev
(usec), 20 clat percentile fields ``P%=VALUE`` (usec; unused slots are ``0%=0``), lat
min/max/mean/stdev (usec), bw min/max/aggregate %/mean/stdev. CPU, IO depth and disk
fields follow and are not read. Terse output carries no job options, so only the dims
``job`` and ``direction`` are emitted; latencies are in ``us``.
"""

from __future__ import annotations

import math
import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import Measurement
from aibench.parsers._fio_common import TOOL, frozen, percentile_table, with_percentile

_BLOCK = 41
_LINE = re.compile(r"^[34];fio-")


def is_terse(text: str) -> bool:
    return any(_LINE.match(line) for line in text.splitlines()[:50])


def _f(fields: list[str], i: int, no: int) -> float:
    """Field ``i`` (1-based, as fio's documentation counts)."""
    try:
        v = float(fields[i - 1])
    except (IndexError, ValueError):
        got = fields[i - 1] if i - 1 < len(fields) else "nothing"
        raise ParseError(TOOL, f"terse field {i} is not a number: {got!r}", line=no) from None
    if not math.isfinite(v):
        raise ParseError(TOOL, f"terse field {i} is not finite", line=no)
    return v


# The number fields of a direction, as offsets from its first field: io, bw, iops, runtime,
# slat min/max/mean/stdev, clat min/max/mean/stdev, then (after the 20 percentile fields)
# lat min/max/mean/stdev.
_REST = (*range(4, 12), *range(32, 36))
_NUMBERS = (0, 1, 2, 3, *_REST)


def _finite(fields: list[str], start: int) -> list[float] | None:
    """The direction's number fields in one go, or None when one of them is not a finite
    number (the caller then reads them one by one with _f, which says which)."""
    try:
        values = [float(fields[start - 1 + k]) for k in _NUMBERS]
    except (IndexError, ValueError):
        return None
    return values if all(map(math.isfinite, values)) else None


def _direction(fields: list[str], start: int, base: dict[str, str], no: int) -> list[Measurement]:
    # start: the 1-based index of the direction's first field (io KiB)
    fast = _finite(fields, start)
    if fast is not None:
        io, bw, iops, runtime = fast[:4]
    else:
        io, bw, iops, runtime = (_f(fields, start + k, no) for k in range(4))
    if io == 0 and bw == 0 and iops == 0 and runtime == 0:
        return []
    dims = frozen(base)
    out = [
        Measurement(TOOL, "bw", bw, "KiB/s", dims),
        Measurement(TOOL, "iops", iops, "IOPS", dims),
        Measurement(TOOL, "io_bytes", io * 1024, "B", dims),
        Measurement(TOOL, "runtime", runtime, "ms", dims),
    ]
    rest = fast[4:] if fast is not None else [_f(fields, start + k, no) for k in _REST]
    slat, clat, lat = rest[0:4], rest[4:8], rest[8:12]
    out.append(Measurement(TOOL, "lat_mean", lat[2], "us", dims))
    out.append(Measurement(TOOL, "lat_stdev", lat[3], "us", dims))
    out.append(Measurement(TOOL, "clat_mean", clat[2], "us", dims))
    if any(slat[:3]):
        out.append(Measurement(TOOL, "slat_mean", slat[2], "us", dims))
    pct = percentile_table(dims)
    first = start + 11  # 0-based index of the first percentile field
    for i, raw in enumerate(fields[first : first + 20], first + 1):
        p_text, sep, v_text = raw.partition("%=")
        try:
            p, v = float(p_text), float(v_text)
        except ValueError:
            raise ParseError(
                TOOL, f"terse field {i} is not a percentile: {raw!r}", line=no
            ) from None
        if not sep or p - p != 0.0 or v - v != 0.0:  # no "%=", or not finite
            raise ParseError(TOOL, f"terse field {i} is not a percentile: {raw!r}", line=no)
        if p > 0:
            pdims = pct.get(p) or with_percentile(dims, p, pct)  # never empty: it has percentile
            out.append(Measurement(TOOL, "clat_percentile", v, "us", pdims))
    return out


def parse_terse(text: str) -> list[Measurement]:
    records: list[Measurement] = []
    errors: list[str] = []
    failed: list[tuple[int, str]] = []
    for no, line in enumerate(text.splitlines(), 1):
        if not _LINE.match(line):
            if line.startswith("fio: "):
                errors.append(line.strip())
            continue
        fields = line.rstrip("\n").split(";")
        version = int(fields[0])
        dirs = ("read", "write") if version == 3 else ("read", "write", "trim")
        need = 5 + _BLOCK * len(dirs)
        if len(fields) < need:
            raise ParseError(
                TOOL, f"terse v{version} line has {len(fields)} fields, needs {need}", line=no
            )
        name = fields[2]
        err = _f(fields, 5, no)
        for k, d in enumerate(dirs):
            records.extend(_direction(fields, 6 + _BLOCK * k, {"job": name, "direction": d}, no))
        if err != 0:
            failed.append((no, f"job {name!r} error={int(err)}"))
    if not records and not failed:
        raise ParseError(TOOL, "no terse job line (3;fio-...) in the output")
    if failed:
        raise ToolFailure(
            TOOL,
            "; ".join(errors + [m for _, m in failed]),
            line=failed[0][0],
            partial=list(records),
        )
    return records
