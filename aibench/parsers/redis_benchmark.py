"""redis-benchmark: the ``--csv`` output of ``redis-benchmark -t set,get ... --csv``.

Redis 7 (tested with redis-benchmark 7.0.15, Debian 12, captured here) prints a header
``"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms",
"p99_latency_ms","max_latency_ms"`` and one row per test (``"SET","5878.90",...``);
before 6.2 it printed rows of two cells (test, rps) and no header: both are read.
``--precision N`` sets the latency decimals.

Emitted per test (dim ``op``: the test's name in lower case, ``set``, ``get``, ``lpush``
...): ``ops_rate`` (ops/s, the ``rps`` column) and ``latency`` (ms, dim ``stat`` = mean |
min | p50 | p95 | p99 | max) where the header names them.

Failures: ``Error: ...`` (``Error: Server closed the connection`` when the server went
away mid-run) or ``Could not connect to Redis at ...`` is a ToolFailure with the rows read
before it as ``partial``; a header with no row, or no CSV at all, is a ToolFailure too.
(A server that refuses every connection makes redis-benchmark retry for ever: the step's
timeout ends it.)
"""

from __future__ import annotations

import csv
import io
import re

from aibench.errors import ParseError, ToolFailure
from aibench.model import FrozenDims, Measurement
from aibench.parsers import Parser

TOOL = "redis-benchmark"
UNITS = {"ops_rate": "ops/s", "latency": "ms"}
_LATENCY = {
    "avg_latency_ms": "mean",
    "min_latency_ms": "min",
    "p50_latency_ms": "p50",
    "p95_latency_ms": "p95",
    "p99_latency_ms": "p99",
    "max_latency_ms": "max",
}
_PROBLEM = re.compile(r"^(Error: .*|Could not connect to Redis at .*|.*Connection refused.*)$")


def parse(text: str) -> list[Measurement]:
    out: list[Measurement] = []
    header: list[str] | None = None
    problem = ""
    for n, line in enumerate(text.splitlines(), 1):
        if _PROBLEM.match(line.strip()):
            problem = problem or line.strip()
            continue
        if not line.startswith('"'):
            continue
        cells = next(csv.reader(io.StringIO(line)))
        if cells and cells[0] == "test":
            header = cells
            continue
        out += _row(cells, header, n)
    if problem:
        raise ToolFailure(TOOL, problem, partial=list(out))
    if not out:
        raise ToolFailure(TOOL, "no result row: " + (text.strip()[-200:] or "no output"))
    return out


def _row(cells: list[str], header: list[str] | None, n: int) -> list[Measurement]:
    names = header or ["test", "rps"]
    if len(cells) != len(names):
        raise ParseError(TOOL, f"line {n}: {len(cells)} cells, the header has {len(names)}")
    op = cells[0].strip().lower()
    if not op:
        raise ParseError(TOOL, f"line {n}: a row without a test name")
    out = []
    for name, cell in zip(names[1:], cells[1:], strict=True):
        try:
            value = float(cell)
        except ValueError:
            raise ParseError(TOOL, f"line {n}: {name} is not a number: {cell!r}") from None
        if name == "rps":
            out.append(Measurement(TOOL, "ops_rate", value, "ops/s", FrozenDims({"op": op})))
        elif name in _LATENCY:
            dims = FrozenDims({"op": op, "stat": _LATENCY[name]})
            out.append(Measurement(TOOL, "latency", value, "ms", dims))
    return out


def detect(text: str) -> bool:
    head = text[:2000]
    return '"test","rps"' in head or "Could not connect to Redis at" in head


PARSER = Parser(TOOL, parse, "redis-benchmark --csv: ops/s and latency per test", detect)
