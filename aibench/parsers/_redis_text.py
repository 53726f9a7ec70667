"""redis-benchmark's text reports (everything but ``--csv``), for the redis-benchmark parser.

* 6.2+ default: per test ``====== SET ======``, then ``Summary:``, ``throughput summary: N
  requests per second`` and a ``latency summary (msec):`` table (``avg min p50 p95 p99
  max`` over one row of numbers). On a terminal-less run the progress lines (``SET:
  rps=...``) end in carriage returns, so the ``======`` line shares a physical line with
  them: lines are split on ``\\r`` too.
* before 6.2: the same ``======`` head, a cumulative ``99.90% <= 1 milliseconds`` list and
  ``N requests per second`` alone on its line.
* ``-q`` (quiet): ``SET: N requests per second`` and, from 6.2, ``, p50=X msec``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from aibench.errors import ParseError
from aibench.model import FrozenDims, Measurement

TOOL = "redis-benchmark"
_LAT_NAMES = {"avg": "mean", "min": "min", "p50": "p50", "p95": "p95", "p99": "p99", "max": "max"}
_HEAD = re.compile(r"====== (.+?) ======\s*$")
_THROUGHPUT = re.compile(r"^throughput summary: (\S+) requests per second$")
_OLD_RATE = re.compile(r"^(\S+) requests per second$")
_QUIET = re.compile(
    r"^([A-Z][A-Z0-9_]*(?: \([^)]*\))?): (\S+) requests per second(?:, p50=(\S+) msec)?$"
)


@dataclass
class _State:
    test: str = ""
    lat_header: list[str] | None = None
    expect_lat_header: bool = False
    records: list[Measurement] = field(default_factory=list)


def is_text_report(text: str) -> bool:
    return "requests per second" in text or "====== " in text


def parse_text(text: str) -> list[Measurement]:
    st = _State()
    for n, raw in enumerate(text.splitlines(), 1):
        _line(st, raw.strip(), n)
    return st.records


def _line(st: _State, s: str, n: int) -> None:
    if m := _HEAD.search(s):
        st.test, st.lat_header, st.expect_lat_header = m.group(1).strip().lower(), None, False
    elif s == "latency summary (msec):":
        st.expect_lat_header = True
    elif st.expect_lat_header:
        st.lat_header, st.expect_lat_header = s.split(), False
        if not st.lat_header or any(c not in _LAT_NAMES for c in st.lat_header):
            raise ParseError(TOOL, f"latency summary header not understood: {s!r}", line=n)
    elif st.lat_header is not None:
        st.records += _latency_row(st, s.split(), n)
        st.lat_header = None
    elif m := _THROUGHPUT.match(s) or (_OLD_RATE.match(s) if st.test else None):
        st.records.append(_rate(st.test, m.group(1), n))
    elif m := _QUIET.match(s):
        op = m.group(1).lower()
        st.records.append(_rate(op, m.group(2), n))
        if m.group(3):
            dims = FrozenDims({"op": op, "stat": "p50"})
            st.records.append(Measurement(TOOL, "latency", _number(m.group(3), n), "ms", dims))


def _number(cell: str, n: int) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise ParseError(TOOL, f"not a number: {cell!r}", line=n) from None
    if not math.isfinite(value):
        raise ParseError(TOOL, f"not a finite number: {cell!r}", line=n)
    return value


def _rate(op: str, cell: str, n: int) -> Measurement:
    if not op:
        raise ParseError(TOOL, "a throughput line before any '====== TEST ======' head", line=n)
    return Measurement(TOOL, "ops_rate", _number(cell, n), "ops/s", FrozenDims({"op": op}))


def _latency_row(st: _State, cells: list[str], n: int) -> list[Measurement]:
    header = st.lat_header or []
    if len(cells) != len(header):
        raise ParseError(TOOL, f"{len(cells)} latency cells, the header has {len(header)}", n)
    return [
        Measurement(
            TOOL, "latency", _number(c, n), "ms", FrozenDims({"op": st.test, "stat": _LAT_NAMES[h]})
        )
        for h, c in zip(header, cells, strict=True)
    ]
